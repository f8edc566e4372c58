"""The learning-rate schedule: a plain function of the configuration, the step and the clock."""

from __future__ import annotations

import math

from mlm_studio.core.config.sections import TrainConfig


def learning_rate(t: TrainConfig, step: int, total_steps: int, elapsed: float, warmup_ended_at: float) -> float:
    """Linear warm-up over `t.warmup_steps`, then linear or cosine decay to zero (or constant) from the peak.

    The decay spans the steps left after warm-up or, with a time budget, the time left after warm-up:
    `warmup_ended_at` is the training time (seconds) at which warm-up ended, so the rate falls smoothly from
    the peak whichever clock the run follows.
    """
    if step < t.warmup_steps:
        return t.learning_rate * (step + 1) / t.warmup_steps
    if t.schedule == "constant":
        return t.learning_rate
    if t.time_budget > 0:
        progress = (elapsed - warmup_ended_at) / max(t.time_budget - warmup_ended_at, 1e-9)
    else:
        progress = (step - t.warmup_steps) / max(1, total_steps - t.warmup_steps)
    progress = min(1.0, max(0.0, progress))
    if t.schedule == "cosine":
        return t.learning_rate * 0.5 * (1.0 + math.cos(math.pi * progress))
    return t.learning_rate * (1.0 - progress)
