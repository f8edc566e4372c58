"""The Training panel's Start, Pause and Stop, with why Start cannot beside them: they show what the panel's model
offers (`Controls`), in glyphs drawn in the scheme's button text colours."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QSizePolicy, QStyle, QWidget

from mlm_studio.ui.panels.training.model import Controls
from mlm_studio.ui.theme import PALETTE_CHANGES, ToneLabel, glyph_icon


class TrainingButtons(QWidget):
    """The panel connects the buttons to what they do, hands `show_controls` what they offer, and lays out
    `reason_label` where the row has room (it takes the room only while it says something)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.start_button = QPushButton("Start")
        self.pause_button = QPushButton("Pause")
        self.stop_button = QPushButton("Stop")
        self.reason_label = ToneLabel("warning")  # why Start is disabled
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for button in (self.start_button, self.pause_button, self.stop_button):
            button.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
            layout.addWidget(button)
        self._set_icons()

    def show_controls(self, controls: Controls) -> None:
        self.start_button.setEnabled(controls.start)
        self.start_button.setToolTip(controls.start_tip)
        self.reason_label.setText(controls.reason)
        self.reason_label.setVisible(bool(controls.reason))
        self.pause_button.setEnabled(controls.pause)
        self.pause_button.setText(controls.pause_text)
        self.pause_button.setToolTip(controls.pause_tip)
        self.stop_button.setEnabled(controls.stop)
        self.stop_button.setToolTip(controls.stop_tip)
        self._set_icons()

    def _set_icons(self) -> None:
        """Start, Pause (Play while it says Resume) and Stop glyphs, readable enabled or not."""
        pause = self.pause_button.text() == "Pause"
        for button, icon in (
            (self.start_button, QStyle.StandardPixmap.SP_MediaPlay),
            (self.pause_button, QStyle.StandardPixmap.SP_MediaPause if pause else QStyle.StandardPixmap.SP_MediaPlay),
            (self.stop_button, QStyle.StandardPixmap.SP_MediaStop),
        ):
            button.setIcon(glyph_icon(self.style().standardIcon(icon), self.palette()))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            self._set_icons()
