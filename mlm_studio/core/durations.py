"""Durations for people: written (4m07s), read ("1h30m"), and the time a run has left."""

from __future__ import annotations

import math
import re

from mlm_studio.core.errors import UserError
from mlm_studio.core.shown import shown


def format_duration(seconds: float) -> str:
    """A short duration for people: 4m07s, 1h05m."""
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def parse_duration(text: str) -> float:
    """Seconds from "90", "90s", "6m", "1h30m", "4m07s" or "1.5h"; a bare number after a unit counts in the
    next smaller one, as people write it ("1h30" is 90 minutes, "4m07" 247 s). Raises ValueError naming the
    text."""
    cleaned = text.strip().lower().replace(" ", "")
    number = r"(\d+(?:\.\d+)?)"
    parts = re.fullmatch(rf"(?:{number}h)?(?:{number}m)?(?:{number}(s?))?", cleaned)
    if not cleaned or parts is None:
        raise UserError(f"{shown(text)} is not a duration; write it like 90s, 6m, 1h30m")
    hours, minutes, last, unit = parts.groups()
    if last is not None and not unit and hours is not None and minutes is None:
        minutes, last = last, None
    seconds = sum(float(value) * scale for value, scale in ((hours, 3600), (minutes, 60), (last, 1)) if value)
    if not math.isfinite(seconds):  # more digits than a float holds: said by their count, not as "inf"
        digits = max(len(value.partition(".")[0]) for value in (hours, minutes, last) if value)
        raise UserError(f"a number of {digits:,} digits is more than any setting takes")
    return seconds


class Eta:
    """Time left in a run: what remains of its budget, or the steps left at the pace seen since it started. Both
    read the run's own training time, so a pause neither spends the budget nor slows the pace."""

    def __init__(self, first_step: int, total_steps: int, time_budget: float, first_elapsed: float = 0.0) -> None:
        """`first_elapsed`: the training time the run had at `first_step` (a resumed run's)."""
        self.first_step, self.total_steps, self.time_budget = first_step, total_steps, time_budget
        self.first_elapsed = first_elapsed

    def seconds_left(self, step: int, elapsed: float) -> float:
        if self.time_budget > 0:
            return max(0.0, self.time_budget - elapsed)
        done = max(step - self.first_step, 1)
        return (elapsed - self.first_elapsed) / done * max(self.total_steps - step, 0)
