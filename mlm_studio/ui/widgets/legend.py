"""A plot's legend as a header row above its data area: entries side by side, wrapping onto more rows when the plot
is narrow, so a legend never covers a curve (pyqtgraph's own legend floats over the data)."""

from __future__ import annotations

import pyqtgraph as pg
from pyqtgraph.graphicsItems.ScatterPlotItem import drawSymbol
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QSizePolicy

SAMPLE = 22.0  # the width of an entry's line sample
GAP = 12.0  # between entries
NAME_CHARS = 26  # a longer name is shortened in the middle
SEPARATORS = "-_ ./:"


class HeaderLegend(pg.GraphicsWidget):
    """The names of a plot's curves, each after a sample of its pen and symbol; `PlotItem.addItem(name=…)` and
    `PlotItem.clear()` add and remove entries as they do pyqtgraph's legend."""

    def __init__(self, plot: pg.PlotItem, reserve_line: bool = False) -> None:
        super().__init__()
        self.plot = plot  # whose left axis the entries start after, so they line up with the data
        self.items: list[tuple[pg.PlotDataItem, str]] = []
        self.reserve_line = reserve_line  # keeps one line even when empty, so the plots of a grid line up
        self.font = QFont(QApplication.font())
        self.font.setPointSizeF(8)
        self.colour = QApplication.palette().color(QPalette.ColorRole.Text)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._fit()

    # --- the entries --------------------------------------------------------------------------------
    def add(self, item: pg.PlotDataItem, name: str, at: int | None = None) -> None:
        """`item` named `name`, last or at place `at`."""
        self.items.insert(len(self.items) if at is None else at, (item, name))
        self._fit()

    def remove(self, item: pg.PlotDataItem) -> None:
        self.items = [(i, name) for i, name in self.items if i is not item]
        self._fit()

    addItem = add  # noqa: N815 - the name pyqtgraph's PlotItem calls
    removeItem = remove  # noqa: N815 - the name pyqtgraph's PlotItem calls

    def rename(self, item: pg.PlotDataItem, name: str) -> None:
        self.items = [(i, name if i is item else old) for i, old in self.items]
        self._fit()

    def set_text_colour(self, colour: QColor) -> None:
        self.colour = QColor(colour)
        self.update()

    @property
    def names(self) -> list[str]:
        return [name for _, name in self.items]

    # --- layout -------------------------------------------------------------------------------------
    def entry_rects(self) -> list[QRectF]:
        """Where each entry is drawn, in the legend's coordinates: left to right, wrapping at its width."""
        metrics = QFontMetricsF(self.font)
        line = metrics.height() + 4
        left = self.plot.getAxis("left").width() if self.plot.getAxis("left").isVisible() else 0.0
        width = max(self.size().width(), 1.0)
        rects, x, y = [], left, 0.0
        for _, name in self.items:
            entry = SAMPLE + 4 + metrics.horizontalAdvance(name)
            if x > left and x + entry > width:
                x, y = left, y + line
            rects.append(QRectF(x, y, entry, line))
            x += entry + GAP
        return rects

    def _fit(self) -> None:
        rects = self.entry_rects()
        line = QFontMetricsF(self.font).height() + 4
        height = rects[-1].bottom() if rects else (line if self.reserve_line else 0.0)
        if height != self.minimumHeight():
            self.setMinimumHeight(height)
            self.setMaximumHeight(height)
        self.update()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.oldSize().width() != event.newSize().width():
            self._fit()

    # --- drawing ------------------------------------------------------------------------------------
    def paint(self, painter: QPainter, *_) -> None:
        painter.setFont(self.font)
        for (item, name), rect in zip(self.items, self.entry_rects()):
            middle = rect.center().y()
            opts = item.opts
            painter.setPen(pg.mkPen(opts["pen"]))
            painter.drawLine(QPointF(rect.left(), middle), QPointF(rect.left() + SAMPLE, middle))
            if opts.get("symbol") is not None:
                painter.save()
                painter.translate(rect.left() + SAMPLE / 2, middle)
                scatter = item.scatter.opts
                drawSymbol(painter, opts["symbol"], 6, pg.mkPen(scatter["pen"]), pg.mkBrush(scatter["brush"]))
                painter.restore()
            painter.setPen(self.colour)
            text = QRectF(rect.left() + SAMPLE + 4, rect.top(), rect.width() - SAMPLE - 4, rect.height())
            painter.drawText(text, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, name)


def legend_above(plot: pg.PlotItem, reserve_line: bool = False) -> tuple[pg.GraphicsLayout, HeaderLegend]:
    """`plot` under a header legend, as one layout item to place in a grid; curves plotted with a name join it."""
    legend = HeaderLegend(plot, reserve_line)
    cell = pg.GraphicsLayout()
    cell.setContentsMargins(0, 6, 0, 0)
    cell.setSpacing(0)
    cell.addItem(legend, row=0, col=0)
    cell.addItem(plot, row=1, col=0)
    plot.legend = legend
    return cell, legend


def distinct_names(names: list[str], limit: int = NAME_CHARS) -> list[str]:
    """Short names that still tell each other apart: what all of them begin with (up to a separator) is left out
    when a name is too long, then what is still too long is shortened in the middle."""
    if all(len(name) <= limit for name in names):
        return list(names)
    same = next((i for i, chars in enumerate(zip(*names)) if len(set(chars)) > 1), min(map(len, names)))
    common = names[0][:same] if len(names) > 1 else ""
    cut = max((common.rfind(s) for s in SEPARATORS), default=-1) + 1
    return [_shortened(f"…{name[cut:]}" if cut else name, limit) for name in names]


def _shortened(name: str, limit: int) -> str:
    if len(name) <= limit:
        return name
    half = (limit - 1) // 2
    return f"{name[:half]}…{name[-(limit - 1 - half) :]}"
