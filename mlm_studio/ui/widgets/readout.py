"""Values as the plots' hover readout says them: plain numbers where they read well, a share as a percentage."""

from __future__ import annotations

import math

import numpy as np

from mlm_studio.core.durations import format_duration


def reading(value: float, unit: str) -> str:
    """A value in its unit: a share as a percentage, others followed by their unit; "—" where it is undefined
    (ELECTRA's precision before any token is flagged)."""
    if not math.isfinite(value):
        return "—"
    if unit == "share":
        return f"{value:.1%}"
    return f"{number(value)} {unit}" if unit else number(value)


def number(value: float) -> str:
    """Four significant digits without an exponent (0.001, 2.346, 10,050); an exponent only below 0.0001."""
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 1e-4:
        return np.format_float_positional(value, precision=4, fractional=False, trim="-")
    mantissa, exponent = f"{value:.2e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def at(axis: str, x: float) -> str:
    """Where on the x-axis a reading was taken: "step 120", "491,520 tokens", "4m07s"."""
    if axis == "time":
        return format_duration(x)
    return f"{number(x)} tokens" if axis == "tokens" else f"step {number(x)}"
