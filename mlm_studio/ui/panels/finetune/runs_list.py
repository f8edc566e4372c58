"""The Fine-tune panel's Runs tab: the fine-tuning runs in the runs folder (state, model, task, best validation
score named by its metric) and the comparisons (one row each, with their state and verdict), newest first; the
panel shows the selected run's results or reopens the selected comparison, and resumes a stopped run."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.finetune.comparisons import Comparison, comparisons
from mlm_studio.core.finetune.runs import FinetuneRun, finetune_runs
from mlm_studio.ui.widgets.elided_label import ElidedLabel
from mlm_studio.ui.widgets.runs_table import PATH_ROLE, SortedItem
from mlm_studio.ui.workspace import Workspace

COLUMNS = ("Run", "State", "Model", "Task", "Best validation score")
SCORE = COLUMNS.index("Best validation score")


class FinetuneRunsList(QWidget):
    """The runs and comparisons, with Resume for an interrupted or stopped run; `chosen` says the selected run's
    folder, `comparison_chosen` the selected comparison's."""

    chosen = Signal(object)  # the run folder
    comparison_chosen = Signal(object)  # the comparison's folder

    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        workspace.runs_changed.connect(self.refresh)
        self.label = ElidedLabel()
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
        self._comparisons: dict[str, Comparison] = {}
        self._idle = True

    @property
    def root(self) -> Path:
        return self.workspace.runs_root

    def refresh(self) -> None:
        """List the runs and comparisons again, keeping the selection."""
        selected = self.selected()
        runs, compared = finetune_runs(self.root), comparisons(self.root)
        self._runs = {str(run.path): run for run in runs}
        self._comparisons = {str(c.path): c for c in compared}
        names = {run.score_name for run in runs}
        one_name = names.pop() if len(names) == 1 else ""
        self.table.blockSignals(True)
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(runs) + len(compared))
        self.table.horizontalHeaderItem(SCORE).setText(f"Best validation {one_name or 'score'}")
        rows = [self._run_cells(run, one_name) for run in runs] + [self._comparison_cells(c) for c in compared]
        rows.sort(key=lambda row: row[1], reverse=True)  # newest first
        for row, (path, modified, cells) in enumerate(rows):
            cells[0].setData(PATH_ROLE, str(path))
            changed = time.strftime("%Y-%m-%d %H:%M", time.localtime(modified))
            cells[0].setToolTip(f"{path}\nlast change {changed}")
            cells[SCORE].setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            for column, item in enumerate(cells):
                self.table.setItem(row, column, item)
        self.table.setSortingEnabled(True)
        what = "Fine-tuning runs and comparisons" if compared else "Fine-tuning runs"
        self.label.setText(f"{what} in {self.root}" if rows else f"No fine-tuning runs in {self.root} yet.")
        if selected is not None:
            self.select(selected)
        self.table.blockSignals(False)
        self._enable()

    @staticmethod
    def _run_cells(run: FinetuneRun, one_name: str) -> tuple[Path, float, list[SortedItem]]:
        """A run's row; its score names its metric unless the header does for every row."""
        score = run.best_score
        text = "–" if score is None else f"{score:.1%}" if one_name else f"{score:.1%} {run.score_name}"
        cells = [
            SortedItem(run.path.name, -run.modified),
            SortedItem(run.state, run.state),
            SortedItem(run.model, run.model),
            SortedItem(run.task, run.task),
            SortedItem(text, -1.0 if score is None else score),
        ]
        cells[SCORE].setToolTip(f"The best validation {run.score_name}: the score that chose its best checkpoint")
        return run.path, run.modified, cells

    @staticmethod
    def _comparison_cells(comparison: Comparison) -> tuple[Path, float, list[SortedItem]]:
        """A comparison's row: its state and verdict; its test scores are on the Comparison tab."""
        state = f"comparison: {comparison.state}"
        if comparison.complete:
            state += f", {comparison.short_verdict}"
        cells = [
            SortedItem(comparison.path.name, -comparison.modified),
            SortedItem(state, state),
            SortedItem(comparison.model, comparison.model),
            SortedItem(comparison.task, comparison.task),
            SortedItem("–", -1.0),
        ]
        cells[1].setToolTip(comparison.verdict)
        cells[SCORE].setToolTip("A comparison's test scores, per contender and seed, are on the Comparison tab")
        return comparison.path, comparison.modified, cells

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
        if path is None:
            return
        if str(path) in self._comparisons:
            self.comparison_chosen.emit(path)
        else:
            self.chosen.emit(path)
