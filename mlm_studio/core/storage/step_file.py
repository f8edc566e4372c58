"""Every step's loss and gradient norm, kept cheaply beside metrics.jsonl: `steps.tsv`, one tab-separated line a
step (`step`, `loss`, `grad_norm`; `nan` where a step had none), under a header line.

The training loop appends a log window's steps at a time and before each checkpoint (`runs/step_sums.StepLog`),
whole lines or none. A resume
drops the lines past its checkpoint, as it drops metrics.jsonl's records. The reader checks every line: a line cut
short by a crash at the end is left out, and any other damage is said in one sentence. The window follows a
training run's file as it grows (`StepTail`), reading only the lines appended since it last looked.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlm_studio.core.errors import UserError
from mlm_studio.core.storage.files import append_whole, atomic_write_text

STEPS_FILE = "steps.tsv"
HEADER = "step\tloss\tgrad_norm\n"


class StepFileDamaged(UserError):
    """A per-step file that cannot be read as one: its sentence names the run, the line and what is wrong."""


@dataclass(frozen=True)
class StepLosses:
    """A run's steps in order, each with its loss and gradient norm (NaN where the step had none)."""

    steps: np.ndarray  # (S,) int64, increasing
    loss: np.ndarray  # (S,) float64
    grad_norm: np.ndarray  # (S,) float64

    def __len__(self) -> int:
        return len(self.steps)

    def at(self, step: int) -> tuple[float, float] | None:
        """(loss, gradient norm) of `step`, None when the file has no such step."""
        where = int(np.searchsorted(self.steps, step))
        if where < len(self.steps) and self.steps[where] == step:
            return float(self.loss[where]), float(self.grad_norm[where])
        return None


def step_lines(entries: list[tuple[int, float, float]]) -> str:
    """(step, loss, gradient norm) entries as lines of the file."""
    return "".join(f"{step}\t{_number(loss)}\t{_number(norm)}\n" for step, loss, norm in entries)


def _number(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else "nan"


def append_steps(folder: Path, entries: list[tuple[int, float, float]]) -> None:
    """Append `entries` to the run's file (begun with its header), whole lines or none (OSError)."""
    path = folder / STEPS_FILE
    fresh = not path.exists() or path.stat().st_size == 0
    append_whole(path, (HEADER if fresh else "") + step_lines(entries))


def truncate_steps_after(folder: Path, step: int) -> None:
    """Drop the lines of steps past `step`; a damaged file is left as it is (its reader says so)."""
    path = folder / STEPS_FILE
    if not path.exists():
        return
    try:
        kept = read_steps(folder, folder.name)
    except StepFileDamaged:
        return
    entries = [(int(s), float(x), float(g)) for s, x, g in zip(kept.steps, kept.loss, kept.grad_norm, strict=True)]
    atomic_write_text(path, HEADER + step_lines([e for e in entries if e[0] <= step]))


def read_steps(folder: Path, run_name: str) -> StepLosses:
    """The run's per-step file read and checked; empty when it has none (a run from before it, or no step yet)."""
    return StepTail(folder, run_name).read()


class StepTail:
    """A run's per-step file read as it grows: each `read` parses only the whole lines written since the last one,
    checked as `read_steps` checks them. A file made again (a resume cuts it back) is read from its start, and
    `begun_again` says so."""

    def __init__(self, folder: Path, run_name: str) -> None:
        self.path, self.run_name = folder / STEPS_FILE, run_name
        self.offset = 0  # the bytes read so far: whole lines
        self.line = 1  # the number of the next line
        self.last_step = -1
        self.begun_again = False
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file read

    def read(self) -> StepLosses:
        """The steps written since the last call (all of them the first time, or when the file was made again)."""
        try:
            with open(self.path, "rb") as file:
                status = os.fstat(file.fileno())
                identity = (status.st_dev, status.st_ino)
                self.begun_again = self._identity is not None and (
                    identity != self._identity or status.st_size < self.offset
                )
                if self.begun_again:
                    self.offset, self.line, self.last_step = 0, 1, -1
                self._identity = identity
                file.seek(self.offset)
                data = file.read()
        except FileNotFoundError:
            self.begun_again = self.offset > 0
            self.offset, self.line, self.last_step, self._identity = 0, 1, -1, None
            return _no_steps()
        except OSError as exc:
            raise StepFileDamaged(f"run {self.run_name}: {STEPS_FILE} cannot be read ({exc})") from exc
        whole = data[: data.rfind(b"\n") + 1]  # a line cut short (a crash while writing it, or being written) waits
        try:
            lines = whole.decode("utf-8").split("\n")[:-1]
        except UnicodeDecodeError as exc:
            raise StepFileDamaged(f"run {self.run_name}: {STEPS_FILE} cannot be read ({exc})") from exc
        steps = self._parsed_lines(lines)
        self.offset += len(whole)
        return steps

    def _parsed_lines(self, lines: list[str]) -> StepLosses:
        if lines and self.line == 1:
            if lines[0] + "\n" != HEADER:
                raise StepFileDamaged(
                    f"run {self.run_name}: {STEPS_FILE} is damaged: its first line is not the header "
                    f"{HEADER.strip()!r}; move it aside and the run's next steps begin a new one"
                )
            lines = lines[1:]
            self.line = 2
        steps, loss, norm = [], [], []
        for number, line in enumerate(lines, start=self.line):
            step, values = _parsed(line)
            if step is None or step <= self.last_step:
                after = f"step {step} after step {self.last_step}"
                why = "not a step, a loss and a gradient norm" if step is None else after
                raise StepFileDamaged(
                    f"run {self.run_name}: {STEPS_FILE} is damaged at line {number} ({why}); move it aside and the "
                    "run's next steps begin a new one"
                )
            steps.append(step)
            loss.append(values[0])
            norm.append(values[1])
            self.last_step = step
        self.line += len(lines)
        return StepLosses(np.array(steps, np.int64), np.array(loss), np.array(norm)) if steps else _no_steps()


def _no_steps() -> StepLosses:
    return StepLosses(np.zeros(0, np.int64), np.zeros(0), np.zeros(0))


def _parsed(line: str) -> tuple[int | None, tuple[float, float]]:
    fields = line.split("\t")
    try:
        if len(fields) != 3 or not fields[0].isdigit():
            raise ValueError(line)
        return int(fields[0]), (float(fields[1]), float(fields[2]))
    except ValueError:
        return None, (math.nan, math.nan)
