"""Training panel: start, pause, resume and stop a run, watch its curves live, compare and export runs. What it
shows belongs to the workspace's shown run (`ShownRun` keeps it so), while a training goes on out of sight."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStyle,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.errors import UserError
from mlm_studio.core.runs.records import CheckpointRecord, StartedRecord, StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.training.probes import Probe, load_probes
from mlm_studio.core.training.request import Note, TrainingRequest, prepare, run_folder
from mlm_studio.core.training.trainer import Trainer
from mlm_studio.ui.panels.branch_dialog import BranchDialog
from mlm_studio.ui.panels.plots_area import PlotsArea
from mlm_studio.ui.panels.run_header import RunHeader
from mlm_studio.ui.panels.runs_page import RunsPage
from mlm_studio.ui.panels.shown_run import ShownRun
from mlm_studio.ui.panels.step_batch import StepBatches
from mlm_studio.ui.run_export import RunExporter
from mlm_studio.ui.theme import PALETTE_CHANGES, ToneLabel, glyph_icon
from mlm_studio.ui.trainer_thread import IDLE, PAUSED, PREPARING, RUNNING, TrainingController
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.probes_editor import ProbesEditor
from mlm_studio.ui.workspace import Workspace


class TrainingPanel(QWidget):
    """Runs the engine's trainer through a `TrainingController`; never blocks the event loop."""

    checkpoint_written = Signal(str)
    run_finished = Signal()
    training_run_changed = Signal(object)  # Path | None: the run being prepared or trained (None when idle)

    def __init__(self, workspace: Workspace, parent: QWidget | None = None, sliced: bool = False) -> None:
        """`sliced`: leave the live plots' construction, one plot per step, to the window's launch."""
        super().__init__(parent)
        self.workspace = workspace
        self.config_error = ""
        self.start_notes: list[Note] = []  # what the resolution says, shown once the run has started
        self.controller = TrainingController(self)
        self.controller.state_changed.connect(self._on_state)
        self.controller.prepared.connect(self._on_prepared)
        self.controller.progress.connect(self._on_prepare_progress)
        self.controller.record.connect(self._on_record)
        self.controller.failed.connect(self._on_failed)
        self.controller.finished.connect(self._on_finished)
        self._build(sliced)
        views = (self.header, self.plots, self.message_bar, self.runs.table)
        self.shown = ShownRun(workspace, self.controller, views, self.probes_editor.count)
        self.step_batches = StepBatches(self.plots, workspace)  # after ShownRun: it draws the curves first
        self.exporter = RunExporter(self, self.message_bar, self._log)
        self.exporter.finished.connect(self._update_controls)
        for signal in (workspace.corpus_changed, workspace.tokenizer_changed, workspace.config_changed):
            signal.connect(lambda *_: self._update_controls())
        workspace.shown_run_changed.connect(lambda *_: self._update_controls())  # Overlay: not the shown run
        self.probes_editor.changed.connect(self.shown.update_hints)
        self.runs.refresh()
        self.splitter.setSizes([10_000, self.side.minimumSizeHint().height()])  # the least runs table it shows
        self._update_controls()
        self.shown.update_hints()

    # --- layout -------------------------------------------------------------------------------------
    def _build(self, sliced: bool) -> None:
        self.start_button = QPushButton("Start")
        self.pause_button = QPushButton("Pause")
        self.stop_button = QPushButton("Stop")
        self._set_icons()
        self.start_button.clicked.connect(self.start)
        self.pause_button.clicked.connect(self.toggle_pause)
        self.stop_button.clicked.connect(self.stop)
        self.header = RunHeader()
        self.progress_bar, self.status_label = self.header.progress_bar, self.header.status_label
        self.reason_label = ToneLabel("warning")  # why Start is disabled
        top = QHBoxLayout()
        for button in (self.start_button, self.pause_button, self.stop_button):
            button.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
            top.addWidget(button)
        top.addWidget(self.reason_label, 2)
        top.addWidget(self.header, 5)
        self.message_bar = MessageBar()
        splitter = QSplitter(Qt.Orientation.Vertical)  # the plots get the whole width
        splitter.setObjectName("training-plots-runs")
        self.curves = PlotsArea(sliced)
        self.plots = self.curves.plots  # what the records go to
        self.construction = self.plots.construction  # the slow part: the rest is built at once
        self.curves.png_button.clicked.connect(lambda: self.exporter.plots_dialog(self.plots))
        self.curves.csv_button.clicked.connect(lambda: self.exporter.csv_dialog(self.workspace.shown_run))
        splitter.addWidget(self.curves)
        splitter.addWidget(self._build_side())
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 0)  # the side keeps the height its table needs; the plots take the rest
        splitter.setCollapsible(1, False)
        self.splitter = splitter
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.message_bar)
        layout.addWidget(splitter, 1)

    def _set_icons(self) -> None:
        """Start, Pause (Play while it says Resume) and Stop glyphs in the scheme's button text colours, readable
        enabled or not."""
        paused = self.controller.state == PAUSED
        for button, icon in (
            (self.start_button, QStyle.StandardPixmap.SP_MediaPlay),
            (self.pause_button, QStyle.StandardPixmap.SP_MediaPlay if paused else QStyle.StandardPixmap.SP_MediaPause),
            (self.stop_button, QStyle.StandardPixmap.SP_MediaStop),
        ):
            button.setIcon(glyph_icon(self.style().standardIcon(icon), self.palette()))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            self._set_icons()

    def _build_side(self) -> QWidget:
        """The Runs page, the probes and the log, as tabs."""
        self.runs = RunsPage(self.workspace)
        self.runs.table.itemDoubleClicked.connect(lambda _: self.open_selected_run())
        self.runs.table.itemSelectionChanged.connect(self._update_controls)
        self.runs.open_button.clicked.connect(self.open_selected_run)
        self.runs.overlay_button.clicked.connect(self.overlay_selected_run)
        self.runs.resume_button.clicked.connect(self.resume_selected_run)
        self.runs.export_button.clicked.connect(lambda: self.export_dialog(self.selected_run()))
        self.runs.branch_button.clicked.connect(self.branch_selected_run)

        self.probes_editor = ProbesEditor()

        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(5000)
        self.side = QTabWidget()
        self.side.addTab(self.runs, "Runs")
        self.side.addTab(self.probes_editor, "Probes")
        self.side.addTab(self.log, "Log")
        return self.side

    # --- probes -------------------------------------------------------------------------------------
    def set_probes(self, probes: list[Probe]) -> None:
        self.probes_editor.set_probes(probes)

    def probes(self) -> list[Probe]:
        return self.probes_editor.probes()

    # --- actions ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start a new run with the workspace's corpus, tokenizer and configuration."""
        reason = self._not_ready()
        if reason:
            self.message_bar.show_message(reason, "warning")
            return
        try:
            probes = self.probes()
        except UserError as exc:
            self.message_bar.show_message(f"Fix the probes first: {exc}.", "error")
            return
        self._launch(self._new_request(probes), "Starting", len(probes))

    def _new_request(self, probes: list[Probe]) -> TrainingRequest:
        """A new run as the workspace asks for it: its corpus, tokenizer and configuration, the imported model it
        continues (if any), under the runs folder."""
        workspace = self.workspace
        return TrainingRequest(
            runs_root=self.runs_root,
            config=workspace.config,
            corpus=workspace.corpus,
            tokenizer=None if workspace.initial_model else workspace.tokenizer,
            init_from=workspace.initial_model,
            probes=tuple(probes),
        )

    def resume_run(self, path: Path) -> None:
        """Continue a run from its latest checkpoint, on the corpus recorded in it, with its own settings; where
        the Configuration panel's differ, say that they are not used."""
        self._launch(TrainingRequest(resume=path, form=self.workspace.config), "Resuming", _probe_count(path))

    def branch_selected_run(self) -> None:
        """*Branch from here…*: ask which checkpoint, which batches to skip and which settings to change, then
        train the branch."""
        path = self.selected_run()
        if path is None or self.controller.busy:
            return
        self.branch_dialog = dialog = BranchDialog(path, self)
        dialog.accepted.connect(lambda: self._launch(dialog.request(self.runs_root), "Branching", _probe_count(path)))
        dialog.open()

    def _launch(self, request: TrainingRequest, verb: str, probes: int) -> None:
        """Resolve and train `request` on the controller's thread (nothing here reads a file); what the resolution
        says is shown once the run has started."""
        try:
            path = run_folder(request)
        except UserError as exc:
            self.message_bar.show_message(str(exc), "error")
            return
        notes = self.start_notes
        notes.clear()

        def prepare_request(progress, control, held) -> Trainer:
            return prepare(
                request,
                say=notes.append,
                held=held,
                progress=progress,
                control=control,
                pause_on_save_error=True,
            )

        message = f"{verb} {path.name}"
        self._log(message)
        self.controller.start(prepare_request)
        self.shown.launch(path, message, probes)
        self.training_run_changed.emit(path)

    def toggle_pause(self) -> None:
        if self.controller.state == RUNNING:
            self.controller.pause()
            self._log("Paused")
        elif self.controller.state == PAUSED:
            self.controller.resume()
            self._log("Resumed")

    def stop(self) -> None:
        if self.controller.busy:
            self._log("Stopping after this step…")
            self.controller.stop()

    # --- runs ---------------------------------------------------------------------------------------
    @property
    def runs_root(self) -> Path:
        return self.runs.root

    @property
    def training_run(self) -> Path | None:
        """The run being prepared or trained; None while idle."""
        return self.shown.training

    def state(self) -> dict[str, object]:
        """What the window remembers of this panel between starts: its plots' axis and smoothing."""
        return self.curves.state()

    def restore(self, state: dict[str, object]) -> None:
        self.curves.restore(state)

    def refresh_runs(self) -> None:
        """The runs folder read again off the GUI thread: the table follows when what it lists changed."""
        self.workspace.runs_updated()

    def selected_run(self) -> Path | None:
        return self.runs.selected()

    def open_selected_run(self) -> None:
        path = self.selected_run()
        if path is not None:
            self.open_run(path)

    def open_run(self, path: Path) -> None:
        """Show a run's curves and outcome (it may live outside the runs folder): looking at a run, not choosing it
        for the other panels. The run being trained is shown live."""
        if self.shown.is_training(path):
            self.shown.show_training()
            return
        try:
            records = RunDir(path).read_metrics()
        except CheckpointError as exc:
            self.message_bar.show_message(str(exc), "error")
            return
        self.shown.open(path, records)
        self._log(f"Opened {path.name}: {len(records)} records")

    def show_training_run(self) -> None:
        """Show the run being trained again (the header's button does it too)."""
        self.shown.show_training()

    def overlay_selected_run(self) -> None:
        path = self.selected_run()
        if path is None:
            return
        try:
            if not path.is_dir():
                raise CheckpointError("the folder no longer exists")
            records = RunDir(path).read_metrics()
        except (CheckpointError, OSError) as exc:
            self.message_bar.show_message(f"Cannot overlay {path.name}: {exc}", "error")
            self.refresh_runs()
            return
        self.plots.overlay(path.name, records)

    def resume_selected_run(self) -> None:
        path = self.selected_run()
        if path is not None and not self.controller.busy:
            self.resume_run(path)

    # --- export -------------------------------------------------------------------------------------
    def export_plots(self, path: str) -> bool:
        return self.exporter.save_plots(self.plots, path)

    def export_dialog(self, run: Path | None) -> None:
        """Ask where to write `run` (or a run folder the user picks) as a Hugging Face folder, and write it."""
        self.exporter.ask(run, self.runs_root)
        self._update_controls()

    def export_run(self, run: Path, out: Path, overwrite: bool = False) -> None:
        self.exporter.export(run, out, overwrite)
        self._update_controls()

    # --- controller signals -------------------------------------------------------------------------
    def _on_prepare_progress(self, done: int, total: int, message: str) -> None:
        self.shown.prepare_progress(done, total, message)

    def _on_prepared(self, started: StartedRecord) -> None:
        run = self.shown.prepared(started)
        self.workspace.set_run(run)
        self._log(started.describe())
        for note in self.start_notes:
            self._log(note.text)
            self.shown.tell(note.short, "info", run)
        self.start_notes.clear()
        self.workspace.read_runs()

    def _on_record(self, record) -> None:
        self.shown.record(record)
        if not isinstance(record, (StepRecord, StartedRecord)):
            self._log(record.describe())
        if isinstance(record, CheckpointRecord):
            self.checkpoint_written.emit(record.path)
            self.refresh_runs()

    def _on_failed(self, message: str) -> None:
        self._log(f"Error: {message}")
        self.shown.tell(message, "error", self.shown.training)

    def _on_finished(self) -> None:
        self.shown.finished()
        self.refresh_runs()
        self.training_run_changed.emit(None)
        self.run_finished.emit()

    def _on_state(self, state: str) -> None:
        self.pause_button.setText("Resume" if state == PAUSED else "Pause")
        self._set_icons()
        self.shown.state_changed()
        self._update_controls()

    # --- helpers ------------------------------------------------------------------------------------
    def set_config_error(self, message: str) -> None:
        self.config_error = message
        self._update_controls()

    def _not_ready(self) -> str:
        if self.controller.busy:
            return "A training is already running."
        if self.workspace.corpus is None:
            return "Load a corpus first (Corpus panel)."
        if self.workspace.tokenizer is None:
            return "Train or load a tokenizer first (Corpus panel)."
        if self.config_error:
            return f"Fix the configuration first: {self.config_error}."
        return ""

    def _update_controls(self) -> None:
        state = self.controller.state
        reason = self._not_ready()
        self.start_button.setEnabled(not reason)
        self.start_button.setToolTip(reason or "Train a new run with the current configuration (Ctrl+R)")
        self.reason_label.setText(reason if state == IDLE else "")
        self.reason_label.setVisible(bool(reason) and state == IDLE)
        self.pause_button.setEnabled(state in (RUNNING, PAUSED))
        self.stop_button.setEnabled(state in (PREPARING, RUNNING, PAUSED))
        training = self.training_run
        name = training.name if training is not None else "the training run"
        self.pause_button.setToolTip(f"{'Resume' if state == PAUSED else 'Pause'} {name} (Ctrl+P)")
        self.stop_button.setToolTip(f"Stop {name} after this step and save a checkpoint (Ctrl+.)")
        self.runs.enable(idle=state == IDLE, exporting=self.exporter.running)

    def _log(self, text: str) -> None:
        self.log.appendPlainText(f"{time.strftime('%H:%M:%S')}  {text}")


def _probe_count(run: Path) -> int:
    """How many probes `run` scores (none where its list cannot be read)."""
    try:
        return len(load_probes(run))
    except UserError:
        return 0


if __name__ == "__main__":
    import tempfile

    from mlm_studio.ui.preview import preview

    def in_a_new_folder(workspace: Workspace) -> TrainingPanel:
        workspace.set_runs_root(Path(tempfile.mkdtemp(prefix="mlm-studio-runs-")))
        return TrainingPanel(workspace)

    preview(in_a_new_folder)
