"""The cloze probes a run scores at every evaluation, edited as a two-column table."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.errors import UserError
from mlm_studio.core.training.probes import Probe

DEFAULT_PROBES = (
    Probe("Return a [MASK] of the list.", "copy"),
    Probe("The [MASK] statement imports a module.", "import"),
    Probe("Raise an [MASK] if the value is invalid.", "exception"),
)


class ProbesEditor(QWidget):
    """Sentences with one [MASK] and the word expected there; blank rows are ignored."""

    changed = Signal()  # a probe was added, edited or removed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = QTableWidget(0, 2)
        self.table.itemChanged.connect(self._on_edited)
        self.table.model().rowsInserted.connect(self._on_edited)
        self.table.model().rowsRemoved.connect(self._on_edited)
        self.table.setHorizontalHeaderLabels(["Sentence with [MASK]", "Expected"])
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().hide()
        add = QPushButton("Add")
        remove = QPushButton("Remove")
        add.clicked.connect(lambda: self._add_row("The [MASK] is …", ""))
        remove.clicked.connect(lambda: self.table.removeRow(self.table.currentRow()))
        buttons = QHBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(remove)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Scored at every evaluation: the expected word's rank is plotted."))
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self.set_probes(list(DEFAULT_PROBES))

    def _on_edited(self, *_) -> None:
        self.changed.emit()

    def set_probes(self, probes: list[Probe]) -> None:
        self.table.setRowCount(0)
        for probe in probes:
            self._add_row(probe.text, probe.expected)

    def _add_row(self, text: str, expected: str) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.table.setItem(row, 0, QTableWidgetItem(text))
        self.table.setItem(row, 1, QTableWidgetItem(expected))

    def count(self) -> int:
        """How many rows hold a probe (filled in, right or not)."""
        rows = range(self.table.rowCount())
        return sum(any(self.table.item(r, c) and self.table.item(r, c).text().strip() for c in (0, 1)) for r in rows)

    def probes(self) -> list[Probe]:
        """The probes in the table; raises ValueError naming the first bad row."""
        probes = []
        for row in range(self.table.rowCount()):
            text, expected = (self.table.item(row, column) for column in (0, 1))
            text, expected = (item.text().strip() if item else "" for item in (text, expected))
            if not text and not expected:
                continue
            try:
                probes.append(Probe(text, expected))
            except UserError as exc:
                raise UserError(f"probe {row + 1}: {exc}") from None
        return probes
