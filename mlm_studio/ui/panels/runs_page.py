"""The Training panel's Runs tab: the runs in a folder, with the buttons that act on the selected one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from mlm_studio.ui.widgets.runs_table import RunsTable
from mlm_studio.ui.workspace import Workspace


class RunsPage(QWidget):
    """The runs folder's table; the panel connects the buttons to what they do."""

    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        workspace.runs_changed.connect(self.refresh)
        self.table = RunsTable()
        self.open_button = QPushButton("Open")
        self.open_button.setToolTip("Show the selected run's curves")
        self.overlay_button = QPushButton("Overlay")
        self.overlay_button.setToolTip("Draw the selected run's curves over the current ones")
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip("Continue the selected run from its latest checkpoint")
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip(
            "Write the selected run's latest checkpoint as a Hugging Face folder (transformers loads it as is)"
        )
        self.folder_button = QPushButton("Folder…")
        self.folder_button.setToolTip("Choose the folder that holds the runs")
        self.folder_button.clicked.connect(self.choose_folder)
        self.label = QLabel()
        self.label.setWordWrap(True)
        buttons = QHBoxLayout()
        for button in (self.open_button, self.overlay_button, self.resume_button, self.export_button):
            buttons.addWidget(button)
        buttons.addWidget(self.folder_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)

    @property
    def root(self) -> Path:
        return self.workspace.runs_root

    def refresh(self) -> None:
        self.label.setText(f"Runs in {self.root}")
        self.table.show_runs(self.root)

    def selected(self) -> Path | None:
        return self.table.selected_run()

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder of runs", str(self.root))
        if folder:
            self.workspace.set_runs_root(Path(folder))  # every panel's lists follow

    def enable(self, idle: bool, exporting: bool) -> None:
        """The buttons that need a selected run, as the trainer (`idle`) and the exporter allow."""
        selected = self.selected() is not None
        self.open_button.setEnabled(selected)
        self.overlay_button.setEnabled(selected)
        self.resume_button.setEnabled(selected and idle)
        self.export_button.setEnabled(selected and not exporting)
