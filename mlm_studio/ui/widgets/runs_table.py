"""The pre-training runs of a folder as a sortable table: each run's state, progress and last evaluation with its
step; the run this window trains shows its live state and step. Runs form a tree: a branch is listed under the run
it branched from (its name indented), whichever column sorts them, its siblings sorted among themselves."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from mlm_studio.core.durations import format_duration
from mlm_studio.core.runs.history import RunSummary, outcome
from mlm_studio.core.training.branch_record import Branch
from mlm_studio.ui.runs_folder import RunsSnapshot

COLUMNS = ("Run", "State", "Step", "Val loss", "Val acc", "Val step", "Tokens", "Time")
HEADER_TIPS = {
    "Step": "Step of the latest checkpoint (what Resume and Export use)",
    "Val loss": "Validation loss at the last evaluation (its step in Val step)",
    "Val acc": "Masked-token accuracy on the validation blocks at the last evaluation (its step in Val step)",
    "Val step": "The step of the last evaluation: the validation figures are from it, not from the run's last step",
}
PATH_ROLE = Qt.ItemDataRole.UserRole
ADDED_PER_TURN = 50  # rows added in one turn of the event loop: a folder of hundreds fills without a stall
SORT_ROLE = Qt.ItemDataRole.UserRole + 1


class SortedItem(QTableWidgetItem):
    """A cell that sorts by its value, not its text."""

    def __init__(self, text: str = "", value: object = ()) -> None:
        super().__init__(text)
        self.setData(SORT_ROLE, value)
        self.setFlags(self.flags() & ~Qt.ItemFlag.ItemIsEditable)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(SORT_ROLE), other.data(SORT_ROLE)
        try:
            return mine < theirs
        except TypeError:
            return str(mine) < str(theirs)


class TreeItem(SortedItem):
    """A cell of a run in the tree: it sorts by the values of its run's lineage (the root run's first, its own last),
    so that a branch stays under its parent in either order."""

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(SORT_ROLE), other.data(SORT_ROLE)
        for a, b in zip(mine, theirs):
            if a != b:
                try:
                    return a < b
                except TypeError:
                    return str(a) < str(b)
        descending = self.tableWidget().horizontalHeader().sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
        return (len(mine) < len(theirs)) != descending  # the parent first either way


def newest_first(table: QTableWidget) -> None:
    """Sort `table` by its first column, whose cells sort by their run's last change, newest first, until the user
    clicks another column's header."""
    table.horizontalHeader().setSortIndicator(0, Qt.SortOrder.DescendingOrder)
    table.setSortingEnabled(True)


class RunsTable(QTableWidget):
    """One row per run, newest first; the selected run's folder is `selected_run()`. Long names lose their middle,
    so the date and the preset that tell runs apart stay visible."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self._live: tuple[Path, str, int] | None = None
        # by folder (its parent resolved): its row's cells (wherever sorting puts them), its lineage (the runs it
        # branched from, oldest first, then itself: what its row shows) and the branch it is, if one
        self._cells: dict[str, list[TreeItem]] = {}
        self._lineages: dict[str, list[RunSummary]] = {}
        self._branches: dict[str, Branch] = {}
        self._listing: RunsSnapshot | None = None
        self._more = QTimer(self)  # the next turn's rows of a listing of many new runs
        self._more.setSingleShot(True)
        self._more.timeout.connect(lambda: self._listing is not None and self.show_runs(self._listing))
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setHorizontalHeaderLabels(COLUMNS)
        for column, name in enumerate(COLUMNS):
            if name in HEADER_TIPS:
                self.horizontalHeaderItem(column).setToolTip(HEADER_TIPS[name])
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().hide()
        newest_first(self)
        self.setWordWrap(False)
        # the columns fit their contents when runs are added, and widen for a changed cell alone: a header that
        # resizes to its contents measures every row on every change
        self.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self._fit_columns()

    def show_runs(self, listing: RunsSnapshot) -> None:
        """List the pre-training runs of `listing` (fine-tuning runs are the Fine-tune panel's) as a tree, keeping the
        selection. Only the rows of runs added, gone or changed (or whose parent changed) are touched: a changed
        row is rewritten in place and moves to its sorted place alone; the table is sorted whole, and its columns
        fitted, only when runs are added or gone. Runs added are listed `ADDED_PER_TURN` in each turn of the event
        loop."""
        self._listing = listing
        selected = self.selected_run()
        wanted = {_key(summary.path): summary for summary in listing.pretraining.found}
        self._branches = {_key(path): branch for path, branch in listing.branches.items()}
        lineages = {key: _lineage(key, self._branches, wanted) for key in wanted}
        gone = self._cells.keys() - lineages.keys()
        for key in gone:
            self.removeRow(self._cells.pop(key)[0].row())
            del self._lineages[key]
        for key, lineage in lineages.items():
            if key in self._cells and lineage != self._lineages[key]:
                self._fill(key, lineage)
                self._widen(self._cells[key])
        waiting = [key for key in lineages if key not in self._cells]
        added = waiting[:ADDED_PER_TURN]
        if waiting[ADDED_PER_TURN:]:
            self._more.start(0)
        if added:
            self.setSortingEnabled(False)
            first = self.rowCount()
            self.setRowCount(first + len(added))
            for row, key in enumerate(added, start=first):
                self._add(row, key, lineages[key])
            self.setSortingEnabled(True)
        if added or gone:
            self._fit_columns()
        if selected is not None:
            self.select_run(selected)
        self._show_live()

    def set_live(
        self, path: Path | None, state: str = "", step: int = 0, tokens: int | None = None, elapsed: float | None = None
    ) -> None:
        """The run this window trains: its `state` (running, paused, stopping), `step`, and the `tokens` and
        `elapsed` seconds of its last logged step replace what its files tell (no ending yet, the latest
        checkpoint's step, the last evaluation's counts); None when no training runs (its row says what its files
        told again)."""
        ended = self._live[0] if self._live is not None and path is None else None
        self._live = (Path(path), state, step, tokens, elapsed) if path is not None else None
        key = _key(ended) if ended is not None else None
        if key in self._cells:  # its cells as its files tell again
            self._fill(key, self._lineages[key])
            self._widen(self._cells[key])
        self._show_live()

    def _show_live(self) -> None:
        if self._live is None:
            return
        path, state, step, tokens, elapsed = self._live
        key = _key(path)
        if key not in self._cells:
            return
        _, state_cell, step_cell, *_, tokens_cell, time_cell = self._cells[key]  # held: an edit may move the row
        if tokens is not None:
            _set_own(tokens_cell, _tokens(tokens), tokens)
        if elapsed is not None:
            _set_own(time_cell, format_duration(elapsed), elapsed)
        checkpoint = self._lineages[key][-1].checkpoint_step
        _set_own(state_cell, state, state)
        _set_own(step_cell, f"{step:,}", step)
        step_cell.setToolTip(f"Step {step:,} trained; the latest checkpoint is step {checkpoint:,}")
        self._widen(self._cells[key])

    def _fit_columns(self) -> None:
        """Every column but the first (which stretches) as wide as its widest cell or its header."""
        for column in range(1, len(COLUMNS)):
            self.resizeColumnToContents(column)

    def _widen(self, cells: list[TreeItem]) -> None:
        """Widen the columns (but the first, which stretches) that `cells`, one row's, no longer fit in."""
        header = self.horizontalHeader()
        for column, cell in enumerate(cells[1:], start=1):
            width = self.sizeHintForIndex(self.indexFromItem(cell)).width()
            if width > header.sectionSize(column):
                header.resizeSection(column, width)

    def _add(self, row: int, key: str, lineage: list[RunSummary]) -> None:
        """Row `row` (empty) for the run `key`, the last of `lineage` (the runs it branched from, in this folder,
        oldest first, then itself), which places it in the tree."""
        cells = [TreeItem() for _ in COLUMNS]
        self._cells[key] = cells
        self._fill(key, lineage)
        for column, cell in enumerate(cells):
            if column > 1:
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.setItem(row, column, cell)

    def _fill(self, key: str, lineage: list[RunSummary]) -> None:
        """Write what the run `key` (the last of `lineage`) is into its row's cells, where they are."""
        summary, branch, cells = lineage[-1], self._branches.get(key), self._cells[key]
        self._lineages[key] = lineage
        texts = _texts(summary)
        texts[0] = "   " * (len(lineage) - 2) + "↳ " + texts[0] if len(lineage) > 1 else texts[0]
        values = [_values(each) for each in lineage]
        for column, (cell, text) in enumerate(zip(cells, texts)):
            cell.setText(text)
            cell.setData(SORT_ROLE, tuple(each[column] for each in values))
        cells[0].setData(PATH_ROLE, str(summary.path))
        changed = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.modified))
        origin = f"\n{branch.said()[:1].upper()}{branch.said()[1:]}" if branch is not None else ""
        cells[0].setToolTip(
            f"{summary.path.name}\n{summary.path}\npreset {summary.preset} · last change {changed}{origin}"
        )
        cells[2].setToolTip(HEADER_TIPS["Step"])
        said = outcome(summary)
        said = said[:1].upper() + said[1:]
        for cell in cells[3:6]:
            cell.setToolTip(said)

    def summary(self, path: Path) -> RunSummary | None:
        """What the table read of `path` (None for a run it does not list)."""
        lineage = self._lineages.get(_key(path))
        return lineage[-1] if lineage is not None else None

    def selected_run(self) -> Path | None:
        rows = self.selectionModel().selectedRows()
        return Path(self.item(rows[0].row(), 0).data(PATH_ROLE)) if rows else None

    def select_run(self, path: Path) -> None:
        row = self._row_of(path)
        if row is not None:
            self.selectRow(row)

    def _row_of(self, path: Path) -> int | None:
        cells = self._cells.get(_key(path))
        return cells[0].row() if cells is not None else None


def _set_own(cell: QTableWidgetItem, text: str, value: object) -> None:
    """A run's cell saying `text` and sorting by `value` among its siblings (its lineage's values kept)."""
    cell.setText(text)
    cell.setData(SORT_ROLE, (*cell.data(SORT_ROLE)[:-1], value))


def _texts(summary: RunSummary) -> list[str]:
    """What a run's row says, column by column."""
    loss, accuracy, evaluated = summary.val_loss, summary.val_accuracy, summary.val_step
    return [
        summary.path.name,
        summary.state,
        f"{summary.checkpoint_step:,}",
        f"{loss:.3f}" if loss is not None else "–",
        f"{accuracy:.1%}" if accuracy is not None else "–",
        f"{evaluated:,}" if evaluated is not None else "–",
        _tokens(summary.tokens_seen),
        format_duration(summary.elapsed) if summary.elapsed else "–",
    ]


def _values(summary: RunSummary) -> list[object]:
    """What a run's row sorts by, column by column."""
    loss, evaluated = summary.val_loss, summary.val_step
    return [
        summary.modified,
        summary.state,
        summary.checkpoint_step,
        loss if loss is not None else float("inf"),
        summary.val_accuracy or 0.0,
        evaluated if evaluated is not None else -1,
        summary.tokens_seen,
        summary.elapsed,
    ]


def _key(path: str | Path) -> str:
    """A run's folder as the table knows it: its parent folder resolved, so that a branch's record names its parent
    alike (each parent resolved once: a folder's runs share one)."""
    path = Path(path)
    return os.path.join(_resolved(path.parent), path.name)


@functools.lru_cache(maxsize=256)
def _resolved(folder: Path) -> str:
    return str(folder.resolve())


def _lineage(key: str, branches: dict[str, Branch], summaries: dict[str, RunSummary]) -> list[RunSummary]:
    """The runs `key` branched from that the folder lists, oldest first, then itself."""
    chain = [key]
    while (branch := branches.get(chain[0])) is not None and (parent := _key(branch.parent)) in summaries:
        if parent in chain:
            break
        chain.insert(0, parent)
    return [summaries[each] for each in chain]


def _tokens(count: int) -> str:
    if count >= 1e9:
        return f"{count / 1e9:.2f} B"
    if count >= 1e6:
        return f"{count / 1e6:.1f} M"
    return f"{count / 1e3:.0f} k" if count else "–"
