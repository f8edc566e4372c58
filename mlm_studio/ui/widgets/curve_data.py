"""The live plots' data: the curves the metric schema asks for, each curve's values (appended in amortised O(1),
smoothed as TensorBoard smooths, thinned for drawing) and the ranges they need."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from mlm_studio.core.metric_schema import Metric, metrics_of
from mlm_studio.core.runs.records import RECORDS, ProbeResult, StepRecord

MAX_POINTS = 4000  # per curve handed to pyqtgraph
OVERLAY_COLOURS = ("#17becf", "#bcbd22", "#7f7f7f", "#c5b0d5")  # another run's: none of its own curves' colours
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")
PROBE_RANK = metrics_of(ProbeResult)["rank"]  # a curve per probe, named by its expected word


@dataclass(frozen=True)
class Curve:
    """A series the metric schema puts in a plot, as drawn: the n-th series of a plot in the n-th colour."""

    metric: Metric
    colour: str
    symbol: str | None  # evaluations are few points: each one marked


def _schema_curves() -> dict[str, dict[str, Curve]]:
    """By record type, each plotted field's curve."""
    curves: dict[str, dict[str, Curve]] = {}
    in_plot: dict[str, int] = {}
    for kind, cls in RECORDS.items():
        for name, metric in metrics_of(cls).items():
            if metric.plot:
                index = in_plot[metric.plot] = in_plot.get(metric.plot, -1) + 1
                symbol = None if cls is StepRecord else "o"  # evaluations: few points, each marked
                curves.setdefault(kind, {})[name] = Curve(metric, COLOURS[index % len(COLOURS)], symbol)
    return curves


def _optional_plots() -> set[str]:
    """The plots only some runs have values for (ELECTRA's detection): shown once they have a curve."""
    metrics = [curve.metric for curves in CURVES.values() for curve in curves.values()]
    return {m.plot for m in metrics} - {m.plot for m in metrics if not m.optional}


def _share_plots() -> set[str]:
    """The plots all of whose curves are shares (0 to 1): their axis reads percentages."""
    metrics = [curve.metric for curves in CURVES.values() for curve in curves.values()]
    return {m.plot for m in metrics} - {m.plot for m in metrics if m.unit != "share"}


def _named_plots() -> set[str]:
    """The plots with more than one curve, whose header names them (one curve is named by its axis)."""
    plots = [curve.metric.plot for curves in CURVES.values() for curve in curves.values()]
    return {plot for plot in plots if plots.count(plot) > 1} | {PROBE_RANK.plot}


CURVES = _schema_curves()
OPTIONAL_PLOTS = _optional_plots()
SHARE_PLOTS = _share_plots()
NAMED_PLOTS = _named_plots()
SHORT_SERIES = {"training": "train", "validation": "val"}  # an overlaid run's curves in the legend: "early (val)"


def plotted(kind: str, record: dict) -> Iterator[tuple[str, Curve, str, float]]:
    """A record's values that are drawn, each with its curve's name in the record ("loss", or "probe0" for the first
    probe's rank), how it is drawn and its label."""
    for field, curve in CURVES.get(kind, {}).items():
        if record.get(field) is not None:
            yield field, curve, curve.metric.series, record[field]
    if kind == "probe":
        for index, result in enumerate(record.get("results", ())):
            curve = Curve(PROBE_RANK, COLOURS[index % len(COLOURS)], "o")
            yield f"probe{index}", curve, result["expected"], result["rank"]


class Series:
    """A growing curve: y against step, tokens seen and time, in amortised O(1) appends; its smoothing is
    extended as points arrive rather than recomputed, so a long run costs a redraw no more than a short one."""

    def __init__(self) -> None:
        self.data = np.zeros((5, 256))  # rows: step, tokens, time, value, smoothed value
        self.size = 0
        self._weight, self._smoothed, self._average = -1.0, 0, 0.0  # smoothing done so far, and its state

    def append(self, step: float, tokens: float, time: float, value: float) -> None:
        if self.size == self.data.shape[1]:
            self.data = np.concatenate([self.data, np.zeros_like(self.data)], axis=1)
        self.data[:4, self.size] = (step, tokens, time, value)
        self.size += 1

    def x(self, axis: str) -> np.ndarray:
        return self.data[("step", "tokens", "time").index(axis), : self.size]

    @property
    def y(self) -> np.ndarray:
        return self.data[3, : self.size]

    def smoothed(self, weight: float) -> np.ndarray:
        """TensorBoard's smoothing of y: an exponential moving average divided by (1 - weight^n), so the first
        points are not pulled towards zero; each value depends only on the values before it."""
        if weight <= 0:
            return self.y
        if weight != self._weight:
            self._weight, self._smoothed, self._average = weight, 0, 0.0
        average, values, out = self._average, self.data[3], self.data[4]
        for i in range(self._smoothed, self.size):
            average = average * weight + (1 - weight) * values[i]
            out[i] = average / (1 - weight ** (i + 1))
        self._smoothed, self._average = self.size, average
        return out[: self.size]


def thinned(x: np.ndarray, y: np.ndarray, limit: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most about `limit` points: each stretch of the curve keeps its lowest and highest point, in order."""
    n = len(x)
    if n <= limit:
        return x, y
    stride = -(-n // (limit // 2))
    rows = n // stride
    block = y[: rows * stride].reshape(rows, stride)
    base = np.arange(rows) * stride
    keep = np.sort(np.concatenate([base + block.argmin(1), base + block.argmax(1), np.arange(rows * stride, n)]))
    keep = np.unique(keep)
    return x[keep], y[keep]


def x_span(curves: Iterable[Series], axis: str) -> tuple[float, float] | None:
    """The x range of all `curves` (a curve's x only grows), so that plots drawn against it agree; None without
    values."""
    ends = [(series.x(axis)[0], series.x(axis)[-1]) for series in curves if series.size]
    if not ends:
        return None
    return sensible_range(float(min(low for low, _ in ends)), float(max(high for _, high in ends)))


def nearest_x(curves: Iterable[Series], x: float, axis: str) -> float | None:
    """The recorded x nearest to `x` among `curves`, if they have any."""
    xs = [series.x(axis) for series in curves if series.size]
    if not xs:
        return None
    every = np.concatenate(xs)
    return float(every[np.abs(every - x).argmin()])


def shown_plots(plots: Iterable[str], plotted: Iterable[str]) -> list[str]:
    """The `plots` laid out: all but an optional one (ELECTRA's detection) that no curve is `plotted` in."""
    drawn = set(plotted)
    return [name for name in plots if name not in OPTIONAL_PLOTS or name in drawn]


def finite(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = np.isfinite(y)
    return (x, y) if keep.all() else (x[keep], y[keep])


def one_value(values: list[np.ndarray]) -> tuple[float, float] | None:
    """A y range around the value a plot's curves all have (one point, or a flat curve); None otherwise."""
    every = np.concatenate(values) if values else np.empty(0)
    if every.size == 0 or every.min() != every.max():
        return None
    return sensible_range(float(every[0]), float(every[0]))


def sensible_range(low: float, high: float) -> tuple[float, float]:
    """`low` to `high`, or where they are one value (a single point), a range around it that reads: from 0 to a
    quarter past it for a positive x, a tenth either side of any other value."""
    if high - low > 1e-12 * max(abs(low), abs(high), 1.0):
        return low, high
    if low > 0:
        return 0.0, low * 1.25
    margin = abs(low) * 0.1 or 1.0
    return low - margin, low + margin
