"""Live training curves: records go into NumPy buffers, a timer redraws what changed at 15 Hz while they are shown.

Each tick repaints at most one plot that changed, so the event loop never spends a frame painting all six.
Long histories are thinned here (the extremes of each stretch are kept) before pyqtgraph sees them, so a
change of x-axis or an overlay can never leave a plot drawn against a stale range. Noisy series are smoothed
as TensorBoard does (a debiased exponential moving average), drawn over their faint raw values; series with
few points (evaluations, probes) are drawn with symbols, so a single point shows.

The six plots share one pyqtgraph scene: they export together through pyqtgraph's image exporter (at any
resolution), keep pyqtgraph's context menu, and reflow from three columns to two when the window is narrow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters
from PySide6.QtCore import QEvent, QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from mlm_studio.core.evaluation.probes import ProbeResult
from mlm_studio.core.metric_schema import Metric, metrics_of
from mlm_studio.core.training.records import RECORDS, EvalRecord
from mlm_studio.ui.theme import PALETTE_CHANGES
from mlm_studio.ui.widgets.plots import CompactAxis, recolour, style_plot

REDRAW_MS = 66
MAX_POINTS = 4000  # per curve handed to pyqtgraph
X_AXES = {"step": "step", "tokens": "tokens seen", "time": "seconds"}
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")
# Where each plot with several series keeps its legend: away from where its curves end (loss falls, accuracy rises).
LEGENDS = {"loss": (-5, 5), "accuracy": (-5, -5), "probes": (-5, 5), "detection": (-5, 5)}
LEGEND_CHARS = 26  # longer names are shortened in the middle, so a legend never hides a plot
WIDE = 900  # pixels from which the plots sit in three columns
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
                symbol = "o" if cls is EvalRecord else None
                curves.setdefault(kind, {})[name] = Curve(metric, COLOURS[index % len(COLOURS)], symbol)
    return curves


def _optional_plots() -> set[str]:
    """The plots only some runs have values for (ELECTRA's detection): shown once they have a curve."""
    metrics = [curve.metric for curves in CURVES.values() for curve in curves.values()]
    return {m.plot for m in metrics} - {m.plot for m in metrics if not m.optional}


CURVES = _schema_curves()
OPTIONAL_PLOTS = _optional_plots()


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


class LivePlots(QWidget):
    """Six plots: loss, accuracy, learning rate, gradient norm, throughput, cloze probes; a seventh for an ELECTRA
    run's replaced-token detection, shown once it has values."""

    hovered = Signal(str)  # the values under the mouse, or "" when it leaves the plots

    PLOTS: ClassVar[dict[str, tuple[str, bool]]] = {
        "loss": ("loss", False),
        "accuracy": ("masked-token accuracy", False),
        "learning_rate": ("learning rate", False),
        "grad_norm": ("gradient norm", False),
        "throughput": ("tokens / s", False),
        "probes": ("probe rank (log)", True),
        "detection": ("replaced-token detection", False),
    }

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.axis = "step"
        self.smoothing = 0.6
        self.series: dict[str, Series] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.shadows: dict[str, pg.PlotDataItem] = {}  # the raw values under a smoothed curve
        self.plots: dict[str, pg.PlotWidget] = {}
        self.overlays: list[str] = []  # names of the runs drawn for comparison
        self._dirty: dict[str, None] = {}  # plots whose curves changed since drawn, longest waiting first
        self._plot_of: dict[str, str] = {}  # curve key -> plot name
        self._labels: dict[str, str] = {}  # curve key -> its full name
        self._units: dict[str, str] = {}  # curve key -> the unit of its values
        self.view = pg.GraphicsLayoutWidget()
        self.view.setBackground(QApplication.palette().color(QPalette.ColorRole.Base))
        self.view.setMinimumSize(300, 300)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        for name, (label, log_y) in self.PLOTS.items():
            plot = pg.PlotItem(axisItems={"left": CompactAxis("left"), "bottom": CompactAxis("bottom")})
            if name in LEGENDS:  # a plot of one series is named by its axis; a legend would only hide its newest points
                plot.addLegend(offset=LEGENDS[name], labelTextSize="8pt", colCount=2 if name == "detection" else 1)
            style_plot(plot, X_AXES[self.axis], label)
            if log_y:
                plot.setLogMode(y=True)
            self.plots[name] = plot
        self.columns = self._shown = 0
        self._reflow(3)
        self.view.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()

    # --- data ---------------------------------------------------------------------------------------
    def _curve(
        self,
        key: str,
        plot: str,
        label: str,
        colour: str,
        unit: str,
        width: float = 1,
        style=None,
        symbol: str | None = None,
        smooth: bool = False,
    ) -> Series:
        if key not in self.series:
            self.series[key] = Series()
            pen = pg.mkPen(colour, width=width, style=style or Qt.PenStyle.SolidLine)
            options = {"symbol": symbol, "symbolSize": 5, "symbolBrush": colour, "symbolPen": colour} if symbol else {}
            if smooth:
                faint = QColor(colour)
                faint.setAlpha(70)
                self.shadows[key] = self.plots[plot].plot([], [], pen=pg.mkPen(faint, width=1))
            self.curves[key] = self.plots[plot].plot([], [], pen=pen, name=_shortened(label), **options)
            self._plot_of[key] = plot
            self._labels[key] = label
            self._units[key] = unit
            if plot in OPTIONAL_PLOTS:
                self._reflow(self.columns)
        self._dirty.setdefault(plot)  # keeps its place in the queue
        return self.series[key]

    def add(self, kind: str, record: dict) -> None:
        """Add one metrics record (as `Record.to_dict()` gives it) to the curves the metric schema puts it in."""
        step, tokens, elapsed = record["step"], record.get("tokens_seen", 0), record.get("elapsed", 0.0)
        point = (step, tokens, elapsed)
        for field, curve in CURVES.get(kind, {}).items():
            if record.get(field) is not None:
                metric = curve.metric
                self._curve(
                    f"{kind}_{field}",
                    metric.plot,
                    metric.series,
                    curve.colour,
                    metric.unit,
                    width=2 if metric.smooth or curve.symbol else 1,  # a wide pen costs several times a thin one
                    symbol=curve.symbol,
                    smooth=metric.smooth,
                ).append(*point, record[field])
        if kind == "probe":
            for index, result in enumerate(record["results"]):
                colour = COLOURS[index % len(COLOURS)]
                self._curve(
                    f"probe{index}", PROBE_RANK.plot, result["expected"], colour, PROBE_RANK.unit, symbol="o"
                ).append(*point, result["rank"])

    def load(self, records: list[dict]) -> None:
        """Replace the curves with a run's recorded metrics."""
        self.clear()
        for record in records:
            self.add(record.get("type", ""), record)
        self.redraw(everything=True)

    def clear(self) -> None:
        for plot in self.plots.values():
            plot.clear()  # removes the items and their legend entries
        self.series.clear()
        self.curves.clear()
        self.shadows.clear()
        self._plot_of.clear()
        self._labels.clear()
        self._units.clear()
        self.overlays.clear()
        self._dirty = dict.fromkeys(self.plots)
        self._reflow(self.columns)
        self.reset_zoom()

    def overlay(self, name: str, records: list[dict]) -> None:
        """Draw another run's loss and accuracy for comparison in a colour of its own: training dashed,
        validation dotted with points. Overlaying a run that is already drawn draws it afresh."""
        colour = COLOURS[(len(self.overlays) + 2) % len(COLOURS)] if name not in self.overlays else None
        for kind, plot, field in (("step", "loss", "loss"), ("eval", "loss", "loss"), ("eval", "accuracy", "accuracy")):
            key = f"overlay:{name}:{kind}:{plot}"
            if key in self.series:
                colour = colour or self.curves[key].opts["pen"].color().name()
                self.series[key] = Series()
            train = kind == "step"
            series = self._curve(
                key,
                plot,
                f"{name} ({'train' if train else 'val'})",
                colour,
                metrics_of(RECORDS[kind])[field].unit,
                style=Qt.PenStyle.DashLine if train else Qt.PenStyle.DotLine,
                symbol=None if train else "t",
            )
            for record in records:
                if record.get("type") == kind:
                    series.append(
                        record["step"], record.get("tokens_seen", 0), record.get("elapsed", 0.0), record[field]
                    )
        if name not in self.overlays:
            self.overlays.append(name)
        self.reset_zoom()
        self.redraw(everything=True)

    # --- drawing ------------------------------------------------------------------------------------
    def set_axis(self, axis: str) -> None:
        self.axis = axis
        for plot in self.plots.values():
            plot.setLabel("bottom", X_AXES[axis])
        self._dirty = dict.fromkeys(self.plots)
        self.reset_zoom()

    def set_smoothing(self, weight: float) -> None:
        """Smoothing weight from 0 (none) to 0.99 (TensorBoard's slider)."""
        self.smoothing = min(max(weight, 0.0), 0.99)
        self._dirty.update(dict.fromkeys(self._plot_of[key] for key in self.shadows))

    def redraw(self, everything: bool = False) -> None:
        """Put the buffers into the curves: of the plot that has waited longest since it changed (so that records
        arriving faster than the ticks starve none), or of all changed plots. While the plots are hidden (another
        panel shown) the timer draws nothing: they are brought up to date when shown."""
        if not (everything or self.isVisible()):
            return
        names = list(self._dirty)
        for name in names if everything else names[:1]:
            del self._dirty[name]
            for key, series in self.series.items():
                if self._plot_of[key] != name:
                    continue
                x, y = series.x(self.axis), series.y
                if key in self.shadows:
                    self.shadows[key].setData(*thinned(x, y))
                    y = series.smoothed(self.smoothing)
                self.curves[key].setData(*thinned(x, y))

    def reset_zoom(self) -> None:
        """Let every plot find its range again from its data (after a zoom, or the x-axis or the curves changed)."""
        for plot in self.plots.values():
            plot.enableAutoRange()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES and hasattr(self, "view"):
            self.view.setBackground(QApplication.palette().color(QPalette.ColorRole.Base))
            for plot in self.plots.values():
                recolour(plot)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.redraw(everything=True)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._reflow(3 if event.size().width() >= WIDE else 2)

    def _reflow(self, columns: int) -> None:
        """Lay the plots out in `columns` columns (three when there is room, else two); a plot only some runs
        have values for (ELECTRA's detection) only when it has curves."""
        shown = [p for name, p in self.plots.items() if name not in OPTIONAL_PLOTS or name in self._plot_of.values()]
        if (columns, len(shown)) == (self.columns, self._shown):
            return
        self.columns, self._shown = columns, len(shown)
        self.view.ci.clear()
        for index, plot in enumerate(shown):
            self.view.ci.addItem(plot, row=index // columns, col=index % columns)

    # --- reading and exporting -----------------------------------------------------------------------
    def _on_mouse_moved(self, position: QPointF) -> None:
        """Say the values of the plot under the mouse at the nearest recorded x of each of its curves."""
        for name, plot in self.plots.items():
            if plot.vb.sceneBoundingRect().contains(position):
                self.hovered.emit(self.readout(name, plot.vb.mapSceneToView(position).x()))
                return
        self.hovered.emit("")

    def readout(self, plot: str, x: float) -> str:
        """`plot`'s curves at the recorded point nearest to `x`, as a line of text."""
        parts = []
        for key, series in self.series.items():
            if self._plot_of[key] != plot or series.size == 0:
                continue
            xs = series.x(self.axis)
            index = int(np.abs(xs - x).argmin())
            value = series.y[index]
            if key in self.shadows:
                value = series.smoothed(self.smoothing)[index]
            reading = _reading(value, self._units[key])
            parts.append(f"{self._labels[key]} {reading} at {X_AXES[self.axis]} {_number(xs[index])}")
        return f"{self.PLOTS[plot][0]}: " + " · ".join(parts) if parts else ""

    def export(self, path: str | Path, scale: float = 2.0) -> None:
        """The six plots as an image (PNG, JPEG… by the suffix) at `scale` times their size on screen; raises
        OSError when the file cannot be written."""
        self.redraw(everything=True)
        exporter = pyqtgraph.exporters.ImageExporter(self.view.scene())
        exporter.parameters()["width"] = int(self.view.width() * scale)
        if not exporter.export(toBytes=True).save(str(path)):
            raise OSError(f"{path} could not be written")


def _shortened(name: str, limit: int = LEGEND_CHARS) -> str:
    if len(name) <= limit:
        return name
    half = (limit - 1) // 2
    return f"{name[:half]}…{name[-(limit - 1 - half) :]}"


def _reading(value: float, unit: str) -> str:
    """A value in its unit: a share as a percentage, others followed by their unit; "—" where it is undefined
    (ELECTRA's precision before any token is flagged)."""
    if not math.isfinite(value):
        return "—"
    if unit == "share":
        return f"{value:.1%}"
    return f"{_number(value)} {unit}" if unit else _number(value)


def _number(value: float) -> str:
    if value != 0 and (abs(value) < 1e-2 or abs(value) >= 1e5):
        return f"{value:.3g}"
    return f"{value:,.4g}"
