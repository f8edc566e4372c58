"""A one-line label that never widens its panel: where it is too narrow its text ends in "…", and its tooltip
holds the whole text."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class ElidedLabel(QLabel):
    """`text()` is the whole text; what shows is as much of it as fits, ending in "…" when cut."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._whole = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        """Show `text`, cut to the width with "…"; the whole text is the tooltip."""
        self._whole = text
        self.setToolTip(text)
        self._fit()

    def text(self) -> str:
        return self._whole

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(0, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self._whole) + margins.left() + margins.right() + 2 * self.margin()
        return QSize(width, super().sizeHint().height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        width = max(self.contentsRect().width() - 2 * self.margin(), 0)
        super().setText(self.fontMetrics().elidedText(self._whole, Qt.TextElideMode.ElideRight, width))
