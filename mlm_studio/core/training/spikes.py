"""Loss spikes: the steps whose loss stands out from the steps just before them.

A step is a spike when its loss is above the median of the `WINDOW` finite losses before it by more than `K`
times their spread, the median absolute deviation scaled by 1.4826 (the standard deviation of normal noise),
floored at 1% of the median so that a flat stretch does not make every wobble one. A step whose loss is not a
finite number is one too. The first `MIN_HISTORY` steps, with too little before them to judge, never are.

Each step is judged by the steps before it alone, so a run's spikes can be found as its steps come (`SpikeWatch`,
`LiveSpikes`): the same spikes as `spike_steps` finds in the whole run, at a cost per step that does not grow with
the run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlm_studio.core.storage.step_file import StepLosses, StepTail

WINDOW = 50
K = 5.0
MIN_HISTORY = 10
NORMAL_MAD = 1.4826
FLOOR = 0.01


def spike_steps(losses: StepLosses, window: int = WINDOW, k: float = K) -> np.ndarray:
    """The steps of `losses` that are spikes, in order."""
    return SpikeWatch(window, k).add(losses)


class SpikeWatch:
    """Judges a run's steps as they come, keeping only the last `window` finite losses between calls."""

    def __init__(self, window: int = WINDOW, k: float = K) -> None:
        self.window, self.k = window, k
        self.recent = np.zeros(0)  # the last `window` finite losses judged
        self.seen = 0  # how many finite losses were judged

    def add(self, losses: StepLosses) -> np.ndarray:
        """The spikes among `losses`, steps that follow those added before, in order."""
        finite = np.isfinite(losses.loss)
        history = np.concatenate([self.recent, losses.loss[finite]])
        first = len(self.recent)  # history[0] is the finite loss number self.seen - first of the run
        above = np.zeros(len(history) - first, dtype=bool)
        for index in range(max(first, MIN_HISTORY - self.seen + first), min(len(history), self.window)):
            above[index - first] = _above(history[None, :index], history[index : index + 1], self.k)[0]
        old = max(first, self.window)  # from here every loss has a whole window before it in `history`
        if len(history) > old:
            before = np.lib.stride_tricks.sliding_window_view(history[:-1], self.window)[old - self.window :]
            above[old - first :] = _above(before, history[old:], self.k)
        self.seen += len(history) - first
        self.recent = history[-self.window :]
        spikes = ~finite
        spikes[np.flatnonzero(finite)] = above
        return losses.steps[spikes]


class LiveSpikes:
    """A run's spikes kept up to date as its steps.tsv grows, reading only the lines written since the last look."""

    def __init__(self, folder: Path, run_name: str) -> None:
        self.tail = StepTail(folder, run_name)
        self.watch = SpikeWatch()

    def update(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """(steps, losses) of the spikes among the steps written since the last call, and whether they replace
        those found before (the file was made again: a resume cut it back); raises StepFileDamaged."""
        steps = self.tail.read()
        if self.tail.begun_again:
            self.watch = SpikeWatch()
        spikes = self.watch.add(steps)
        return spikes, steps.loss[np.searchsorted(steps.steps, spikes)], self.tail.begun_again


def _above(before: np.ndarray, loss: np.ndarray, k: float) -> np.ndarray:
    """Whether each `loss` is above its row of `before` by more than `k` spreads."""
    median = np.median(before, axis=1)
    spread = np.maximum(NORMAL_MAD * np.median(np.abs(before - median[:, None]), axis=1), FLOOR * np.abs(median))
    return loss > median + k * spread
