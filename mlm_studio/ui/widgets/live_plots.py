"""Live training curves: records go into NumPy buffers, a timer redraws what changed at 15 Hz.

Each tick repaints at most one plot that changed, so the event loop never spends a frame painting all six;
long histories stay smooth through pyqtgraph's clip-to-view and peak downsampling and pens of width 1.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QGridLayout, QWidget

from mlm_studio.ui.widgets.plots import themed_plot

REDRAW_MS = 66
X_AXES = {"step": "step", "tokens": "tokens seen", "time": "seconds"}
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")


class Series:
    """A growing curve: y against step, tokens seen and time, in amortised O(1) appends."""

    def __init__(self) -> None:
        self.data = np.zeros((4, 256))  # rows: step, tokens, time, value
        self.size = 0

    def append(self, step: float, tokens: float, time: float, value: float) -> None:
        if self.size == self.data.shape[1]:
            self.data = np.concatenate([self.data, np.zeros_like(self.data)], axis=1)
        self.data[:, self.size] = (step, tokens, time, value)
        self.size += 1

    def x(self, axis: str) -> np.ndarray:
        return self.data[("step", "tokens", "time").index(axis), : self.size]

    @property
    def y(self) -> np.ndarray:
        return self.data[3, : self.size]


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Centred mean over `window` points (fewer at the ends), so the smoothed curve does not lag."""
    if window <= 1 or len(values) == 0:
        return values
    sums = np.concatenate([[0.0], np.cumsum(values)])
    index = np.arange(len(values))
    low = np.maximum(0, index - window // 2)
    high = np.minimum(len(values), index + (window + 1) // 2)
    return (sums[high] - sums[low]) / (high - low)


class LivePlots(QWidget):
    """Six plots: loss, accuracy, learning rate, gradient norm, throughput, cloze probes."""

    PLOTS = {
        "loss": ("loss", False),
        "accuracy": ("masked-token accuracy", False),
        "learning_rate": ("learning rate", False),
        "grad_norm": ("gradient norm", False),
        "throughput": ("tokens / s", False),
        "probes": ("probe rank (log)", True),
    }

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.axis = "step"
        self.smoothing = 20
        self.series: dict[str, Series] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.plots: dict[str, pg.PlotWidget] = {}
        self.overlays: list[str] = []  # names of the runs drawn for comparison
        self._dirty: set[str] = set()  # plots whose curves changed since they were drawn
        self._plot_of: dict[str, str] = {}  # curve key -> plot name
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for index, (name, (label, log_y)) in enumerate(self.PLOTS.items()):
            plot = themed_plot(X_AXES[self.axis], label)
            plot.setClipToView(True)
            plot.setDownsampling(auto=True, mode="peak")
            plot.addLegend(offset=(-5, 5), labelTextSize="8pt")
            if log_y:
                plot.setLogMode(y=True)
            self.plots[name] = plot
            layout.addWidget(plot, index // 3, index % 3)
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.timer.start()

    # --- data ---------------------------------------------------------------------------------------
    def _curve(self, key: str, plot: str, label: str, colour: str, width: float = 1, style=None) -> Series:
        if key not in self.series:
            self.series[key] = Series()
            pen = pg.mkPen(colour, width=width, style=style) if style is not None else pg.mkPen(colour, width=width)
            self.curves[key] = self.plots[plot].plot([], [], pen=pen, name=label)
            self._plot_of[key] = plot
        self._dirty.add(plot)
        return self.series[key]

    def add(self, kind: str, record: dict) -> None:
        """Add one metrics record (as `Record.to_dict()` gives it) to the right curves."""
        step, tokens, elapsed = record["step"], record.get("tokens_seen", 0), record.get("elapsed", 0.0)
        point = (step, tokens, elapsed)
        if kind == "step":
            self._curve("loss", "loss", "training", COLOURS[0]).append(*point, record["loss"])
            self._curve("loss_smooth", "loss", "training, smoothed", COLOURS[1], width=2).append(*point, record["loss"])
            self._curve("accuracy", "accuracy", "training", COLOURS[0]).append(*point, record["accuracy"])
            self._curve("learning_rate", "learning_rate", "learning rate", COLOURS[2]).append(
                *point, record["learning_rate"]
            )
            self._curve("grad_norm", "grad_norm", "gradient norm", COLOURS[4]).append(*point, record["grad_norm"])
            self._curve("throughput", "throughput", "tokens/s", COLOURS[5]).append(*point, record["tokens_per_second"])
        elif kind == "eval":
            self._curve("val_loss", "loss", "validation", COLOURS[3], width=2).append(*point, record["loss"])
            self._curve("val_accuracy", "accuracy", "validation", COLOURS[3], width=2).append(
                *point, record["accuracy"]
            )
        elif kind == "probe":
            for index, result in enumerate(record["results"]):
                colour = COLOURS[index % len(COLOURS)]
                label = f"{result['expected']}"
                self._curve(f"probe{index}", "probes", label, colour).append(*point, result["rank"])

    def load(self, records: list[dict]) -> None:
        """Replace the curves with a run's recorded metrics."""
        self.clear()
        for record in records:
            self.add(record.get("type", ""), record)
        self.redraw(everything=True)

    def clear(self) -> None:
        for curve in self.curves.values():
            for plot in self.plots.values():
                if curve in plot.listDataItems():
                    plot.removeItem(curve)
                    plot.plotItem.legend.removeItem(curve)
        self.series.clear()
        self.curves.clear()
        self._plot_of.clear()
        self.overlays.clear()
        self._dirty = set(self.plots)

    def overlay(self, name: str, records: list[dict]) -> None:
        """Draw another run's loss and accuracy, dashed, for comparison."""
        colour = COLOURS[(len(self.overlays) + 2) % len(COLOURS)]
        for kind, plot, field in (("step", "loss", "loss"), ("eval", "loss", "loss"), ("eval", "accuracy", "accuracy")):
            key = f"overlay:{name}:{kind}:{plot}"
            series = self._curve(
                key, plot, f"{name} ({'val' if kind == 'eval' else 'train'})", colour, style=Qt.PenStyle.DashLine
            )
            for record in records:
                if record.get("type") == kind:
                    series.append(
                        record["step"], record.get("tokens_seen", 0), record.get("elapsed", 0.0), record[field]
                    )
        self.overlays.append(name)
        self.redraw(everything=True)

    # --- drawing ------------------------------------------------------------------------------------
    def set_axis(self, axis: str) -> None:
        self.axis = axis
        for plot in self.plots.values():
            plot.setLabel("bottom", X_AXES[axis])
        self._dirty = set(self.plots)

    def set_smoothing(self, window: int) -> None:
        self.smoothing = window
        self._dirty.add("loss")

    def redraw(self, everything: bool = False) -> None:
        """Put the buffers into the curves: of the next changed plot, or of all changed plots."""
        names = [name for name in self.plots if name in self._dirty]
        for name in names if everything else names[:1]:
            self._dirty.discard(name)
            for key, series in self.series.items():
                if self._plot_of[key] == name:
                    y = moving_average(series.y, self.smoothing) if key == "loss_smooth" else series.y
                    self.curves[key].setData(series.x(self.axis), y)
