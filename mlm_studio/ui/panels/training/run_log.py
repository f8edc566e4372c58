"""The Training panel's Log tab: what its trainings did, each line with the time it was said."""

from __future__ import annotations

import time

from PySide6.QtWidgets import QPlainTextEdit, QWidget


class RunLog(QPlainTextEdit):
    """Read-only, its oldest lines dropped past `MOST_LINES`."""

    MOST_LINES = 5000

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(self.MOST_LINES)

    def say(self, text: str) -> None:
        self.appendPlainText(f"{time.strftime('%H:%M:%S')}  {text}")
