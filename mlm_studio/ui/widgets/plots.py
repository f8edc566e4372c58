"""pyqtgraph plots that follow the application palette, so they read well in light and dark themes."""

from __future__ import annotations

from math import ceil, log10

import pyqtgraph as pg
import pyqtgraph.exporters
from PySide6.QtCore import QEvent, QRectF, Qt
from PySide6.QtGui import QColor, QPalette, QTextOption
from PySide6.QtWidgets import QApplication, QGraphicsTextItem, QTableWidget, QWidget

from mlm_studio.ui.theme import PALETTE_CHANGES
from mlm_studio.ui.widgets.legend import HeaderLegend, legend_above

pg.setConfigOptions(antialias=False)
# The plots' context menu (Export…) offers what works here: images at any size and the curves as CSV. pyqtgraph's
# SVG writer fails on every path Qt 6.8+ writes, and the Matplotlib one needs a package this app does not bring.
pyqtgraph.exporters.Exporter.Exporters[:] = [pyqtgraph.exporters.ImageExporter, pyqtgraph.exporters.CSVExporter]
UNITS = ((1e9, "B"), (1e6, "M"), (1e3, "k"))


class CompactAxis(pg.AxisItem):
    """Tick labels that stay short (1.2M, 450k, 2e-3), so neighbouring labels never run together; zero reads "0".
    On a log axis only the decades are labelled (1, 10, 100, 1k), the ticks between them left unlabelled. An axis
    of shares (`percent`) reads them as percentages (20%, 40%), as every readout and table says them."""

    def __init__(self, orientation: str, percent: bool = False, **options) -> None:
        super().__init__(orientation, **options)
        self.percent = percent

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        if not values:
            return []
        if self.logMode:
            return [_decade(v) if abs(v - round(v)) < 1e-6 else "" for v in values]
        values = [v * scale for v in values]
        spacing *= scale
        if self.percent:
            places = max(0, ceil(-log10(spacing * 100)))
            return [f"{v * 100:.{places}f}%" for v in values]
        largest = max(abs(v) for v in values)
        for factor, unit in UNITS:
            if largest >= factor:
                places = max(0, ceil(-log10(spacing / factor)))
                return [f"{v / factor:.{places}f}{unit}" if v else "0" for v in values]
        if 0 < largest < 1e-2:
            return [_scientific(v, spacing) for v in values]
        places = max(0, ceil(-log10(spacing)))
        return [f"{v:.{places}f}" if v else "0" for v in values]


def _decade(exponent: float) -> str:
    """10 to the power `exponent` (a whole number) as a short plain number: 0.01, 1, 100, 10k, 1M."""
    power = round(exponent)
    if power < 0:
        return f"{10.0**power:.{-power}f}"
    for factor, unit in UNITS:
        if 10**power >= factor:
            return f"{10**power // int(factor)}{unit}"
    return str(10**power)


class DecadeAnchor(pg.GraphicsObject):
    """Draws nothing; keeps a log plot's auto-range over 10^0 to 10^1 at least (ranks: 1 to 10), so that two
    decades are labelled however close the values lie. It leaves the x-range alone."""

    def dataBounds(self, axis: int, *_, **__) -> tuple[float, float] | None:  # noqa: N802 - pyqtgraph's name
        return None if axis == 0 else (0.0, 1.0)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return QRectF()

    def paint(self, *_) -> None:
        pass


class EvenView(pg.ViewBox):
    """A view whose auto-range pads by the same share of the data's range at any size, so plots of different
    widths over one x range show the same x range; `y_padding` pads its y range apart (room for a label)."""

    def __init__(self, y_padding: float | None = None) -> None:
        super().__init__()
        self.y_padding = y_padding

    def suggestPadding(self, axis: int) -> float:  # noqa: N802 - pyqtgraph's name
        if axis == 1 and self.y_padding is not None:
            return self.y_padding
        return self.state["defaultPadding"]


class Span(pg.GraphicsObject):
    """Draws nothing; widens its plot's auto-range to `x` (the range every plot of a grid shares, so their x axes
    agree) and to `y` (set where the plot's values are all one value, which would give a range of nothing)."""

    def __init__(self) -> None:
        super().__init__()
        self.x: tuple[float, float] | None = None
        self.y: tuple[float, float] | None = None

    def set_bounds(self, x: tuple[float, float] | None, y: tuple[float, float] | None) -> None:
        if (x, y) != (self.x, self.y):
            self.x, self.y = x, y
            self.informViewBoundsChanged()

    def dataBounds(self, axis: int, *_, **__) -> tuple[float, float] | None:  # noqa: N802 - pyqtgraph's name
        return self.x if axis == 0 else self.y

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return QRectF()

    def paint(self, *_) -> None:
        pass


class Hint(QGraphicsTextItem):
    """A sentence in the middle of a plot's data area, wrapped to its width, in the palette's placeholder colour:
    what would fill the plot while it has no curve."""

    def __init__(self, text: str, plot: pg.PlotItem) -> None:
        super().__init__(text)
        self.setParentItem(plot.vb)  # in the view's own coordinates: it stays put when the data range moves
        self.view = plot.vb
        self.view.sigResized.connect(self._place)
        self.recolour()
        self._place()

    def set_text(self, text: str) -> None:
        self.setPlainText(text)
        self._place()

    def recolour(self) -> None:
        self.setDefaultTextColor(QApplication.palette().color(QPalette.ColorRole.PlaceholderText))

    def _place(self) -> None:
        area = self.view.boundingRect()
        self.setTextWidth(max(area.width() - 24, 40))
        self.document().setDefaultTextOption(QTextOption(Qt.AlignmentFlag.AlignCenter))
        self.setPos(12, max(0.0, (area.height() - self.boundingRect().height()) / 2))


def show_ticks(plot: pg.PlotItem, shown: bool) -> None:
    """Ticks, tick labels and grid on both axes, or none (an empty plot has no values to mark)."""
    for name in ("left", "bottom"):
        plot.getAxis(name).setTicks(None if shown else [[], []])


def _scientific(value: float, spacing: float) -> str:
    if value == 0:
        return "0"
    exponent = int(f"{abs(value):e}".split("e")[1])
    places = max(0, ceil(-log10(spacing)) + exponent)
    return f"{value / 10**exponent:.{places}f}e{exponent}"


def style_plot(plot: pg.PlotItem, x_label: str, y_label: str) -> None:
    """The palette's text colour, a light grid, labelled axes, pyqtgraph's context menu (export, view all)."""
    for name in ("left", "bottom"):
        plot.getAxis(name).enableAutoSIPrefix(False)
    plot.getAxis("bottom").setTickDensity(0.7)
    plot.getAxis("left").setWidth(62)  # room for "1.5e-3" and the label, the same in every plot so they align
    plot.setLabel("bottom", x_label)
    plot.setLabel("left", y_label)
    plot.showGrid(x=True, y=True, alpha=0.15)
    recolour(plot)


def recolour(plot: pg.PlotItem) -> None:
    """Axes, tick labels, axis titles and legend in the palette's colours (again after a scheme change)."""
    palette = QApplication.palette()
    text = palette.color(QPalette.ColorRole.Text)
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setPen(pg.mkPen(text))
        axis.setTextPen(pg.mkPen(text))
        axis.setLabel(axis.labelText, color=text.name())
    if isinstance(plot.legend, HeaderLegend):
        plot.legend.set_text_colour(text)
    elif plot.legend is not None:  # pyqtgraph's own, over the data
        base = QColor(palette.color(QPalette.ColorRole.Base))
        base.setAlpha(215)  # slightly see-through: the legend stays readable over the curves
        plot.legend.setBrush(pg.mkBrush(base))
        plot.legend.setLabelTextColor(text)  # for entries to come; those present are told below
        for _, label in plot.legend.items:
            label.setText(label.text, color=text)


class ThemedPlot(pg.PlotWidget):
    """A PlotWidget on the palette's base colour that follows the palette when the scheme changes."""

    def __init__(
        self, x_label: str, y_label: str, parent: QWidget | None = None, percent: tuple[str, ...] = ()
    ) -> None:
        """`percent`: the axes ("left", "bottom") whose values are shares, labelled as percentages."""
        axes = {name: CompactAxis(name, percent=name in percent) for name in ("left", "bottom")}
        super().__init__(parent, axisItems=axes)
        self.setBackground(QApplication.palette().color(QPalette.ColorRole.Base))
        style_plot(self.getPlotItem(), x_label, y_label)
        self.setMinimumHeight(140)

    def add_header_legend(self) -> HeaderLegend:
        """A legend as a row above the data area (curves plotted with a name join it)."""
        self.setCentralItem(None)  # the plot moves into a layout under its legend
        cell, legend = legend_above(self.plotItem)
        self.setCentralItem(cell)
        return legend

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES and getattr(self, "plotItem", None) is not None:  # not while built
            self.setBackground(QApplication.palette().color(QPalette.ColorRole.Base))
            recolour(self.plotItem)


def accent_colour():
    """The palette's highlight colour, used for the main series."""
    return QApplication.palette().color(QPalette.ColorRole.Highlight)


def fit_rows(table: QTableWidget, most: int = 10) -> None:
    """A table exactly as tall as its header and rows (up to `most` rows, then it scrolls), so a layout never
    squeezes it to one or two rows."""
    rows = min(table.rowCount(), most)
    height = table.horizontalHeader().height() + sum(table.rowHeight(r) for r in range(rows))
    table.setFixedHeight(height + 2 * table.frameWidth() + 2)
