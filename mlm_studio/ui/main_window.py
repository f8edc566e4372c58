"""The main window: a navigation list of panels, menus, a status bar; it owns the workspace."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QWidget,
)

from mlm_studio import __version__
from mlm_studio.core.runs.control import IDLE, PAUSED, STOPPING
from mlm_studio.core.storage.user_folders import default_runs_dir
from mlm_studio.ui import session
from mlm_studio.ui.engine_loading import import_engine
from mlm_studio.ui.tasks import TaskRunner, stop_all_tasks, user_message
from mlm_studio.ui.theme import PALETTE_CHANGES, SCHEMES, app_icon, apply_scheme
from mlm_studio.ui.widgets.panel_icons import panel_icon
from mlm_studio.ui.widgets.status_bar import StatusBar
from mlm_studio.ui.workspace import Workspace

log = logging.getLogger(__name__)
FIRST_SIZE = (1280, 800)
TITLE_BAR_ALLOWANCE = 40  # pixels above the window that its frame takes, not known before it is shown


class MainWindow(QMainWindow):
    """Panels in workflow order on the left, the chosen one on the right."""

    panels_ready = Signal()

    def __init__(
        self,
        settings: QSettings | None = None,
        restore: bool = True,
        runs_root: Path | None = None,
        deferred: bool = False,
    ) -> None:
        """`deferred`: show at once and build the panels once PyTorch is imported in the background (the
        application's launch); otherwise build them now (tests, screenshots)."""
        super().__init__()
        self.settings = settings
        self.setWindowTitle("MLM Studio")
        self.setWindowIcon(app_icon())
        self.scheme = str(settings.value("view/scheme", "system")) if settings is not None else "system"
        if self.scheme not in SCHEMES:
            self.scheme = "system"
        if settings is not None:  # the application's own start; tests keep the palette they were given
            apply_scheme(QApplication.instance(), self.scheme)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._on_system_scheme)
        self._forget_settings = False
        self.ready = False  # True once the panels are built
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

        if runs_root is None and settings is not None:
            runs_root = Path(str(settings.value("runs/root", default_runs_dir())))
        self.workspace = Workspace(self, runs_root or default_runs_dir())
        self._devices: list | None = None
        self._quit_when_done = False
        self.status = StatusBar()
        self.status.devices_found.connect(self._on_devices)
        self.setStatusBar(self.status)
        self._fit_first_window()
        if settings is not None and restore and isinstance(settings.value("window/geometry"), QByteArray):
            self.restoreGeometry(settings.value("window/geometry"))
        if deferred:
            self.loading = QLabel("Loading the engine (PyTorch)…")
            self.loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.stack.addWidget(self.loading)
            self._engine_loader = TaskRunner(self)
            self._engine_loader.succeeded.connect(lambda _: self._build_in_slices(self._build_panels(restore)))
            self._engine_loader.succeeded.connect(self.status.probe_devices)  # it imports PyTorch too: not side by side
            self._engine_loader.failed.connect(self.loading.setText)
            self._engine_loader.start(lambda progress: import_engine())
        else:
            self.status.probe_devices()
            for _ in self._build_panels(restore):
                pass

    def _fit_first_window(self) -> None:
        """1280×800, or the screen's free area less a title bar where that is smaller (a 1366×768 laptop)."""
        free = self.screen().availableGeometry()
        self.resize(min(FIRST_SIZE[0], free.width()), min(FIRST_SIZE[1], free.height() - TITLE_BAR_ALLOWANCE))

    def _build_in_slices(self, steps: Iterator[None]) -> None:
        """Take one step of `steps` per turn of the event loop, so the window repaints between them. A step that
        fails ends the build and says why in place of the loading message (a bug: the window cannot work)."""
        try:
            more = next(steps, StopIteration) is not StopIteration
        except Exception as exc:  # every failure reaches the user, not only a console they may not have
            log.exception("the window's panels could not be built")
            self.loading.setText(f"MLM Studio could not build its window: {user_message(exc)}")
            self.loading.setWordWrap(True)
            return
        if more:
            QTimer.singleShot(0, lambda: self._build_in_slices(steps))

    def _build_panels(self, restore: bool) -> Iterator[None]:
        """The panels, one per step (the Masking panel one part per step, the Configuration panel one group of
        fields per step, the Training panel one live plot per step, the Evaluation panel one tab per step, the
        Fine-tune panel one live plot per step), then their menus and the last session's state (deferred until the
        engine is imported)."""
        from mlm_studio.ui.panels.config.panel import ConfigPanel
        from mlm_studio.ui.panels.corpus.panel import CorpusPanel
        from mlm_studio.ui.panels.evaluation.panel import EvaluationPanel
        from mlm_studio.ui.panels.finetune.panel import FinetunePanel
        from mlm_studio.ui.panels.masking.panel import MaskingPanel
        from mlm_studio.ui.panels.playground.panel import PlaygroundPanel
        from mlm_studio.ui.panels.training.panel import TrainingPanel

        self.corpus_panel = CorpusPanel(self.workspace)
        yield
        self.masking_panel = MaskingPanel(self.workspace, sliced=True)
        yield from self.masking_panel.construction.steps
        yield
        self.config_panel = ConfigPanel(self.workspace, sliced=True)
        yield from self.config_panel.construction.steps
        yield
        self.training_panel = TrainingPanel(self.workspace, sliced=True)
        yield from self.training_panel.construction.steps
        self.playground_panel = PlaygroundPanel(self.workspace)
        yield
        self.evaluation_panel = EvaluationPanel(self.workspace, sliced=True)
        yield from self.evaluation_panel.construction.steps
        self.finetune_panel = FinetunePanel(self.workspace, sliced=True)
        yield
        yield from self.finetune_panel.construction.steps
        if hasattr(self, "loading"):
            self.stack.removeWidget(self.loading)
            self.loading.deleteLater()
        self.add_panel("Corpus", self.corpus_panel)
        self.add_panel("Masking preview", self.masking_panel)
        self.add_panel("Configuration", self.config_panel)
        self.add_panel("Training", self.training_panel)
        self.add_panel("Playground", self.playground_panel)
        self.add_panel("Evaluation", self.evaluation_panel)
        self.add_panel("Fine-tune", self.finetune_panel)
        self.config_panel.validity_changed.connect(self.training_panel.set_config_error)
        self.training_panel.checkpoint_written.connect(self.playground_panel.on_checkpoint)
        self.training_panel.checkpoint_written.connect(self.masking_panel.on_checkpoint)
        self.training_panel.run_finished.connect(self._on_run_finished)
        self.finetune_panel.controller.finished.connect(self._on_run_finished)
        self.training_panel.controller.state_changed.connect(self._update_run_status)
        self.workspace.run_changed.connect(lambda _: self._update_run_status())
        self.training_panel.training_run_changed.connect(lambda _: self._update_run_status())
        self.workspace.corpus_changed.connect(self.status.show_corpus)
        self._build_menus()
        self._update_run_status()
        if self._devices is not None:
            self.config_panel.set_devices([d.name for d in self._devices])
        if restore:
            session.restore(self, self.settings)
        self.ready = True
        self.panels_ready.emit()

    def add_panel(self, title: str, panel: QWidget) -> None:
        """Plug a panel in: a navigation entry with its glyph (panel_icons.GLYPHS) and a page."""
        self.navigation.addItem(QListWidgetItem(panel_icon(title, self.navigation.palette()), title))
        self.stack.addWidget(panel)
        if self.navigation.currentRow() < 0:
            self.navigation.setCurrentRow(0)

    def show_panel(self, panel: QWidget) -> None:
        self.navigation.setCurrentRow(self.stack.indexOf(panel))

    # --- menus and status bar -----------------------------------------------------------------------
    def _build_menus(self) -> None:
        corpus, training = self.corpus_panel, self.training_panel
        file_menu = self.menuBar().addMenu("&File")
        self.open_corpus_action = self._action(file_menu, "&Add corpus files…", corpus.add_files_dialog, "Ctrl+O")
        self._action(file_menu, "Add corpus &folder…", corpus.add_folder_dialog, "Ctrl+Shift+O")
        self.builtin_action = self._action(file_menu, "Use &built-in corpus", corpus.use_builtin)
        file_menu.addSeparator()
        self._action(file_menu, "&Open run…", self.open_run_dialog, "Ctrl+Shift+R")
        self._action(file_menu, "Load &configuration…", self.config_panel.load_dialog)
        self._action(file_menu, "&Save configuration…", self.config_panel.save_dialog, "Ctrl+S")
        file_menu.addSeparator()
        self.import_action = self._action(file_menu, "&Import Hugging Face model…", self._import_model, "Ctrl+I")
        self.export_action = self._action(file_menu, "&Export run to Hugging Face…", self._export_run, "Ctrl+E")
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        run_menu = self.menuBar().addMenu("&Run")
        self.start_action = self._action(run_menu, "&Start training", self._start_training, "Ctrl+R")
        self.pause_action = self._action(run_menu, "&Pause / resume", training.toggle_pause, "Ctrl+P")
        self.stop_action = self._action(run_menu, "S&top", training.stop, "Ctrl+.")
        view_menu = self.menuBar().addMenu("&View")
        self.view_actions = []
        for row in range(self.navigation.count()):
            title = self.navigation.item(row).text()
            show = lambda _checked=False, r=row: self.navigation.setCurrentRow(r)  # noqa: E731 (triggered(bool))
            self.view_actions.append(self._action(view_menu, title, show, f"Ctrl+{row + 1}"))
        view_menu.addSeparator()
        schemes = view_menu.addMenu("&Colour scheme")
        self.scheme_actions = []
        for scheme in SCHEMES:
            action = self._action(schemes, scheme.capitalize(), lambda _checked=False, s=scheme: self.set_scheme(s))
            action.setCheckable(True)
            action.setChecked(scheme == self.scheme)
            action.setData(scheme)
            self.scheme_actions.append(action)
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&Reset settings", self.reset_settings)
        self._action(help_menu, "&About MLM Studio", self._about)

    def _action(self, menu, text: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _start_training(self) -> None:
        self.show_panel(self.training_panel)
        self.training_panel.start()

    def _import_model(self) -> None:
        self.show_panel(self.config_panel)
        self.config_panel.import_dialog()

    def _export_run(self) -> None:
        """Export the run selected in the Training panel, else the current one, else one the user picks."""
        self.show_panel(self.training_panel)
        self.training_panel.export_dialog(self.training_panel.selected_run() or self.workspace.run)

    def open_run_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a run folder", str(self.training_panel.runs_root))
        if folder:
            self.open_run(Path(folder))

    def open_run(self, path: Path) -> None:
        """Show a run where its kind is shown: a pre-training run's curves in the Training panel, a fine-tuning
        run's curves and scores in the Fine-tune panel. The other panels keep their models, the Runs folder stays."""
        from mlm_studio.core.runs.history import FINETUNING, run_kind  # the engine is loaded by now

        if run_kind(path) == FINETUNING:
            self.finetune_panel.show_run(path)
            self.show_panel(self.finetune_panel)
        else:
            self.training_panel.open_run(path)
            self.show_panel(self.training_panel)

    def _on_devices(self, devices) -> None:
        self._devices = devices
        if self.ready:
            self.config_panel.set_devices([d.name for d in devices])

    def _update_run_status(self, *_) -> None:
        run = self.training_panel.training_run or self.workspace.run  # one being prepared is named already
        state = self.training_panel.controller.state
        self.status.show_run(run.name if run is not None else None, "" if state == IDLE else state)
        self.pause_action.setText("&Resume" if state == PAUSED else "&Pause")

    def _about(self) -> None:
        QMessageBox.about(
            self,
            "About MLM Studio",
            f"<b>MLM Studio {__version__}</b><p>A workbench for masked language modeling: "
            "load a corpus, preview masking, train, and try the model.</p>",
        )

    # --- settings and looks -----------------------------------------------------------------------
    def reset_settings(self) -> None:
        """Forget everything remembered: the next start opens as the first one did."""
        if self.settings is not None:
            self.settings.clear()
            self.settings.sync()
        self._forget_settings = True
        self.status.showMessage("Settings reset: MLM Studio starts with its defaults next time.")

    def set_scheme(self, scheme: str) -> None:
        """Light, dark, or the system's scheme (followed as it changes)."""
        self.scheme = scheme
        apply_scheme(QApplication.instance(), scheme)
        for action in self.scheme_actions:
            action.setChecked(action.data() == scheme)

    def changeEvent(self, event: QEvent) -> None:
        """Another colour scheme: the navigation's glyphs take its text colours."""
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            palette = self.palette()  # its own: the list it holds takes the new palette after it
            for row in range(self.navigation.count()):
                item = self.navigation.item(row)
                item.setIcon(panel_icon(item.text(), palette))

    def _on_system_scheme(self, *_) -> None:
        if self.scheme == "system":
            apply_scheme(QApplication.instance(), "system")

    # --- closing ------------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        """While a training runs, every way out (×, Ctrl+Q, File → Quit, again and again) asks; the window
        closes only once the trainer has ended, saved, and never blocks the event loop waiting for it."""
        if not self.ready:  # closed while the engine was still loading
            stop_all_tasks()
            event.accept()
            return
        controller = self.training_panel.controller
        if controller.busy:
            event.ignore()
            if controller.state != STOPPING:
                choice = self._ask_about_training()
                self._quit_when_done = choice != "cancel"
                if choice == "cancel":
                    self.status.clearMessage()
                    return
                if choice == "keep":
                    self.status.showMessage("MLM Studio will close when the training finishes.")
                    return
                controller.stop()
            else:
                self._quit_when_done = True
            self.status.showMessage("Saving a checkpoint; MLM Studio closes when it is written.")
            return
        tuning = self.finetune_panel.controller
        if tuning.busy:  # stopped at once: what it learned so far is scored and kept
            event.ignore()
            tuning.stop()
            self._quit_when_done = True
            self.status.showMessage("Stopping the fine-tuning; MLM Studio closes once it is scored.")
            return
        if not self._forget_settings:
            session.save(self, self.settings)
        self.status.memory_timer.stop()
        self.workspace.close()
        stop_all_tasks()
        event.accept()

    def _ask_about_training(self) -> str:
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle("Training is running")
        box.setText("A training is running. Stop it and save a checkpoint before closing?")
        stop = box.addButton("Stop && save", QMessageBox.ButtonRole.AcceptRole)
        keep = box.addButton("Keep training", QMessageBox.ButtonRole.ActionRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        clicked = box.clickedButton()
        return "stop" if clicked is stop else "keep" if clicked is keep else "cancel"

    def _on_run_finished(self) -> None:
        if self._quit_when_done:
            self.close()
