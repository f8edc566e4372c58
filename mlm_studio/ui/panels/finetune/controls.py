"""The Fine-tune panel's controls under the form: Start, Search recipe, Compare and its seeds, Pause, Stop, Export…
on one line, the bar and the status line on the next, each enabled as the trainer's state allows."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QSpinBox, QVBoxLayout

from mlm_studio.core.runs.control import IDLE, PAUSED, RUNNING
from mlm_studio.ui.widgets.elided_label import ElidedLabel

SEEDS = 3  # a comparison's seeds by default: the fewest that give a spread


class ControlRow(QVBoxLayout):
    """The buttons, then the bar and the status line (a line of their own keeps the panel narrow); the panel
    connects the buttons."""

    def __init__(self) -> None:
        super().__init__()
        self.start_button = QPushButton("Start")
        self.search_button = QPushButton("Search recipe")  # beside Start: its results fill the Recipe tab
        self.compare_button = QPushButton("Compare")
        self.seeds = QSpinBox()
        self.seeds.setRange(SEEDS, 20)
        self.seeds.setValue(SEEDS)
        self.seeds.setSuffix(" seeds")
        self.seeds.setToolTip("The seeds each contender of a comparison is fine-tuned with (at least 3, for a spread)")
        self.pause_button = QPushButton("Pause")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop after this step; the test examples are scored with the best weights")
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Write the fine-tuned classifier as a Hugging Face folder, with its labels")
        self.progress_bar = QProgressBar()
        keep_room = self.progress_bar.sizePolicy()
        keep_room.setRetainSizeWhenHidden(True)  # shown once a run starts, it never widens the panel
        self.progress_bar.setSizePolicy(keep_room)
        self.status_label = ElidedLabel()  # never widens the panel: cut with "…", the whole line its tooltip
        buttons, progress = QHBoxLayout(), QHBoxLayout()
        for button in (self.start_button, self.search_button, self.compare_button, self.seeds, self.pause_button):
            buttons.addWidget(button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.export_button)
        buttons.addStretch(1)
        progress.addWidget(self.progress_bar, 1)
        progress.addWidget(self.status_label, 2)
        self.addLayout(buttons)
        self.addLayout(progress)

    def say(self, text: str, detail: str = "") -> None:
        """The status line; its whole text (or `detail`) also as its tooltip, for when the window is too narrow."""
        self.status_label.setText(text)
        if detail:
            self.status_label.setToolTip(detail)

    def say_progress(self, done: int, total: int, message: str) -> None:
        """Where the work before a run (or a validation's scoring) has come, and what it is doing."""
        self.show_progress(done, total)
        self.say(message)

    def show_progress(self, done: int, total: int) -> None:
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(done)

    def set_state(self, state: str, can_start: bool, exportable: bool) -> None:
        """What each button allows in the trainer's `state` (`can_start`: a model is chosen)."""
        idle = state == IDLE
        self.start_button.setEnabled(idle and can_start)
        self.compare_button.setEnabled(idle and can_start)
        self.search_button.setEnabled(idle and can_start)
        self.seeds.setEnabled(idle)
        self.pause_button.setEnabled(state in (RUNNING, PAUSED))
        self.pause_button.setText("Resume" if state == PAUSED else "Pause")
        self.stop_button.setEnabled(not idle)
        self.progress_bar.setVisible(not idle or self.progress_bar.value() > 0)  # an empty idle bar reads as a field
        self.export_button.setEnabled(idle and exportable)
