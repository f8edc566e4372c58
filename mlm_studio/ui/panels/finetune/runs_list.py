"""The Fine-tune panel's Runs tab: the fine-tuning runs in the runs folder (state, model, task, best validation
score named by its metric), the comparisons and the recipe searches (one row each, with their state and verdict),
newest first; the panel shows the selected run's results or reopens the selected comparison or search, and resumes
a stopped run or search. The folders left out (a damaged or foreign record in them) are said under the table, each
with why."""

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

from mlm_studio.core.finetune.comparisons import Comparison
from mlm_studio.core.finetune.recipe.result import RecipeSearch
from mlm_studio.core.finetune.runs import FinetuneRun
from mlm_studio.ui.widgets.elided_label import ElidedLabel
from mlm_studio.ui.widgets.runs_table import PATH_ROLE, SortedItem, newest_first
from mlm_studio.ui.workspace import Workspace

COLUMNS = ("Run", "State", "Model", "Task", "Best validation score")
SCORE = COLUMNS.index("Best validation score")


class FinetuneRunsList(QWidget):
    """The runs, comparisons and searches, with Resume for an interrupted or stopped run or search; `chosen` says
    the selected run's folder, `comparison_chosen` the selected comparison's, `search_chosen` the search's."""

    chosen = Signal(object)  # the run folder
    comparison_chosen = Signal(object)  # the comparison's folder
    search_chosen = Signal(object)  # the search's folder

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
        newest_first(self.table)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip(
            "Continue the selected run from its latest checkpoint, exactly where it stopped (a search: with its "
            "next run)"
        )
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(workspace.runs_updated)  # the list follows once it is read
        buttons = QHBoxLayout()
        buttons.addWidget(self.label, 1)
        buttons.addWidget(self.refresh_button)
        buttons.addWidget(self.resume_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self._runs: dict[str, FinetuneRun] = {}
        self._comparisons: dict[str, Comparison] = {}
        self._searches: dict[str, RecipeSearch] = {}
        self._idle = True
        self._listed: tuple = ()  # the folder and what it listed, as the table shows them

    @property
    def root(self) -> Path:
        return self.workspace.runs_root

    def refresh(self) -> None:
        """List the runs, comparisons and searches again, keeping the selection (left as they are when the folder
        lists the same)."""
        runs = self.workspace.runs  # read off the GUI thread, for every panel
        listed = runs.finetuning, runs.comparisons, runs.searches
        if (runs.root, runs.read, *listed) == self._listed:
            return
        self._listed = (runs.root, runs.read, *listed)
        selected, read = self.selected(), runs.read
        (runs, compared, searched), left_out = (x.found for x in listed), [y for x in listed for y in x.left_out]
        self._runs = {str(run.path): run for run in runs}
        self._comparisons = {str(c.path): c for c in compared}
        self._searches = {str(s.path): s for s in searched}
        names = {run.score_name for run in runs}
        one_name = names.pop() if len(names) == 1 else ""
        self.table.blockSignals(True)
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(runs) + len(compared) + len(searched))
        self.table.horizontalHeaderItem(SCORE).setText(f"Best validation {one_name or 'score'}")
        rows = [self._run_cells(run, one_name) for run in runs] + [self._comparison_cells(c) for c in compared]
        rows += [self._search_cells(found) for found in searched]
        for row, (path, modified, cells) in enumerate(rows):
            cells[0].setData(PATH_ROLE, str(path))
            changed = time.strftime("%Y-%m-%d %H:%M", time.localtime(modified))
            cells[0].setToolTip(f"{path}\nlast change {changed}")
            cells[SCORE].setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            for column, item in enumerate(cells):
                self.table.setItem(row, column, item)
        self.table.setSortingEnabled(True)
        kinds = ["comparisons"] * bool(compared) + ["recipe searches"] * bool(searched)
        what = f"Fine-tuning runs and {' and '.join(kinds)}" if kinds else "Fine-tuning runs"
        said = f"{what} in {self.root}" if rows else f"No fine-tuning runs in {self.root} yet."
        said = said if read else f"Reading the runs folder {self.root}…"
        if left_out:  # the label's tooltip says it whole
            said += f"; left out, as they cannot be read: {'; '.join(left.said() for left in left_out)}"
        self.label.setText(said)
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
            SortedItem(run.path.name, run.modified),
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
            SortedItem(comparison.path.name, comparison.modified),
            SortedItem(state, state),
            SortedItem(comparison.model, comparison.model),
            SortedItem(comparison.task, comparison.task),
            SortedItem("–", -1.0),
        ]
        cells[1].setToolTip(comparison.verdict)
        cells[SCORE].setToolTip("A comparison's test scores, per contender and seed, are on the Comparison tab")
        return comparison.path, comparison.modified, cells

    @staticmethod
    def _search_cells(found: RecipeSearch) -> tuple[Path, float, list[SortedItem]]:
        """A search's row: its state and chosen recipe; its table is on the Recipe tab."""
        chosen = found.chosen
        state = f"recipe search: {found.state}"
        if chosen is not None:
            epochs = found.plan.max_epochs
            state += f", chose lr {chosen.learning_rate:g} over {epochs} epoch{'s' * (epochs != 1)}"
        score = f"{chosen.mean:.1%} {found.score_name}" if chosen is not None else "–"
        cells = [
            SortedItem(found.path.name, found.modified),
            SortedItem(state, state),
            SortedItem(found.model_name, found.model_name),
            SortedItem(found.task, found.task),
            SortedItem(score, chosen.mean if chosen is not None else -1.0),
        ]
        cells[1].setToolTip(found.verdict)
        cells[SCORE].setToolTip("The chosen recipe's mean validation score; every candidate's is on the Recipe tab")
        return found.path, found.modified, cells

    def selected(self) -> Path | None:
        rows = self.table.selectionModel().selectedRows()
        return Path(self.table.item(rows[0].row(), 0).data(PATH_ROLE)) if rows else None

    def select(self, path: Path) -> None:
        for row in range(self.table.rowCount()):
            if Path(self.table.item(row, 0).data(PATH_ROLE)) == Path(path):
                self.table.selectRow(row)

    def set_idle(self, idle: bool) -> None:
        """While a run trains the panel shows it: no row can be chosen, and none stays highlighted."""
        self._idle = idle
        if not idle:
            self.table.clearSelection()
        single, none = QAbstractItemView.SelectionMode.SingleSelection, QAbstractItemView.SelectionMode.NoSelection
        self.table.setSelectionMode(single if idle else none)
        self.table.setToolTip("" if idle else "A run is training: the panel shows it; choose a run here when it ends")
        self._enable()

    def _enable(self) -> None:
        path = self.selected()
        run = self._runs.get(str(path)) if path is not None else None
        found = self._searches.get(str(path)) if path is not None else None
        resumable = (run is not None and run.resumable) or (found is not None and not found.complete)
        self.resume_button.setEnabled(self._idle and resumable)

    def is_search(self, path: Path) -> bool:
        return str(path) in self._searches

    def _on_selection(self) -> None:
        self._enable()
        path = self.selected()
        if path is None:
            return
        if str(path) in self._comparisons:
            self.comparison_chosen.emit(path)
        elif str(path) in self._searches:
            self.search_chosen.emit(path)
        else:
            self.chosen.emit(path)
