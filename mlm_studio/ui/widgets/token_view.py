"""A wrapping row of token chips, each with its own colour and tooltip."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from mlm_studio.ui.theme import readable_on

PADDING_X = 4
PADDING_Y = 2
GAP = 3
LINE_GAP = 4


@dataclass(frozen=True)
class TokenCell:
    """One chip: its text, its background (None for plain text), and its tooltip."""

    text: str
    background: QColor | None = None
    tooltip: str = ""
    muted: bool = False


class TokenView(QWidget):
    """Lays out token chips left to right, wrapping at the widget's width."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cells: list[TokenCell] = []
        self._rects: list[QRect] = []
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setMouseTracking(True)

    def set_cells(self, cells: list[TokenCell]) -> None:
        self.cells = list(cells)
        self._rects = self._layout(self.width())
        self.updateGeometry()
        self.update()

    # --- geometry -----------------------------------------------------------------------------------
    def _layout(self, width: int) -> list[QRect]:
        metrics = QFontMetrics(self.font())
        height = metrics.height() + 2 * PADDING_Y
        x = y = 0
        rects = []
        for cell in self.cells:
            w = metrics.horizontalAdvance(cell.text) + 2 * PADDING_X
            if x > 0 and x + w > max(width, 1):
                x = 0
                y += height + LINE_GAP
            rects.append(QRect(x, y, w, height))
            x += w + GAP
        return rects

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        rects = self._layout(width)
        return rects[-1].bottom() + 1 if rects else 0

    def sizeHint(self) -> QSize:
        return QSize(400, self.heightForWidth(max(self.width(), 400)))

    def resizeEvent(self, event) -> None:
        self._rects = self._layout(self.width())
        super().resizeEvent(event)

    def cell_at(self, point: QPoint) -> int:
        """The index of the chip under `point`, or -1."""
        return next((i for i, rect in enumerate(self._rects) if rect.contains(point)), -1)

    def cell_rect(self, index: int) -> QRect:
        return self._rects[index]

    # --- painting and tooltips ----------------------------------------------------------------------
    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        for cell, rect in zip(self.cells, self._rects):
            if cell.background is not None:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(cell.background)
                painter.drawRoundedRect(rect, 4, 4)
                painter.setPen(readable_on(cell.background))
            else:
                role = QPalette.ColorRole.PlaceholderText if cell.muted else QPalette.ColorRole.Text
                painter.setPen(palette.color(role))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, cell.text)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            index = self.cell_at(event.pos())
            if index >= 0 and self.cells[index].tooltip:
                QToolTip.showText(event.globalPos(), self.cells[index].tooltip, self, self._rects[index])
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)
