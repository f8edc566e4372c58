"""Corpus panel: add files and folders (dialog or drag & drop), see what loaded and why not, stats, samples."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import Corpus, ReadOptions, load_corpus
from mlm_studio.core.data.formats import SUFFIXES
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.hub_cache import PREFIX as HUB_PREFIX
from mlm_studio.ui.panels.corpus.read_options import ReadOptionsRow
from mlm_studio.ui.panels.corpus.report import COLUMNS, NUMBER_COLUMNS, loading_warning, source_details, source_row
from mlm_studio.ui.panels.corpus.statistics import CorpusStatistics
from mlm_studio.ui.panels.corpus.tokenizer_section import TokenizerSection
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.reflow_splitter import ReflowSplitter
from mlm_studio.ui.workspace import Workspace

FILE_FILTER = f"Corpora ({' '.join('*' + ext for ext in SUFFIXES)});;All files (*)"
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

        self.options_row = ReadOptionsRow()
        self.options_row.edited.connect(self._on_options_edited)

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
        self.statistics = CorpusStatistics()
        lower.addWidget(self.statistics)
        lower.addWidget(self.tokenizer_section)
        lower.setSizes([520, 480])
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setObjectName("corpus-sources-below")
        splitter.addWidget(sources_box)
        splitter.addWidget(lower)
        splitter.setSizes([260, 380])

        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.options_row)
        layout.addWidget(self.progress_row)
        layout.addWidget(self.message_bar)
        layout.addWidget(splitter, 1)

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
        options = self.options_row.options()

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
        options = self.options_row.options()
        self._start(lambda progress: load_corpus(paths, options, progress), "Reading")

    def _start(self, fn, label: str) -> None:
        self.message_bar.clear()
        self.progress_label.setText(label)
        self.progress_bar.setRange(0, 0)
        self.progress_row.show()
        self.runner.start(fn)
        self._update_buttons()

    # --- outcomes -----------------------------------------------------------------------------------
    def _on_progress(self, done: int, total: int, message: str) -> None:
        self.progress_label.setText(message)
        if total > 0:
            self.progress_bar.setRange(0, 1000)
            self.progress_bar.setValue(int(1000 * done / total))

    def _on_loaded(self, corpus: Corpus) -> None:
        self.paths = [report.path for report in corpus.sources]
        self._show_corpus(corpus)
        warning = loading_warning(corpus)
        if warning:
            self.message_bar.show_message(warning, "warning")
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
            for column, value in enumerate(source_row(report)):
                item = QTableWidgetItem(value)
                item.setToolTip(source_details(report))
                if column in NUMBER_COLUMNS:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)
            self.table.item(row, 2).setIcon(ok if report.loaded and not report.issue_count else warn)
        self.details.setText("")
        self.statistics.show_corpus(corpus)

    def _on_selection(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        corpus = self.workspace.corpus
        if len(rows) != 1 or corpus is None or rows[0].row() >= len(corpus.sources):
            self.details.setText("")
        else:
            self.details.setText(source_details(corpus.sources[rows[0].row()]))
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

    def _on_options_edited(self) -> None:
        if self.paths and not self.runner.running and self.options_row.options() != self.workspace.read_options:
            self.reload()

    def set_options(self, options: ReadOptions) -> None:
        self.options_row.set_options(options)

    # --- drag & drop --------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.add_paths(paths)
