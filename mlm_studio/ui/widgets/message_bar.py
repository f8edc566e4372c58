"""An inline bar that tells the user what happened, in place of dialogs and tracebacks."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QStyle, QToolButton, QWidget

_LEVELS = {
    "info": (QStyle.StandardPixmap.SP_MessageBoxInformation, "#2f6fb3"),
    "warning": (QStyle.StandardPixmap.SP_MessageBoxWarning, "#b7791f"),
    "error": (QStyle.StandardPixmap.SP_MessageBoxCritical, "#c0392b"),
}


class MessageBar(QFrame):
    """Hidden until `show_message`; the user closes it with its × button."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.level = ""
        self._border = QColor()
        self._icon = QLabel()
        self._text = QLabel()
        self._text.setWordWrap(True)
        self._text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.clear)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.addWidget(self._icon)
        layout.addWidget(self._text, 1)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    @property
    def text(self) -> str:
        return self._text.text() if self.isVisibleTo(self.parentWidget()) else ""

    def show_message(self, text: str, level: str = "error") -> None:
        icon, colour = _LEVELS[level]
        self.level = level
        size = self.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
        self._icon.setPixmap(self.style().standardIcon(icon).pixmap(size, size))
        self._text.setText(text)
        self._border = QColor(colour)
        self.update()
        self.show()

    def paintEvent(self, event) -> None:
        """A rounded border in the level's colour, drawn rather than styled: a style sheet would keep the palette
        it was polished with, and the text would stay dark after a switch to the dark scheme."""
        super().paintEvent(event)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(self._border, 1))
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4)

    def clear(self) -> None:
        self.level = ""
        self._text.clear()
        self.hide()
