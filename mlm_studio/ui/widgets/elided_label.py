"""A one-line label that never wraps or widens its row: a text too long for its width ends in "…"; its tooltip
says it whole. And a combo box whose chosen entry, too long for the box, ends in "…" the same way."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import (
    QComboBox,
    QLabel,
    QSizePolicy,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QWidget,
)

ELLIPSIS = "…"


class ElidedLabel(QLabel):
    """`text()` is the whole text; what shows is as many of its words as the width holds. It asks for the whole
    text's width and needs none: its row sets its width, never the other way round."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._whole = ""
        self.setTextFormat(Qt.TextFormat.PlainText)  # a run's or a file's name shows as named, never as markup
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self._whole = text
        self._elide()

    def text(self) -> str:
        return self._whole

    def shown_text(self) -> str:
        """What the label shows: the text, or its beginning and "…"."""
        return super().text()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(0, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self._whole) + margins.left() + margins.right() + 2 * self.margin()
        return QSize(width, super().sizeHint().height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(self.contentsRect().width() - 2 * self.margin(), 1)
        shown = self.fontMetrics().elidedText(self._whole, Qt.TextElideMode.ElideRight, width)
        if shown != self._whole:  # cut between words: a number cut short would read as another number
            kept = shown.removesuffix(ELLIPSIS)
            if not self._whole[len(kept) : len(kept) + 1].isspace() and " " in kept:
                kept = kept[: kept.rindex(" ")]
            shown = kept.rstrip(" ,;:·") + ELLIPSIS
        super().setText(shown)
        self.setToolTip(self._whole)


class ElidedComboBox(QComboBox):
    """A combo box that shows its chosen entry as much as the box holds, ending in "…" where it is cut (a plain one
    cuts it mid-word with no sign); its list shows every entry whole."""

    def shown_text(self) -> str:
        """What the box shows of its chosen entry: the whole text, or its beginning and "…"."""
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        field = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, self
        )
        return self.fontMetrics().elidedText(self.currentText(), Qt.TextElideMode.ElideRight, field.width())

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        option.currentText = self.shown_text()
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)
