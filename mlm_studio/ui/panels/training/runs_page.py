"""The Training panel's Runs tab: the runs in a folder, with the buttons that act on the selected one, each enabled
only where it works on that run (and saying why not, as the panel's model tells)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from mlm_studio.ui.widgets.elided_label import ElidedLabel
from mlm_studio.ui.widgets.runs_table import RunsTable
from mlm_studio.ui.workspace import Workspace

VISIBLE_ROWS = 4  # the fewest runs the table shows however low the window


TIPS = {  # what each button does, said while it can
    "open": "Show the selected run's curves and outcome",
    "overlay": "Draw the selected run's curves over the shown ones, in every plot it has values for",
    "resume": "Continue the selected run from its latest checkpoint",
    "export": "Write the selected run's latest checkpoint as a Hugging Face folder (transformers loads it as is)",
    "branch": "Start a new run from a checkpoint of the selected run, with settings changed and batches skipped",
}


class RunsPage(QWidget):
    """The runs folder's table; the panel connects the buttons to what they do."""

    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        workspace.runs_changed.connect(self.refresh)
        self.table = RunsTable()
        self.open_button = QPushButton("Open")
        self.overlay_button = QPushButton("Overlay")
        self.resume_button = QPushButton("Resume")
        self.export_button = QPushButton("Export…")
        self.branch_button = QPushButton("Branch from here…")
        self.folder_button = QPushButton("Folder…")
        self.folder_button.setToolTip("Choose the folder that holds the runs")
        self.folder_button.clicked.connect(self.choose_folder)
        self.label = ElidedLabel()  # beside the buttons: the table keeps the height
        buttons = QHBoxLayout()
        for button in (self.open_button, self.overlay_button, self.resume_button, self.export_button):
            buttons.addWidget(button)
        buttons.addWidget(self.branch_button)
        buttons.addWidget(self.label, 1)
        buttons.addWidget(self.folder_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)

    @property
    def root(self) -> Path:
        return self.workspace.runs_root

    def refresh(self) -> None:
        runs = self.workspace.runs
        self.label.setText(f"Runs in {self.root}" if runs.read else f"Reading the runs folder {self.root}…")
        self.table.show_runs(runs)
        table = self.table
        rows = VISIBLE_ROWS * table.verticalHeader().defaultSectionSize()
        table.setMinimumHeight(table.horizontalHeader().sizeHint().height() + rows + 2 * table.frameWidth())

    def selected(self) -> Path | None:
        return self.table.selected_run()

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder of runs", str(self.root))
        if folder:
            self.workspace.set_runs_root(Path(folder))  # every panel's lists follow

    def enable(self, why_not: dict[str, str]) -> None:
        """Each button that acts on the selected run enabled where `why_not` (the panel's model's, by button) says
        nothing; a disabled button's tooltip says why."""
        for key, button in (
            ("open", self.open_button),
            ("overlay", self.overlay_button),
            ("resume", self.resume_button),
            ("export", self.export_button),
            ("branch", self.branch_button),
        ):
            button.setEnabled(not why_not[key])
            button.setToolTip(why_not[key] or TIPS[key])
