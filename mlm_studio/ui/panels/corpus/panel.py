"""Corpus panel: add files and folders (dialog or drag & drop), see what loaded and why not, stats, samples."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.data.builtin_corpus import builtin_corpus_location, ensure_builtin_corpus
from mlm_studio.core.data.corpus import Corpus, ReadOptions, SourceReport, load_corpus
from mlm_studio.core.data.formats import SUFFIXES
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.hub_cache import PREFIX as HUB_PREFIX
from mlm_studio.ui.panels.corpus.tokenizer_section import TokenizerSection
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.plots import ThemedPlot, accent_colour
from mlm_studio.ui.widgets.reflow_splitter import ReflowSplitter
from mlm_studio.ui.workspace import Workspace

BUILTIN_LABEL = "Python documentation (built-in)"
COLUMNS = ("Source", "Type", "Status", "Documents", "Words", "Encoding", "Problems")
FILE_FILTER = f"Corpora ({' '.join('*' + ext for ext in SUFFIXES)});;All files (*)"
ISSUES_SHOWN = 20
LENGTHS_AXIS = "words per document"
STATISTICS_WIDTH = 340  # the totals and histogram read whole from this width; narrower, they go above the tokenizer


class CorpusPanel(QWidget):
    """Builds the workspace corpus from the user's sources; the scan runs in the background."""

    loading_finished = Signal()

    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        self.paths: list[Path] = []
        self.runner = TaskRunner(self)
        self.runner.progress.connect(self._on_progress)
        self.runner.succeeded.connect(self._on_loaded)
        self.runner.failed.connect(self._on_failed)
        self.runner.cancelled.connect(self._on_cancelled)
        self.runner.finished.connect(self._on_finished)
        self.setAcceptDrops(True)
        self._build()
        self._update_buttons()

    # --- layout -------------------------------------------------------------------------------------
    def _build(self) -> None:
        style = self.style()
        self.add_files_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_FileIcon), "Add files…")
        self.add_folder_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_DirIcon), "Add folder…")
        self.hub_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_DriveNetIcon), "Hub dataset…")
        self.hub_button.setToolTip(
            "A Hugging Face Hub dataset already on this machine, by its name (org/name); nothing is downloaded"
        )
        self.hub_button.clicked.connect(self.add_hub_dialog)
        self.remove_button = QPushButton(style.standardIcon(QStyle.StandardPixmap.SP_TrashIcon), "Remove")
        self.builtin_button = QPushButton(
            style.standardIcon(QStyle.StandardPixmap.SP_DriveHDIcon), "Use built-in corpus"
        )
        self.builtin_button.setToolTip("Replace the sources with text built from the documentation inside Python")
        self.remove_button.setToolTip("Remove the selected sources")
        self.add_files_button.clicked.connect(self.add_files_dialog)
        self.add_folder_button.clicked.connect(self.add_folder_dialog)
        self.remove_button.clicked.connect(self.remove_selected)
        self.builtin_button.clicked.connect(self.use_builtin)
        buttons = QHBoxLayout()
        for button in (self.add_files_button, self.add_folder_button, self.hub_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.builtin_button)

        self.unit_combo = QComboBox()
        self.unit_combo.addItem("one per paragraph", "paragraph")
        self.unit_combo.addItem("one per line", "line")
        self.unit_combo.setToolTip(
            "How .txt and .md files are split into documents: at blank lines (paragraphs) or at every line"
        )
        self.field_edit = QLineEdit("text")
        self.field_edit.setToolTip("The JSON field that holds the text in .jsonl files")
        self.column_edit = QLineEdit("text")
        self.column_edit.setToolTip("The column that holds the text in .csv, .tsv, .parquet and .arrow files")
        self.unit_combo.currentIndexChanged.connect(self._on_options_edited)
        for edit in (self.field_edit, self.column_edit):
            edit.setMaximumWidth(120)
            edit.textChanged.connect(self._validate_options)
            edit.editingFinished.connect(self._on_options_edited)
        options = QHBoxLayout()
        options.addWidget(QLabel("Text files: documents"))
        options.addWidget(self.unit_combo)
        options.addSpacing(16)
        options.addWidget(QLabel("JSONL field"))
        options.addWidget(self.field_edit)
        options.addSpacing(16)
        column_label = QLabel("Table column")
        column_label.setToolTip(self.column_edit.toolTip())
        options.addWidget(column_label)
        options.addWidget(self.column_edit)
        options.addStretch(1)

        self.progress_bar = QProgressBar()
        self.progress_label = QLabel()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.runner.cancel)
        progress = QHBoxLayout()
        progress.addWidget(self.progress_label)
        progress.addWidget(self.progress_bar, 1)
        progress.addWidget(self.cancel_button)
        self.progress_row = QWidget()
        self.progress_row.setLayout(progress)
        progress.setContentsMargins(0, 0, 0, 0)
        self.progress_row.hide()

        self.message_bar = MessageBar()

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setAlignment(Qt.AlignmentFlag.AlignTop)
        sources_box = QGroupBox("Sources — drop files or folders here")
        sources_layout = QVBoxLayout(sources_box)
        sources_layout.addWidget(self.table, 1)
        sources_layout.addWidget(self.details)

        self.tokenizer_section = TokenizerSection(self.workspace)
        lower = ReflowSplitter(STATISTICS_WIDTH)  # the statistics above the tokenizer when narrow
        lower.setObjectName("corpus-statistics-tokenizer")
        lower.addWidget(self._build_statistics())
        lower.addWidget(self.tokenizer_section)
        lower.setSizes([520, 480])
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setObjectName("corpus-sources-below")
        splitter.addWidget(sources_box)
        splitter.addWidget(lower)
        splitter.setSizes([260, 380])

        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addLayout(options)
        layout.addWidget(self.progress_row)
        layout.addWidget(self.message_bar)
        layout.addWidget(splitter, 1)

    def _build_statistics(self) -> QTabWidget:
        """The corpus's totals and length histogram, and a few sample documents, as tabs."""
        self.totals = QLabel("No corpus loaded")
        self.totals.setWordWrap(True)
        self.histogram = ThemedPlot(LENGTHS_AXIS, "documents")
        self.histogram_curve = self.histogram.plot(
            [0, 1], [0], stepMode="center", fillLevel=0, brush=accent_colour(), pen=pg.mkPen(accent_colour())
        )
        self.histogram.setLimits(yMin=0)  # counts: an empty corpus shows 0 to 1, not -0.5 to 0.5
        stats_page = QWidget()
        stats_layout = QVBoxLayout(stats_page)
        stats_layout.addWidget(self.totals)
        stats_layout.addWidget(self.histogram, 1)
        self.samples = QTextBrowser()
        self.samples.setOpenLinks(False)
        self.tabs = QTabWidget()
        self.tabs.addTab(stats_page, "Statistics")
        self.tabs.addTab(self.samples, "Sample documents")
        return self.tabs

    # --- actions ------------------------------------------------------------------------------------
    def add_files_dialog(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add corpus files", "", FILE_FILTER)
        if files:
            self.add_paths(files)

    def add_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of corpus files")
        if folder:
            self.add_paths([folder])

    def add_hub_dialog(self) -> None:
        name, ok = QInputDialog.getText(
            self, "A Hub dataset on this machine", "Dataset name as on the Hub (org/name), already in the local cache:"
        )
        if ok and name.strip():
            self.add_paths([f"{HUB_PREFIX}{name.strip()}"])

    def add_paths(self, paths: list[str | Path]) -> None:
        """Add sources to the current ones and rescan."""
        self._load(self.paths + [Path(p) for p in paths])

    def remove_selected(self) -> None:
        rows = {index.row() for index in self.table.selectionModel().selectedRows()}
        if rows:
            self._load([p for i, p in enumerate(self.paths) if i not in rows])

    def use_builtin(self) -> None:
        """Replace the sources with the built-in corpus (built and cached on first use)."""
        options = self._options()

        def build_and_load(progress: Progress) -> Corpus:
            path = ensure_builtin_corpus(progress)
            return load_corpus([path], options, progress)

        self._start(build_and_load, "Preparing the built-in corpus")

    def reload(self) -> None:
        self._load(list(self.paths))

    def _load(self, paths: list[Path]) -> None:
        if not paths:
            self.paths = []
            self._show_corpus(None)
            self.workspace.set_corpus(None)
            return
        options = self._options()
        self._start(lambda progress: load_corpus(paths, options, progress), "Reading")

    def _start(self, fn, label: str) -> None:
        self.message_bar.clear()
        self.progress_label.setText(label)
        self.progress_bar.setRange(0, 0)
        self.progress_row.show()
        self.runner.start(fn)
        self._update_buttons()

    def _options(self) -> ReadOptions:
        return ReadOptions(
            text_unit=self.unit_combo.currentData(),
            jsonl_field=self.field_edit.text().strip() or "text",
            table_column=self.column_edit.text().strip() or "text",
        )

    # --- outcomes -----------------------------------------------------------------------------------
    def _on_progress(self, done: int, total: int, message: str) -> None:
        self.progress_label.setText(message)
        if total > 0:
            self.progress_bar.setRange(0, 1000)
            self.progress_bar.setValue(int(1000 * done / total))

    def _on_loaded(self, corpus: Corpus) -> None:
        self.paths = [report.path for report in corpus.sources]
        self._show_corpus(corpus)
        skipped = [s for s in corpus.sources if not s.loaded]
        problems = sum(s.issue_count for s in corpus.sources)
        if skipped or problems:
            parts = []
            if skipped:
                parts.append(f"{len(skipped)} source(s) skipped: " + "; ".join(_short(s) for s in skipped[:3]))
            if problems:
                parts.append(f"{problems} problem line(s) were not used — select a source to see which")
            self.message_bar.show_message(". ".join(parts) + ".", "warning")
        self.workspace.set_corpus(corpus)

    def _on_failed(self, message: str) -> None:
        kept = "The previous corpus is kept." if self.workspace.corpus else ""
        self.message_bar.show_message(f"{message} {kept}".strip(), "error")

    def _on_cancelled(self) -> None:
        kept = " The previous corpus is kept." if self.workspace.corpus else ""
        self.message_bar.show_message("Loading was cancelled." + kept, "info")

    def _on_finished(self) -> None:
        self.progress_row.hide()
        self._update_buttons()
        self.loading_finished.emit()

    # --- display ------------------------------------------------------------------------------------
    def _show_corpus(self, corpus: Corpus | None) -> None:
        reports = corpus.sources if corpus else ()
        self.table.setRowCount(len(reports))
        ok = self.style().standardIcon(QStyle.StandardPixmap.SP_DialogApplyButton)
        warn = self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
        for row, report in enumerate(reports):
            encoding = report.encoding + (" (fallback)" if report.encoding_note else "")
            values = (
                self._display_name(report.path),
                report.kind,
                report.status,
                f"{report.documents:,}",
                f"{report.words:,}",
                encoding,
                f"{report.issue_count:,}" if report.issue_count else "",
            )
            for column, value in enumerate(values):
                item = QTableWidgetItem(value)
                item.setToolTip(_tooltip(report))
                if column in (3, 4, 6):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)
            self.table.item(row, 2).setIcon(ok if report.loaded and not report.issue_count else warn)
        self.details.setText("")
        if corpus is None:
            self.totals.setText("No corpus loaded")
            self.histogram_curve.setData([0, 1], [0])
            self._label_lengths(LENGTHS_AXIS)
            self.samples.clear()
            return
        self.totals.setText(
            f"<b>{corpus.documents:,}</b> documents · <b>{corpus.words:,}</b> words · "
            f"<b>{corpus.characters:,}</b> characters from <b>{len(corpus.loaded_sources)}</b> source(s)"
        )
        lengths = corpus.doc_words
        upper = max(1, int(np.percentile(lengths, 99))) if len(lengths) else 1
        counts, edges = np.histogram(np.minimum(lengths, upper), bins=min(40, upper))
        self.histogram_curve.setData(edges, counts)
        longer = len(lengths) > 0 and lengths.max() > upper  # the last bar holds the longest 1%: its axis says so
        self._label_lengths(f"{LENGTHS_AXIS} (the last bar: {upper:,} or more)" if longer else LENGTHS_AXIS)
        self.samples.setHtml("".join(f"<p>{html.escape(s[:600])}</p><hr>" for s in corpus.samples))

    def _label_lengths(self, text: str) -> None:
        axis = self.histogram.getAxis("bottom")
        axis.setLabel(text)
        axis.resizeEvent()  # pyqtgraph centres an axis title only on a resize: a longer one would sit off-centre

    def _display_name(self, path: Path) -> str:
        return BUILTIN_LABEL if path == builtin_corpus_location() else path.name

    def _on_selection(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        corpus = self.workspace.corpus
        if len(rows) != 1 or corpus is None or rows[0].row() >= len(corpus.sources):
            self.details.setText("")
        else:
            self.details.setText(_tooltip(corpus.sources[rows[0].row()]))
            self.details.parentWidget().layout().activate()  # the details take their room from the table now
            self.table.scrollTo(self.table.model().index(rows[0].row(), 0))  # and the clicked row stays in view
        self._update_buttons()

    def _update_buttons(self) -> None:
        busy = self.runner.running
        self.remove_button.setEnabled(not busy and bool(self.table.selectionModel().selectedRows()))
        self.add_files_button.setEnabled(not busy)
        self.add_folder_button.setEnabled(not busy)
        self.hub_button.setEnabled(not busy)
        self.builtin_button.setEnabled(not busy)

    def _validate_options(self) -> None:
        for edit in (self.field_edit, self.column_edit):
            edit.setStyleSheet("" if edit.text().strip() else "QLineEdit { border: 1px solid #c0392b; }")

    def _on_options_edited(self) -> None:
        if self.paths and not self.runner.running and self._options() != self.workspace.read_options:
            self.reload()

    def set_options(self, options: ReadOptions) -> None:
        self.unit_combo.setCurrentIndex(max(0, self.unit_combo.findData(options.text_unit)))
        self.field_edit.setText(options.jsonl_field)
        self.column_edit.setText(options.table_column)

    # --- drag & drop --------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.add_paths(paths)


def _short(report: SourceReport) -> str:
    return f"{report.name} ({report.reason})"


def _tooltip(report: SourceReport) -> str:
    return "\n".join(report.describe(ISSUES_SHOWN))
