"""A splitter that lays its two parts side by side where its width holds them both at the widths they want, and
one above the other where it does not: a narrow window shows both whole rather than squashing one."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QSplitter, QWidget


class ReflowSplitter(QSplitter):
    """Side by side from `wide` pixels on (the first part's wanted width plus the second's minimum), else stacked.
    Its minimum width is the stacked one, so the window can narrow past the side-by-side layout."""

    def __init__(self, first_width: int | None = None, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.first_width = first_width  # what the first part needs beside the second; None: its minimum

    def wide(self) -> int:
        """The narrowest width that shows both parts side by side (the second only where it is shown)."""
        if self.count() < 2 or self.widget(1).isHidden():
            return 0
        first = self.first_width if self.first_width is not None else self.widget(0).minimumSizeHint().width()
        return first + self.widget(1).minimumSizeHint().width() + self.handleWidth()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        widths = [
            self.widget(i).minimumSizeHint().width() for i in range(self.count()) if not self.widget(i).isHidden()
        ]
        return QSize(max(widths, default=0), super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:
        side_by_side = event.size().width() >= self.wide()
        self.setOrientation(Qt.Orientation.Horizontal if side_by_side else Qt.Orientation.Vertical)
        super().resizeEvent(event)
