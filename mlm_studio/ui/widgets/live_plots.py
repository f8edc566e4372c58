"""Live training curves: records go into NumPy buffers, a timer redraws what changed at 15 Hz while they are shown.

Each tick repaints at most one plot that changed, so the event loop never spends a frame painting all six.
Long histories are thinned here (the extremes of each stretch are kept) before pyqtgraph sees them, so a
change of x-axis or an overlay can never leave a plot drawn against a stale range. Noisy series are smoothed
as TensorBoard does (a debiased exponential moving average), drawn over their faint raw values; series with
few points (evaluations, probes) are drawn with symbols, so a single point shows.

The plots share one pyqtgraph scene: they export together through pyqtgraph's image exporter (at any
resolution) and keep pyqtgraph's context menu. They share one x range (an overlaid run's too), a plot without
values shows no ticks, and a single value gets a range that reads. Each names its curves in a header row, never
over the data; the grid takes as many columns as its width holds and scrolls rather than shrinking a plot below a
readable height.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters
from PySide6.QtCore import QEvent, QPointF, QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QFrame, QScrollArea, QVBoxLayout, QWidget

from mlm_studio.core.metric_schema import Metric
from mlm_studio.ui.construction import Construction
from mlm_studio.ui.theme import PALETTE_CHANGES
from mlm_studio.ui.widgets.curve_data import (
    NAMED_PLOTS,
    OPTIONAL_PLOTS,
    OVERLAY_COLOURS,
    PROBE_RANK,
    SHARE_PLOTS,
    SHORT_SERIES,
    Series,
    finite,
    nearest_x,
    one_value,
    plotted,
    shown_plots,
    thinned,
    x_span,
)
from mlm_studio.ui.widgets.legend import HeaderLegend, distinct_names, legend_above
from mlm_studio.ui.widgets.plots import (
    CompactAxis,
    DecadeAnchor,
    EvenView,
    Hint,
    Span,
    recolour,
    show_ticks,
    style_plot,
)
from mlm_studio.ui.widgets.readout import at, reading

REDRAW_MS = 66
X_AXES = {"step": "step", "tokens": "tokens seen", "time": "seconds"}
PLOT_WIDTH = 290  # the narrowest a plot gets: the grid has as many columns as fit, up to three
PLOT_HEIGHT = 160  # the lowest a plot gets (legend, 96 px of data, axis; a row of two-line legends fits 720 px)
HINTS = {  # what would fill a plot, said in it while it has no curve (the panel says what is true of its run)
    PROBE_RANK.plot: "Each cloze probe's expected word is ranked here at every evaluation (probes are set on the "
    "Probes tab before a run starts)."
}


class LivePlots(QWidget):
    """Six plots: loss, accuracy, learning rate, gradient norm, throughput, cloze probes; a seventh for an ELECTRA
    run's replaced-token detection, shown once it has values."""

    hovered = Signal(str)  # the values under the mouse, or "" when it leaves the plots
    loaded = Signal()  # a run's records replaced the curves
    stepped = Signal()  # a training step's record was added, one at a time (not those a run's records load)

    PLOTS: ClassVar[dict[str, tuple[str, bool]]] = {
        "loss": ("loss", False),
        "accuracy": ("accuracy", False),
        "learning_rate": ("learning rate", False),
        "grad_norm": ("gradient norm", False),
        "throughput": ("tokens / s", False),
        "probes": ("probe rank", True),
        "detection": ("discriminator", False),
    }

    def __init__(self, parent: QWidget | None = None, sliced: bool = False) -> None:
        """`sliced`: leave the construction's steps, one plot each, to the window's launch; otherwise build it all."""
        super().__init__(parent)
        self.axis = "step"
        self.smoothing = 0.6
        self.series: dict[str, Series] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.shadows: dict[str, pg.PlotDataItem] = {}  # the raw values under a smoothed curve
        self.plots: dict[str, pg.PlotItem] = {}
        self.cells: dict[str, pg.GraphicsLayout] = {}  # each plot under its header legend
        self.legends: dict[str, HeaderLegend] = {}
        self.cursors: dict[str, pg.InfiniteLine] = {}  # the x the readout reads, in the plot under the mouse
        self.anchors: dict[str, DecadeAnchor] = {}  # the log plots' decade anchors
        self.spans: dict[str, Span] = {}  # each plot's share of the common x range, and a range for one value
        self.overlays: list[str] = []  # names of the runs drawn for comparison
        self.own_name = ""  # the run whose own curves these are, named in the legends beside overlaid runs
        self._overlay_colours: dict[str, str] = {}
        self._overlaid: dict[str, tuple[str, str]] = {}  # overlay curve key -> (its run, what it is: "val")
        self._dirty: dict[str, None] = {}  # plots whose curves changed since drawn, longest waiting first
        self._plot_of: dict[str, str] = {}  # curve key -> plot name
        self._labels: dict[str, str] = {}  # curve key -> its full name
        self._units: dict[str, str] = {}  # curve key -> the unit of its values
        self._hint_texts = dict(HINTS)  # plot -> what it says while it has no curve
        self.columns = self._shown = 0
        self.view = pg.GraphicsLayoutWidget()
        self.view.setBackground(QApplication.palette().color(QPalette.ColorRole.Base))
        self.view.ci.layout.setContentsMargins(9, 0, 9, 0)  # each cell's own top margin parts the rows: a row's
        self.view.ci.layout.setVerticalSpacing(0)  # height is all its plot's, as `_fit_height` counts it
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.view)
        self.setMinimumSize(PLOT_WIDTH, PLOT_HEIGHT)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.scroll)
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        self.construction = Construction(self._build(), sliced)

    def _build(self) -> Iterator[None]:
        """One plot per step (about 12 ms each), then the grid; the redraw timer runs from then on."""
        for name, (label, log_y) in self.PLOTS.items():
            left = CompactAxis("left", percent=name in SHARE_PLOTS)
            view = EvenView(y_padding=0.1 if log_y else None)  # room for the label of the lowest decade
            plot = pg.PlotItem(viewBox=view, axisItems={"left": left, "bottom": CompactAxis("bottom")})
            self.cells[name], self.legends[name] = legend_above(plot, reserve_line=True)
            plot.setMinimumHeight(PLOT_HEIGHT - self.legends[name].minimumHeight() - 6)  # a wrapped legend adds
            style_plot(plot, X_AXES[self.axis], label)
            show_ticks(plot, False)  # until it has values
            if log_y:
                plot.setLogMode(y=True)
                self.anchors[name] = DecadeAnchor()
            self.plots[name] = plot
            self.cursors[name] = pg.InfiniteLine(angle=90, pen=pg.mkPen((128, 128, 128), width=1))
            self.spans[name] = Span()
            yield
        self.hints = {name: Hint("", plot) for name, plot in self.plots.items()}
        for name, text in self._hint_texts.items():
            self.set_hint(name, text)
        self._add_markers()
        self._reflow(self.columns or 3)  # as many columns as a resize during the steps asked for
        self.view.scene().sigMouseMoved.connect(self._on_mouse_moved)
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
        named: bool = False,
    ) -> Series:
        """`key`'s series, its curve made in `plot` if new; named in the legend if `named` or the plot names its
        curves."""
        self.construction.finish()  # data before the window got to the last plot
        if key not in self.series:
            self.series[key] = Series()
            pen = pg.mkPen(colour, width=width, style=style or Qt.PenStyle.SolidLine)
            options = {"symbol": symbol, "symbolSize": 5, "symbolBrush": colour, "symbolPen": colour} if symbol else {}
            if smooth:
                faint = QColor(colour)
                faint.setAlpha(70)
                self.shadows[key] = self.plots[plot].plot([], [], pen=pg.mkPen(faint, width=1))
            name = label if named or plot in NAMED_PLOTS else None
            self.curves[key] = self.plots[plot].plot([], [], pen=pen, name=name, **options)
            self._plot_of[key] = plot
            self._labels[key] = label
            self._units[key] = unit
            if self.overlays and not key.startswith("overlay:"):
                self._name_overlays()  # a curve of the shown run's that began beside overlaid runs
            self.hints[plot].hide()
            show_ticks(self.plots[plot], True)
            if plot in OPTIONAL_PLOTS:
                self._reflow(self.columns)
        self._dirty.setdefault(plot)  # keeps its place in the queue
        return self.series[key]

    def add(self, kind: str, record: dict) -> None:
        """Add one metrics record (as `Record.to_dict()` gives it) to the curves the metric schema puts it in."""
        point = (record["step"], record.get("tokens_seen", 0), record.get("elapsed", 0.0))
        for name, curve, label, value in plotted(kind, record):
            metric = curve.metric
            wide = metric.smooth or curve.symbol  # a wide pen costs several times a thin one
            key = name if kind == "probe" else f"{kind}_{name}"
            series = self._curve(
                key, metric.plot, label, curve.colour, metric.unit, 2 if wide else 1, None, curve.symbol, metric.smooth
            )
            series.append(*point, value)
        if kind == "step":
            self.stepped.emit()

    def set_hint(self, plot: str, text: str) -> None:
        """What `plot` says while it has no curve ("" for nothing)."""
        self._hint_texts[plot] = text
        if plot in getattr(self, "hints", {}):  # none yet while built
            self.hints[plot].set_text(text)
            self.hints[plot].setVisible(bool(text) and plot not in self._plot_of.values())

    def load(self, records: list[dict]) -> None:
        """Replace the curves with a run's recorded metrics."""
        self.clear()
        with QSignalBlocker(self):
            for record in records:
                self.add(record.get("type", ""), record)
        self.redraw(everything=True)
        self.loaded.emit()

    def clear(self) -> None:
        """No curves and no reading: what a new run starts from."""
        self.construction.finish()
        for plot in self.plots.values():
            plot.clear()  # removes the items and their legend entries
        self._add_markers()
        self.series.clear()
        self.curves.clear()
        self.shadows.clear()
        self._plot_of.clear()
        self._labels.clear()
        self._units.clear()
        for name, plot in self.plots.items():
            self.hints[name].setVisible(bool(self.hints[name].toPlainText()))
            show_ticks(plot, False)
        self.overlays.clear()
        self._overlay_colours.clear()
        self._overlaid.clear()
        self._dirty = dict.fromkeys(self.plots)
        self._reflow(self.columns)
        self.reset_zoom()
        self._leave()

    def overlay(self, name: str, records: list[dict]) -> None:
        """Draw another run's curves for comparison, in every plot it has values for, in a colour of its own:
        training dashed, evaluations dotted with points. Overlaying a run that is already drawn draws it afresh."""
        overlaid = len(self._overlay_colours)
        colour = self._overlay_colours.setdefault(name, OVERLAY_COLOURS[overlaid % len(OVERLAY_COLOURS)])
        for key, (run, _) in self._overlaid.items():
            if run == name:
                self.series[key] = Series()
        for record in records:
            kind = record.get("type", "")
            point = (record["step"], record.get("tokens_seen", 0), record.get("elapsed", 0.0))
            for what, curve, label, value in plotted(kind, record):
                series = self._overlay_curve(name, f"{kind}:{what}", curve.metric, label, colour, kind == "step")
                series.append(*point, value)
        if name not in self.overlays:
            self.overlays.append(name)
        self._name_overlays()
        self.reset_zoom()
        self.redraw(everything=True)

    def _overlay_curve(self, run: str, what: str, metric: Metric, label: str, colour: str, train: bool) -> Series:
        key, label = f"overlay:{run}:{what}", SHORT_SERIES.get(label, label)
        if key not in self.series:
            style, symbol = (Qt.PenStyle.DashLine, None) if train else (Qt.PenStyle.DotLine, "t")
            self._curve(key, metric.plot, f"{run} ({label})", colour, metric.unit, 1, style, symbol, named=True)
            self._overlaid[key] = (run, label)
        return self.series[key]

    def _name_overlays(self) -> None:
        """The legend entries, once runs are overlaid, each with its run's name (the run's own too, first, in every
        plot an overlaid run is drawn in), shortened so that each still tells its run from the others; in a plot of
        one series a run's name alone, the plot's axis naming the series."""
        runs = [self.own_name, *self.overlays] if self.own_name else self.overlays
        short = dict(zip(runs, distinct_names(runs)))

        def entry(plot: str, run: str, series: str) -> str:
            return f"{short[run]} ({series})" if plot in NAMED_PLOTS else short[run]

        for key, (run, series) in self._overlaid.items():
            self.legends[self._plot_of[key]].rename(self.curves[key], entry(self._plot_of[key], run, series))
        if not self.own_name:
            return
        beside = {self._plot_of[key] for key in self._overlaid}
        own = [key for key in self.curves if key not in self._overlaid and self._plot_of[key] in beside]
        for place, key in enumerate(own):
            legend, curve = self.legends[self._plot_of[key]], self.curves[key]
            name = entry(self._plot_of[key], self.own_name, SHORT_SERIES.get(self._labels[key], self._labels[key]))
            legend.remove(curve)  # an entry of its own made after an overlay's is put back before it
            legend.add(curve, name, at=sum(self._plot_of[k] == self._plot_of[key] for k in own[:place]))

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
        panel shown) the timer draws nothing: they are brought up to date when shown. Undefined values (NaN) are
        left out of the drawing; the readout says them as "—"."""
        if not (everything or self.isVisible()):
            return
        names = list(self._dirty)
        shared = x_span(self.series.values(), self.axis)
        for name in names if everything else names[:1]:
            del self._dirty[name]
            values = []
            for key, series in self.series.items():
                if self._plot_of[key] != name:
                    continue
                x, y = series.x(self.axis), series.y
                values.append(finite(x, y)[1])
                if key in self.shadows:
                    self.shadows[key].setData(*finite(*thinned(x, y)))
                    y = series.smoothed(self.smoothing)
                self.curves[key].setData(*finite(*thinned(x, y)))
            self.spans[name].set_bounds(shared, None if name in self.anchors else one_value(values))
        for span in self.spans.values():
            span.set_bounds(shared, span.y)
        self._fit_height()  # legends wrap as curves come and widths change

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
            for hint in getattr(self, "hints", {}).values():  # none yet while built
                hint.recolour()

    def showEvent(self, event) -> None:
        self.construction.finish()  # shown before the window has built it all
        super().showEvent(event)
        self.redraw(everything=True)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._reflow(min(3, max(1, event.size().width() // PLOT_WIDTH)))

    def _reflow(self, columns: int) -> None:
        """Lay the plots out in `columns` columns, each at least PLOT_HEIGHT tall (the grid scrolls when the
        window is lower); a plot only some runs have values for (ELECTRA's detection) only when it has curves."""
        shown = shown_plots(self.plots, self._plot_of.values())
        if (columns, len(shown)) != (self.columns, self._shown):
            self.columns, self._shown = columns, len(shown)
            self.view.ci.clear()
            for index, name in enumerate(shown):
                self.view.ci.addItem(self.cells[name], row=index // columns, col=index % columns)
        self._fit_height()

    def _fit_height(self) -> None:
        """The grid's least height: each row PLOT_HEIGHT tall, and taller by the lines its legends wrapped onto,
        so a plot keeps its data area however many curves it names."""
        shown, columns = shown_plots(self.plots, self._plot_of.values()), max(self.columns, 1)
        line = min(legend.minimumHeight() for legend in self.legends.values())
        rows = [shown[i : i + columns] for i in range(0, len(shown), columns)]
        height = sum(PLOT_HEIGHT + max(self.legends[name].minimumHeight() for name in row) - line for row in rows)
        if round(height) != self.view.minimumHeight():
            self.view.setMinimumHeight(round(height))

    # --- reading and exporting -----------------------------------------------------------------------
    def _add_markers(self) -> None:
        """The hidden cursors and the log plots' decade anchors, in their plots (again after a clear)."""
        for name, cursor in self.cursors.items():
            cursor.hide()
            self.plots[name].addItem(cursor, ignoreBounds=True)
        for name, anchor in self.anchors.items():
            self.plots[name].addItem(anchor)
        for name, span in self.spans.items():
            span.set_bounds(None, None)
            self.plots[name].addItem(span)

    def leaveEvent(self, event: QEvent) -> None:
        super().leaveEvent(event)
        self._leave()

    def _leave(self) -> None:
        for cursor in self.cursors.values():
            cursor.hide()
        self.hovered.emit("")

    def _on_mouse_moved(self, position: QPointF) -> None:
        """Say the values of the plot under the mouse at the nearest recorded x of each of its curves, and mark
        that x in the plot."""
        for name, plot in self.plots.items():
            if plot.vb.sceneBoundingRect().contains(position) and plot.isVisible():
                curves = [series for key, series in self.series.items() if self._plot_of[key] == name]
                x = nearest_x(curves, plot.vb.mapSceneToView(position).x(), self.axis)
                for other, cursor in self.cursors.items():
                    cursor.setVisible(other == name and x is not None)
                if x is not None:
                    self.cursors[name].setValue(x)
                self.hovered.emit(self.readout(name, plot.vb.mapSceneToView(position).x()))
                return
        self._leave()

    def readout(self, plot: str, x: float) -> str:
        """`plot`'s curves at the recorded point nearest to `x`, as a line of text: "loss: training 2.31 nats at
        step 120 · validation 2.4 nats at step 100"; a plot of one curve is named once ("learning rate 0.001 at
        step 120")."""
        parts = []
        for key, series in self.series.items():
            if self._plot_of[key] != plot or series.size == 0:
                continue
            xs = series.x(self.axis)
            index = int(np.abs(xs - x).argmin())
            value = series.smoothed(self.smoothing)[index] if key in self.shadows else series.y[index]
            parts.append((self._labels[key], f"{reading(value, self._units[key])} at {at(self.axis, xs[index])}"))
        title = self.PLOTS[plot][0]
        if len(parts) == 1 and plot not in NAMED_PLOTS:
            return f"{parts[0][0]} {parts[0][1]}"
        return f"{title}: " + " · ".join(f"{label} {said}" for label, said in parts) if parts else ""

    def export(self, path: str | Path, scale: float = 2.0) -> None:
        """The plots as an image (PNG, JPEG… by the suffix) at `scale` times their size on screen; raises
        OSError when the file cannot be written."""
        self.redraw(everything=True)
        exporter = pyqtgraph.exporters.ImageExporter(self.view.scene())
        exporter.parameters()["width"] = int(self.view.width() * scale)
        if not exporter.export(toBytes=True).save(str(path)):
            raise OSError(f"{path} could not be written")
