"""How the Corpus panel reads its sources: text files split into paragraphs or lines, and the JSONL field and
table column that hold the text."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QWidget

from mlm_studio.core.data.corpus import ReadOptions

DEFAULTS = ReadOptions()
NAME_WIDTH = 120
MISSING_NAME = "QLineEdit { border: 1px solid #c0392b; }"


class ReadOptionsRow(QWidget):
    """Says `edited` once a choice is made or a name's editing is finished."""

    edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.unit_combo = QComboBox()
        self.unit_combo.addItem("one per paragraph", "paragraph")
        self.unit_combo.addItem("one per line", "line")
        self.unit_combo.setToolTip(
            "How .txt and .md files are split into documents: at blank lines (paragraphs) or at every line"
        )
        self.field_edit = QLineEdit(DEFAULTS.jsonl_field)
        self.field_edit.setToolTip("The JSON field that holds the text in .jsonl files")
        self.column_edit = QLineEdit(DEFAULTS.table_column)
        self.column_edit.setToolTip("The column that holds the text in .csv, .tsv, .parquet and .arrow files")
        self.unit_combo.currentIndexChanged.connect(lambda _index: self.edited.emit())
        for edit in (self.field_edit, self.column_edit):
            edit.setMaximumWidth(NAME_WIDTH)
            edit.textChanged.connect(self._mark_missing)
            edit.editingFinished.connect(self.edited)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Text files: documents"))
        layout.addWidget(self.unit_combo)
        layout.addSpacing(16)
        layout.addWidget(QLabel("JSONL field"))
        layout.addWidget(self.field_edit)
        layout.addSpacing(16)
        column_label = QLabel("Table column")
        column_label.setToolTip(self.column_edit.toolTip())
        layout.addWidget(column_label)
        layout.addWidget(self.column_edit)
        layout.addStretch(1)

    def options(self) -> ReadOptions:
        """The options as chosen, an emptied name read as the default one."""
        return ReadOptions(
            text_unit=self.unit_combo.currentData(),
            jsonl_field=self.field_edit.text().strip() or DEFAULTS.jsonl_field,
            table_column=self.column_edit.text().strip() or DEFAULTS.table_column,
        )

    def set_options(self, options: ReadOptions) -> None:
        self.unit_combo.setCurrentIndex(max(0, self.unit_combo.findData(options.text_unit)))
        self.field_edit.setText(options.jsonl_field)
        self.column_edit.setText(options.table_column)

    def _mark_missing(self) -> None:
        for edit in (self.field_edit, self.column_edit):
            edit.setStyleSheet("" if edit.text().strip() else MISSING_NAME)
