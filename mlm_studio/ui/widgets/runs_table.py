"""The pre-training runs of a folder as a sortable table: each run's state, progress and last evaluation with its
step; the run this window trains shows its live state and step."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from mlm_studio.core.durations import format_duration
from mlm_studio.core.runs.history import RunSummary, outcome

COLUMNS = ("Run", "State", "Step", "Val loss", "Val acc", "Val step", "Tokens", "Time")
HEADER_TIPS = {
    "Step": "Step of the latest checkpoint (what Resume and Export use)",
    "Val loss": "Validation loss at the last evaluation (its step in Val step)",
    "Val acc": "Masked-token accuracy on the validation blocks at the last evaluation (its step in Val step)",
    "Val step": "The step of the last evaluation: the validation figures are from it, not from the run's last step",
}
PATH_ROLE = Qt.ItemDataRole.UserRole
SORT_ROLE = Qt.ItemDataRole.UserRole + 1


class SortedItem(QTableWidgetItem):
    """A cell that sorts by its value, not its text."""

    def __init__(self, text: str, value: object) -> None:
        super().__init__(text)
        self.setData(SORT_ROLE, value)
        self.setFlags(self.flags() & ~Qt.ItemFlag.ItemIsEditable)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(SORT_ROLE), other.data(SORT_ROLE)
        try:
            return mine < theirs
        except TypeError:
            return str(mine) < str(theirs)


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
        self._summaries: dict[str, RunSummary] = {}  # by folder, as listed
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
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)

    def show_runs(self, runs: tuple[RunSummary, ...]) -> None:
        """List `runs` (the pre-training runs: fine-tuning runs are the Fine-tune panel's), keeping the selection:
        the rows of runs gone or changed are replaced, the others left as they are."""
        selected = self.selected_run()
        wanted = {str(summary.path): summary for summary in runs}
        self.setSortingEnabled(False)
        for row in reversed(range(self.rowCount())):
            path = self.item(row, 0).data(PATH_ROLE)
            if wanted.get(path) != self._summaries.get(path):
                self.removeRow(row)
                del self._summaries[path]
        for path, summary in wanted.items():
            if path not in self._summaries:
                self._add(summary)
        self.setSortingEnabled(True)
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
        row = self._row_of(ended) if ended is not None else None
        if row is not None:  # its cells as its files tell again
            listed = self.item(row, 0).data(PATH_ROLE)
            self.setSortingEnabled(False)
            self.removeRow(row)
            self._add(self._summaries[listed])
            self.setSortingEnabled(True)
        self._show_live()

    def _show_live(self) -> None:
        if self._live is None:
            return
        path, state, step, tokens, elapsed = self._live
        row = self._row_of(path)
        if row is None:
            return
        state_cell, step_cell = self.item(row, 1), self.item(row, 2)  # before an edit re-sorts the rows
        tokens_cell, time_cell = self.item(row, 6), self.item(row, 7)
        if tokens is not None:
            tokens_cell.setText(_tokens(tokens))
            tokens_cell.setData(SORT_ROLE, tokens)
        if elapsed is not None:
            time_cell.setText(format_duration(elapsed))
            time_cell.setData(SORT_ROLE, elapsed)
        checkpoint = step_cell.data(SORT_ROLE)
        state_cell.setText(state)
        state_cell.setData(SORT_ROLE, state)
        step_cell.setText(f"{step:,}")
        step_cell.setData(SORT_ROLE, step)
        step_cell.setToolTip(f"Step {step:,} trained; the latest checkpoint is step {checkpoint:,}")

    def _add(self, summary: RunSummary) -> None:
        row = self.rowCount()
        self.insertRow(row)
        self._summaries[str(summary.path)] = summary
        loss, accuracy, evaluated = summary.val_loss, summary.val_accuracy, summary.val_step
        cells = (
            SortedItem(summary.path.name, summary.modified),
            SortedItem(summary.state, summary.state),
            SortedItem(f"{summary.checkpoint_step:,}", summary.checkpoint_step),
            SortedItem(f"{loss:.3f}" if loss is not None else "–", loss if loss is not None else float("inf")),
            SortedItem(f"{accuracy:.1%}" if accuracy is not None else "–", accuracy or 0.0),
            SortedItem(f"{evaluated:,}" if evaluated is not None else "–", evaluated if evaluated is not None else -1),
            SortedItem(_tokens(summary.tokens_seen), summary.tokens_seen),
            SortedItem(format_duration(summary.elapsed) if summary.elapsed else "–", summary.elapsed),
        )
        cells[0].setData(PATH_ROLE, str(summary.path))
        changed = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.modified))
        cells[0].setToolTip(f"{summary.path.name}\n{summary.path}\npreset {summary.preset} · last change {changed}")
        cells[2].setToolTip(HEADER_TIPS["Step"])
        said = outcome(summary)
        said = said[:1].upper() + said[1:]
        for cell in cells[3:6]:
            cell.setToolTip(said)
        for column, cell in enumerate(cells):
            if column > 1:
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.setItem(row, column, cell)

    def summary(self, path: Path) -> RunSummary | None:
        """What the table read of `path` (None for a run it does not list)."""
        row = self._row_of(Path(path))
        return self._summaries[self.item(row, 0).data(PATH_ROLE)] if row is not None else None

    def selected_run(self) -> Path | None:
        rows = self.selectionModel().selectedRows()
        return Path(self.item(rows[0].row(), 0).data(PATH_ROLE)) if rows else None

    def select_run(self, path: Path) -> None:
        row = self._row_of(path)
        if row is not None:
            self.selectRow(row)

    def _row_of(self, path: Path) -> int | None:
        wanted = path.resolve()
        for row in range(self.rowCount()):
            if Path(self.item(row, 0).data(PATH_ROLE)).resolve() == wanted:
                return row
        return None


def _tokens(count: int) -> str:
    if count >= 1e9:
        return f"{count / 1e9:.2f} B"
    if count >= 1e6:
        return f"{count / 1e6:.1f} M"
    return f"{count / 1e3:.0f} k" if count else "–"
