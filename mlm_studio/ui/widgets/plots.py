"""pyqtgraph plots that follow the application palette, so they read well in light and dark themes."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QWidget

pg.setConfigOptions(antialias=False)


def themed_plot(x_label: str, y_label: str, parent: QWidget | None = None) -> pg.PlotWidget:
    """A PlotWidget with the palette's base and text colours, a light grid and labelled axes."""
    palette = QApplication.palette()
    plot = pg.PlotWidget(parent, background=palette.color(QPalette.ColorRole.Base))
    text = palette.color(QPalette.ColorRole.Text)
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setPen(pg.mkPen(text))
        axis.setTextPen(pg.mkPen(text))
        axis.enableAutoSIPrefix(False)
    plot.setLabel("bottom", x_label, color=text.name())
    plot.setLabel("left", y_label, color=text.name())
    plot.showGrid(x=True, y=True, alpha=0.15)
    plot.setMenuEnabled(False)
    plot.setMinimumHeight(140)
    return plot


def accent_colour():
    """The palette's highlight colour, used for the main series."""
    return QApplication.palette().color(QPalette.ColorRole.Highlight)
