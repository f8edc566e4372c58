"""How many compute threads a CPU run uses: the cores it may run on, less those other processes keep busy.

PyTorch's CPU operations split each step across a fixed team of threads that wait for each other; when another
process holds one of the cores, the team's thread on it runs at half speed and every operation waits for it. A
team no larger than the idle cores keeps its share of the machine. The decision is re-made as the load changes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch

RECHECK_SECONDS = 2.0  # how often the load is sampled during a run (reading /proc/stat takes some 75 µs)
FIRST_SAMPLE_SECONDS = 0.1  # the sample the start decides from


def compute_threads(ceiling: int, busy_elsewhere: float) -> int:
    """Threads for a run allowed `ceiling` of them when other processes keep `busy_elsewhere` cores busy (measured
    on the cores the run may use): the cores left idle, rounded, at least one."""
    return max(1, min(ceiling, round(ceiling - busy_elsewhere)))


def threads_pinned() -> bool:
    """Whether the user fixed the thread count (OMP_NUM_THREADS; torchrun sets it for its processes)."""
    return "OMP_NUM_THREADS" in os.environ


def allowed_cores() -> set[int]:
    """The cores this process may run on (every core where the system does not say: not Linux)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return affinity(0) if affinity is not None else set(range(os.cpu_count() or 1))


@cache
def thread_ceiling() -> int:
    """The most threads a run uses: PyTorch's own choice when this process first asks (its physical cores, or
    a pinned count), no more than the cores this process may run on."""
    return max(1, min(torch.get_num_threads(), len(allowed_cores())))


@dataclass(frozen=True)
class CpuSample:
    """The busy time of the cores this process may use, and its own CPU time, at one moment (seconds)."""

    at: float
    busy: float
    own: float


def sample_cpu(stat: str = "/proc/stat") -> CpuSample | None:
    """The cores' busy time now, from the kernel's counters (None where there are none: not Linux)."""
    try:
        with open(stat, encoding="ascii") as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    allowed = {f"cpu{index}" for index in allowed_cores()}
    ticks = os.sysconf("SC_CLK_TCK")
    busy = 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in allowed:  # user nice system idle iowait irq softirq steal …
            values = [int(v) for v in fields[1:9]]
            busy += sum(values) - values[3] - values[4]
    return CpuSample(time.monotonic(), busy / ticks, time.process_time())


def busy_elsewhere(before: CpuSample, after: CpuSample) -> float:
    """Cores kept busy by other processes between two samples: the cores' busy time less this process's own."""
    seconds = after.at - before.at
    if seconds <= 0:
        return 0.0
    return max(0.0, ((after.busy - before.busy) - (after.own - before.own)) / seconds)


class ThreadGovernor:
    """Sets PyTorch's thread count (for the thread that trains) from the load: at the start from a short sample,
    then every `recheck` seconds. Where `sample` finds no counters it leaves the count as it is."""

    def __init__(
        self, ceiling: int | None = None, sample: Callable[[], CpuSample | None] = sample_cpu, recheck=RECHECK_SECONDS
    ) -> None:
        self.ceiling = ceiling or thread_ceiling()
        self.sample, self.recheck = sample, recheck
        self.threads = torch.get_num_threads()
        self.last = sample()
        if self.last is not None:
            time.sleep(FIRST_SAMPLE_SECONDS)
            self._decide()

    def check(self) -> int:
        """Re-decide when `recheck` seconds have passed since the last sample; returns the threads in use."""
        if self.last is not None and time.monotonic() - self.last.at >= self.recheck:
            self._decide()
        return self.threads

    def _decide(self) -> None:
        now = self.sample()
        if now is None:
            return
        threads = compute_threads(self.ceiling, busy_elsewhere(self.last, now))
        self.last = now
        if threads != self.threads:
            torch.set_num_threads(threads)
            self.threads = threads


def governor_for(device) -> ThreadGovernor | None:
    """The governor a run on `device` keeps its threads by: a CPU run's, unless the user pinned the count (as
    torchrun does); None for a GPU run."""
    return ThreadGovernor() if device.type == "cpu" and not threads_pinned() else None
