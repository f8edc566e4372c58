"""The number of compute threads a CPU run uses, from the cores it may use and the load other processes put on them."""

import os
import subprocess
import sys

import pytest
import torch

from mlm_studio.core.runs.threads import (
    CpuSample,
    ThreadGovernor,
    allowed_cores,
    busy_elsewhere,
    compute_threads,
    sample_cpu,
    thread_ceiling,
    threads_pinned,
)


@pytest.mark.parametrize(
    ("ceiling", "busy", "threads"),
    [
        (2, 0.0, 2),  # alone: every core
        (2, 0.3, 2),  # a light load elsewhere is not worth a thread
        (2, 0.67, 1),  # one busy process sharing two cores with our two threads gets two thirds of a core
        (2, 1.0, 1),
        (2, 2.0, 1),  # never fewer than one
        (8, 0.9, 7),
        (8, 2.6, 5),
        (1, 0.0, 1),
        (4, 9.0, 1),
    ],
)
def test_threads_are_the_idle_cores(ceiling, busy, threads):
    assert compute_threads(ceiling, busy) == threads


def test_the_load_elsewhere_is_the_cores_busy_time_less_our_own():
    before, after = CpuSample(at=10.0, busy=100.0, own=5.0), CpuSample(at=12.0, busy=103.6, own=6.0)
    assert busy_elsewhere(before, after) == pytest.approx(1.3)  # (3.6 - 1.0) core-seconds over 2 seconds
    assert busy_elsewhere(after, after) == 0.0
    assert busy_elsewhere(before, CpuSample(at=12.0, busy=100.5, own=6.0)) == 0.0  # never negative


def test_only_the_cores_this_process_may_use_are_counted(tmp_path):
    allowed = sorted(allowed_cores())
    ticks = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal: busy = all but idle and iowait
    lines = ["cpu  999999 0 999999 0 0 0 0 0 0 0"]
    lines += [f"cpu{index} {ticks} {ticks} {ticks} {50 * ticks} {7 * ticks} {ticks} 0 {ticks} 0 0" for index in allowed]
    lines += [f"cpu{max(allowed) + 1} {ticks * 1000} 0 0 0 0 0 0 0 0 0", "intr 12345", "ctxt 678"]
    stat = tmp_path / "stat"
    stat.write_text("\n".join(lines) + "\n")
    sample = sample_cpu(str(stat))
    assert sample.busy == pytest.approx(5.0 * len(allowed))
    assert sample_cpu(str(tmp_path / "missing")) is None


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the kernel's CPU counters are Linux's")
def test_a_second_process_busy_on_our_cores_is_seen():
    burn = "import time\nwhile time.process_time() < 0.5: pass"
    before = sample_cpu()
    subprocess.run([sys.executable, "-c", burn], check=True, timeout=60)
    after = sample_cpu()
    # what the child burned, at least: other processes only add to it
    assert busy_elsewhere(before, after) * (after.at - before.at) >= 0.45


def scripted(samples):
    """A sampler that returns `samples` one after the other."""
    samples = iter(samples)
    return lambda: next(samples)


def test_the_governor_follows_the_load_as_it_changes(torch_threads):
    load = [0.0, 0.1, 1.0, 1.2, 0.2]  # cores busy elsewhere in each second; then the counters vanish
    busy = [sum(load[:i]) for i in range(len(load) + 1)]
    samples = [CpuSample(at=float(i), busy=b, own=0.0) for i, b in enumerate(busy)] + [None]
    governor = ThreadGovernor(ceiling=2, sample=scripted(samples), recheck=0.0)
    assert governor.threads == 2 == torch.get_num_threads()  # decided at the start: alone
    assert governor.check() == 2
    assert governor.check() == 1 == torch.get_num_threads()  # a busy process came
    assert governor.check() == 1
    assert governor.check() == 2 == torch.get_num_threads()  # it left
    assert governor.check() == 2  # no counters: the count stays


def test_without_counters_the_thread_count_is_left_alone(torch_threads):
    torch.set_num_threads(1)
    governor = ThreadGovernor(ceiling=2, sample=lambda: None, recheck=0.0)
    assert governor.check() == 1 == torch.get_num_threads()


def test_a_thread_count_the_user_set_is_pinned(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads_pinned()
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert not threads_pinned()


def test_a_cpu_run_re_decides_its_threads_at_every_step_unless_they_are_pinned(
    tmp_path, small_corpus, small_tokenizer, monkeypatch, torch_threads
):
    from mlm_studio.core.runs import threads as threads_module
    from mlm_studio.core.training import trainer as trainer_module
    from mlm_studio.core.training.runs import start_run, training_blocks
    from tests.core.helpers import small_config

    checks = []

    class Counted(ThreadGovernor):
        def check(self) -> int:
            checks.append(super().check())
            return checks[-1]

    monkeypatch.setattr(threads_module, "ThreadGovernor", Counted)
    for pinned, name in ((False, "free"), (True, "pinned")):
        if pinned:
            monkeypatch.setenv("OMP_NUM_THREADS", "1")
        else:
            monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        run = start_run(tmp_path / name, small_config(max_steps=3, device="cpu"), small_corpus, small_tokenizer)
        list(trainer_module.Trainer(run, *training_blocks(run, small_corpus)).run())
        if not pinned:
            assert len(checks) == 3 and all(1 <= threads <= thread_ceiling() for threads in checks)
    assert len(checks) == 3  # the pinned run made no governor at all
