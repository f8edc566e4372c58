"""A wrapping row of token chips, each with its own colour and tooltip."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from mlm_studio.ui.theme import readable_on

PADDING_X = 4
PADDING_Y = 2
GAP = 3
LINE_GAP = 4
ADVANCES_KEPT = 65_536  # texts whose measured widths are remembered, across views, before the memory starts over

_advances: dict[str, dict[str, int]] = {}  # font → text → width in pixels: pieces repeat across views


@dataclass(frozen=True)
class TokenCell:
    """One chip: its text, its background (None for plain text), and its tooltip."""

    text: str
    background: QColor | None = None
    tooltip: str = ""
    muted: bool = False


def text_widths(font: QFont, texts: list[str]) -> list[int]:
    """Each text's width in `font`, measured once per font and text (a window of samples shows the same pieces
    thousands of times, and measuring is most of what showing them costs)."""
    known = _advances.setdefault(font.key(), {})
    if len(known) > ADVANCES_KEPT:
        known.clear()
    metrics, widths = None, []
    for text in texts:
        width = known.get(text)
        if width is None:
            metrics = metrics or QFontMetrics(font)
            width = known[text] = metrics.horizontalAdvance(text)
        widths.append(width)
    return widths


class TokenView(QWidget):
    """Lays out token chips left to right, wrapping at the widget's width. Each chip's width is measured once (a
    layout asks the height for many widths: a window of samples would measure thousands of texts each time)."""

    clicked = Signal(int)  # the index of the chip clicked

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.cells: list[TokenCell] = []
        self._rects: list[QRect] = []
        self._rects_width = -1  # the width `_rects` were laid out for
        self._widths: list[int] = []
        self._heights: dict[int, int] = {}  # by width
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setMouseTracking(True)

    def set_cells(self, cells: list[TokenCell]) -> None:
        self.cells = list(cells)
        self._measure()
        self.updateGeometry()
        self.update()

    # --- geometry -----------------------------------------------------------------------------------
    def _measure(self) -> None:
        self._widths = [width + 2 * PADDING_X for width in text_widths(self.font(), [cell.text for cell in self.cells])]
        self._heights.clear()
        self._rects_width = -1

    def _layout(self, width: int) -> list[QRect]:
        height = QFontMetrics(self.font()).height() + 2 * PADDING_Y
        return [
            QRect(x, line * (height + LINE_GAP), w, height) for (x, line), w in zip(self._places(width), self._widths)
        ]

    def _places(self, width: int) -> list[tuple[int, int]]:
        """Each chip's left edge and line number when the chips wrap at `width`."""
        x = line = 0
        places = []
        for w in self._widths:
            if x > 0 and x + w > width:
                x, line = 0, line + 1
            places.append((x, line))
            x += w + GAP
        return places

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        if width not in self._heights:
            lines = self._places(max(width, 1))[-1][1] + 1 if self._widths else 0
            height = QFontMetrics(self.font()).height() + 2 * PADDING_Y
            self._heights[width] = lines * height + max(0, lines - 1) * LINE_GAP
        return self._heights[width]

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.FontChange:
            self._measure()
            self.updateGeometry()
        super().changeEvent(event)

    def sizeHint(self) -> QSize:
        return QSize(400, self.heightForWidth(max(self.width(), 400)))

    def _placed(self) -> list[QRect]:
        """The chips' rectangles at the present width (laid out when first asked at this width)."""
        if self._rects_width != self.width():
            self._rects, self._rects_width = self._layout(max(self.width(), 1)), self.width()
        return self._rects

    def cell_at(self, point: QPoint) -> int:
        """The index of the chip under `point`, or -1."""
        return next((i for i, rect in enumerate(self._placed()) if rect.contains(point)), -1)

    def cell_rect(self, index: int) -> QRect:
        return self._placed()[index]

    # --- painting and tooltips ----------------------------------------------------------------------
    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        for cell, rect in zip(self.cells, self._placed()):
            if cell.background is not None:
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(cell.background)
                painter.drawRoundedRect(rect, 4, 4)
                painter.setPen(readable_on(cell.background))
            else:
                role = QPalette.ColorRole.PlaceholderText if cell.muted else QPalette.ColorRole.Text
                painter.setPen(palette.color(role))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, cell.text)

    def mousePressEvent(self, event) -> None:
        index = self.cell_at(event.position().toPoint())
        if index >= 0:
            self.clicked.emit(index)
        super().mousePressEvent(event)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            index = self.cell_at(event.pos())
            if index >= 0 and self.cells[index].tooltip:
                QToolTip.showText(event.globalPos(), self.cells[index].tooltip, self, self.cell_rect(index))
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)
