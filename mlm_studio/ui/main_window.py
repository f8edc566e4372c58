"""The main window: a navigation list of panels, menus, a status bar; it owns the workspace."""

from __future__ import annotations

import os
import sys

from PySide6.QtCore import QByteArray, QSettings, QSize, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QStyle,
    QWidget,
)

from mlm_studio import __version__
from mlm_studio.core.builtin_corpus import builtin_corpus_location
from mlm_studio.core.corpus import ReadOptions
from mlm_studio.core.device import available_devices
from mlm_studio.ui.panels.corpus import CorpusPanel
from mlm_studio.ui.panels.masking import MaskingPanel
from mlm_studio.ui.tasks import TaskRunner, stop_all_tasks
from mlm_studio.ui.workspace import Workspace

MEMORY_REFRESH_MS = 2000


class MainWindow(QMainWindow):
    """Panels in workflow order on the left, the chosen one on the right."""

    def __init__(self, settings: QSettings | None = None, restore: bool = True) -> None:
        super().__init__()
        self.settings = settings
        self.workspace = Workspace(self)
        self.setWindowTitle("MLM Studio")
        self.setWindowIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_FileDialogDetailedView))
        self.navigation = QListWidget()
        self.navigation.setIconSize(QSize(20, 20))
        self.navigation.setFixedWidth(170)
        self.stack = QStackedWidget()
        self.navigation.currentRowChanged.connect(self.stack.setCurrentIndex)
        central = QWidget()
        layout = QHBoxLayout(central)
        layout.setContentsMargins(6, 6, 6, 0)
        layout.addWidget(self.navigation)
        layout.addWidget(self.stack, 1)
        self.setCentralWidget(central)

        self.corpus_panel = CorpusPanel(self.workspace)
        self.masking_panel = MaskingPanel(self.workspace)
        self.add_panel("Corpus", self.corpus_panel, QStyle.StandardPixmap.SP_FileDialogContentsView)
        self.add_panel("Masking preview", self.masking_panel, QStyle.StandardPixmap.SP_FileDialogInfoView)
        self._build_menus()
        self._build_status_bar()
        self.workspace.corpus_changed.connect(self._update_corpus_status)
        self.resize(1280, 800)
        if restore:
            self._restore()

    def add_panel(self, title: str, panel: QWidget, icon: QStyle.StandardPixmap) -> None:
        """Plug a panel in: a navigation entry and a page."""
        self.navigation.addItem(QListWidgetItem(self.style().standardIcon(icon), title))
        self.stack.addWidget(panel)
        if self.navigation.currentRow() < 0:
            self.navigation.setCurrentRow(0)

    def show_panel(self, panel: QWidget) -> None:
        self.navigation.setCurrentRow(self.stack.indexOf(panel))

    # --- menus and status bar -----------------------------------------------------------------------
    def _build_menus(self) -> None:
        panel = self.corpus_panel
        file_menu = self.menuBar().addMenu("&File")
        self.open_corpus_action = self._action(file_menu, "&Add corpus files…", panel.add_files_dialog, "Ctrl+O")
        self._action(file_menu, "Add corpus &folder…", panel.add_folder_dialog, "Ctrl+Shift+O")
        self.builtin_action = self._action(file_menu, "Use &built-in corpus", panel.use_builtin)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        view_menu = self.menuBar().addMenu("&View")
        for row in range(self.navigation.count()):
            title = self.navigation.item(row).text()
            self._action(view_menu, title, lambda r=row: self.navigation.setCurrentRow(r), f"Ctrl+{row + 1}")
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&About MLM Studio", self._about)

    def _action(self, menu, text: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_status_bar(self) -> None:
        self.device_label = QLabel("Device: detecting…")
        self.corpus_label = QLabel("No corpus")
        self.memory_label = QLabel()
        bar = self.statusBar()
        bar.addWidget(self.corpus_label, 1)
        bar.addPermanentWidget(self.device_label)
        bar.addPermanentWidget(self.memory_label)
        self._device_probe = TaskRunner(self)
        self._device_probe.succeeded.connect(self._on_devices)
        self._device_probe.failed.connect(lambda message: self.device_label.setText(f"Device: unknown ({message})"))
        self._device_probe.start(lambda progress: available_devices())
        self._memory_timer = QTimer(self)
        self._memory_timer.timeout.connect(self._update_memory)
        self._memory_timer.start(MEMORY_REFRESH_MS)
        self._update_memory()

    def _on_devices(self, devices) -> None:
        self.device_label.setText(f"Device: {devices[0].label}")
        self.device_label.setToolTip("\n".join(d.label for d in devices))

    def _update_corpus_status(self, corpus) -> None:
        if corpus is None:
            self.corpus_label.setText("No corpus")
        else:
            self.corpus_label.setText(f"Corpus: {corpus.documents:,} documents, {corpus.words:,} words")

    def _update_memory(self) -> None:
        rss = _resident_memory_bytes()
        self.memory_label.setText(f"Memory: {rss / 2**20:,.0f} MiB" if rss else "")

    def _about(self) -> None:
        QMessageBox.about(
            self,
            "About MLM Studio",
            f"<b>MLM Studio {__version__}</b><p>A workbench for masked language modeling: "
            "load a corpus, preview masking, train, and try the model.</p>",
        )

    # --- settings -----------------------------------------------------------------------------------
    def _restore(self) -> None:
        """Reopen the last session's sources, or the built-in corpus on first start."""
        settings = self.settings
        paths = []
        if settings is not None:
            geometry = settings.value("window/geometry")
            if isinstance(geometry, QByteArray):
                self.restoreGeometry(geometry)
            try:
                self.corpus_panel.set_options(
                    ReadOptions(
                        text_unit=str(settings.value("corpus/text_unit", "paragraph")),
                        jsonl_field=str(settings.value("corpus/jsonl_field", "text")),
                        table_column=str(settings.value("corpus/table_column", "text")),
                    )
                )
            except ValueError:
                pass  # settings from a damaged file: keep the defaults
            paths = [p for p in settings.value("corpus/paths", [], type=list) if p]
        if paths and paths != [str(builtin_corpus_location())]:
            self.corpus_panel.add_paths(paths)
        else:
            self.corpus_panel.use_builtin()

    def _save(self) -> None:
        if self.settings is None:
            return
        options = self.workspace.read_options
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("corpus/paths", [str(p) for p in self.corpus_panel.paths])
        self.settings.setValue("corpus/text_unit", options.text_unit)
        self.settings.setValue("corpus/jsonl_field", options.jsonl_field)
        self.settings.setValue("corpus/table_column", options.table_column)
        self.settings.sync()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt override)
        self._save()
        self._memory_timer.stop()
        stop_all_tasks()
        event.accept()


def _resident_memory_bytes() -> int:
    """The process's resident memory, where the platform tells it cheaply; 0 otherwise."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    if sys.platform != "win32":
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    return 0
