"""The Fine-tune panel's Runs tab: the fine-tuning runs in the runs folder (state, model, task, best validation
score), newest first; the panel shows the selected one's results and resumes it."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.finetune.runs import FinetuneRun, finetune_runs
from mlm_studio.ui.widgets.runs_table import PATH_ROLE, SortedItem
from mlm_studio.ui.workspace import Workspace

COLUMNS = ("Run", "State", "Model", "Task", "Best val score")


class FinetuneRunsList(QWidget):
    """The runs, with Resume for an interrupted or stopped one; `chosen` says the selected run's folder."""

    chosen = Signal(object)  # the run folder

    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        workspace.runs_changed.connect(self.refresh)
        self.label = QLabel()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip("Continue the selected run from its latest checkpoint, exactly where it stopped")
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        buttons = QHBoxLayout()
        buttons.addWidget(self.label, 1)
        buttons.addWidget(self.refresh_button)
        buttons.addWidget(self.resume_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self._runs: dict[str, FinetuneRun] = {}
        self._idle = True

    @property
    def root(self) -> Path:
        return self.workspace.runs_root

    def refresh(self) -> None:
        """List the runs again, keeping the selection."""
        selected = self.selected()
        runs = finetune_runs(self.root)
        self._runs = {str(run.path): run for run in runs}
        self.table.blockSignals(True)
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(runs))
        for row, run in enumerate(runs):
            score = run.best_score
            cells = (
                SortedItem(run.path.name, -run.modified),
                SortedItem(run.state, run.state),
                SortedItem(run.model, run.model),
                SortedItem(run.task, run.task),
                SortedItem(f"{score:.1%}" if score is not None else "–", -1.0 if score is None else score),
            )
            cells[0].setData(PATH_ROLE, str(run.path))
            changed = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.modified))
            cells[0].setToolTip(f"{run.path}\nlast change {changed}")
            cells[4].setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            for column, item in enumerate(cells):
                self.table.setItem(row, column, item)
        self.table.setSortingEnabled(True)
        self.label.setText(f"Fine-tuning runs in {self.root}" if runs else f"No fine-tuning runs in {self.root} yet.")
        if selected is not None:
            self.select(selected)
        self.table.blockSignals(False)
        self._enable()

    def selected(self) -> Path | None:
        rows = self.table.selectionModel().selectedRows()
        return Path(self.table.item(rows[0].row(), 0).data(PATH_ROLE)) if rows else None

    def select(self, path: Path) -> None:
        for row in range(self.table.rowCount()):
            if Path(self.table.item(row, 0).data(PATH_ROLE)) == Path(path):
                self.table.selectRow(row)

    def set_idle(self, idle: bool) -> None:
        self._idle = idle
        self._enable()

    def _enable(self) -> None:
        path = self.selected()
        run = self._runs.get(str(path)) if path is not None else None
        self.resume_button.setEnabled(self._idle and run is not None and run.resumable)

    def _on_selection(self) -> None:
        self._enable()
        path = self.selected()
        if path is not None:
            self.chosen.emit(path)
