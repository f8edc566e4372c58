"""Loss spikes: the steps whose loss stands out from the steps just before them.

A step is a spike when its loss is above the median of the `WINDOW` finite losses before it by more than `K`
times their spread, the median absolute deviation scaled by 1.4826 (the standard deviation of normal noise),
floored at 1% of the median so that a flat stretch does not make every wobble one. A step whose loss is not a
finite number is one too. The first `MIN_HISTORY` steps, with too little before them to judge, never are.
"""

from __future__ import annotations

import numpy as np

from mlm_studio.core.storage.step_file import StepLosses

WINDOW = 50
K = 5.0
MIN_HISTORY = 10
NORMAL_MAD = 1.4826
FLOOR = 0.01


def spike_steps(losses: StepLosses, window: int = WINDOW, k: float = K) -> np.ndarray:
    """The steps of `losses` that are spikes, in order."""
    finite = np.isfinite(losses.loss)
    history = losses.loss[finite]
    above = np.zeros(len(history), dtype=bool)
    for index in range(MIN_HISTORY, min(window, len(history))):  # a shorter window while the run is young
        above[index] = _above(history[:index][None, :], history[index : index + 1], k)[0]
    if len(history) > window:
        before = np.lib.stride_tricks.sliding_window_view(history, window)[:-1]
        above[window:] = _above(before, history[window:], k)
    spikes = ~finite
    spikes[np.flatnonzero(finite)] = above
    return losses.steps[spikes]


def _above(before: np.ndarray, loss: np.ndarray, k: float) -> np.ndarray:
    """Whether each `loss` is above its row of `before` by more than `k` spreads."""
    median = np.median(before, axis=1)
    spread = np.maximum(NORMAL_MAD * np.median(np.abs(before - median[:, None]), axis=1), FLOOR * np.abs(median))
    return loss > median + k * spread
