"""Training panel: start, pause, resume and stop a run, watch its curves live, compare and export runs. Its rules
are its `TrainingModel`'s (model.py, no Qt); what it shows belongs to the workspace's shown run (`ShownRun` keeps it
so), while a training goes on out of sight."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QSplitter, QTabWidget, QVBoxLayout, QWidget

from mlm_studio.core.errors import UserError
from mlm_studio.core.runs.control import PAUSED, RUNNING
from mlm_studio.core.runs.records import CheckpointRecord, StartedRecord, StepRecord
from mlm_studio.core.training.probes import Probe, load_probes
from mlm_studio.core.training.request import TrainingRequest, prepare, run_folder
from mlm_studio.core.training.trainer import Trainer
from mlm_studio.ui.panels.training.branch_dialog import BranchDialog
from mlm_studio.ui.panels.training.buttons import TrainingButtons
from mlm_studio.ui.panels.training.model import TrainingModel
from mlm_studio.ui.panels.training.plots_area import PlotsArea
from mlm_studio.ui.panels.training.run_header import RunHeader
from mlm_studio.ui.panels.training.run_log import RunLog
from mlm_studio.ui.panels.training.runs_page import RunsPage
from mlm_studio.ui.panels.training.shown_run import ShownRun
from mlm_studio.ui.panels.training.step_batch import StepBatches
from mlm_studio.ui.run_export import RunExporter
from mlm_studio.ui.trainer_thread import TrainingController
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.probes_editor import ProbesEditor
from mlm_studio.ui.workspace import Workspace


class TrainingPanel(QWidget):
    """Runs the engine's trainer through a `TrainingController`; never blocks the event loop. Its rules are its
    `TrainingModel`'s: the panel forwards the trainer's signals and the user's acts, and shows what it says."""

    checkpoint_written = Signal(str)
    run_finished = Signal()
    training_run_changed = Signal(object)  # Path | None: the run being prepared or trained (None when idle)

    def __init__(self, workspace: Workspace, parent: QWidget | None = None, sliced: bool = False) -> None:
        """`sliced`: leave the live plots' construction, one plot per step, to the window's launch."""
        super().__init__(parent)
        self.workspace = workspace
        self.model = TrainingModel()
        self.controller = TrainingController(self)
        self._build(sliced)
        views = (self.header, self.plots, self.message_bar, self.runs.table)
        self.shown = ShownRun(workspace, self.model, views, self.probes_editor.count, self)
        self.step_batches = StepBatches(self.plots, workspace)  # after ShownRun: it draws the curves first
        self.exporter = RunExporter(self, self.message_bar, self.log.say)
        self.exporter.finished.connect(self._update_controls)
        controller = self.controller
        controller.state_changed.connect(self.model.set_phase)  # first: what follows reads the model
        controller.state_changed.connect(lambda _: self.shown.state_changed())
        controller.state_changed.connect(lambda _: self._update_controls())
        controller.prepared.connect(self._on_prepared)
        controller.progress.connect(self.shown.prepare_progress)
        controller.record.connect(self._on_record)
        controller.failed.connect(lambda message: self.log.say(f"Error: {message}"))
        controller.failed.connect(self.shown.failed)
        controller.finished.connect(self._on_finished)
        for signal in (workspace.corpus_changed, workspace.tokenizer_changed, workspace.config_changed):
            signal.connect(lambda *_: self._update_controls())
        workspace.shown_run_changed.connect(lambda *_: self._update_controls())  # Overlay: not the shown run
        self.probes_editor.changed.connect(self.shown.update_hints)
        self.runs.refresh()
        self.splitter.setSizes([10_000, self.side.minimumSizeHint().height()])  # the least runs table it shows
        self._update_controls()
        self.shown.update_hints()

    def _build(self, sliced: bool) -> None:
        """The buttons and the shown run's header above the message bar; under them the plots, and the Runs,
        Probes and Log tabs."""
        self.buttons = TrainingButtons()
        self.start_button, self.pause_button = self.buttons.start_button, self.buttons.pause_button
        self.stop_button, self.reason_label = self.buttons.stop_button, self.buttons.reason_label
        self.start_button.clicked.connect(self.start)
        self.pause_button.clicked.connect(self.toggle_pause)
        self.stop_button.clicked.connect(self.stop)
        self.header = RunHeader()
        self.progress_bar, self.status_label = self.header.progress_bar, self.header.status_label
        top = QHBoxLayout()
        top.addWidget(self.buttons)
        top.addWidget(self.reason_label, 2)
        top.addWidget(self.header, 5)
        self.message_bar = MessageBar()
        self.curves = PlotsArea(sliced)
        self.plots = self.curves.plots  # what the records go to
        self.construction = self.plots.construction  # the slow part: the rest is built at once
        self.curves.png_button.clicked.connect(lambda: self.exporter.plots_dialog(self.plots))
        self.curves.csv_button.clicked.connect(lambda: self.exporter.csv_dialog(self.workspace.shown_run))
        self.runs = RunsPage(self.workspace)
        self.runs.table.itemDoubleClicked.connect(lambda _: self.open_run(self.selected_run()))
        self.runs.table.itemSelectionChanged.connect(self._update_controls)
        self.runs.open_button.clicked.connect(lambda: self.open_run(self.selected_run()))
        self.runs.overlay_button.clicked.connect(lambda: self.shown.overlay(self.selected_run()))
        self.runs.resume_button.clicked.connect(lambda: self.resume_run(self.selected_run()))
        self.runs.export_button.clicked.connect(lambda: self.export_dialog(self.selected_run()))
        self.runs.branch_button.clicked.connect(lambda: self.branch_run(self.selected_run()))
        self.probes_editor = ProbesEditor()
        self.log = RunLog()
        self.side = QTabWidget()
        self.side.addTab(self.runs, "Runs")
        self.side.addTab(self.probes_editor, "Probes")
        self.side.addTab(self.log, "Log")
        self.splitter = QSplitter(Qt.Orientation.Vertical)  # the plots get the whole width
        self.splitter.setObjectName("training-plots-runs")
        self.splitter.addWidget(self.curves)
        self.splitter.addWidget(self.side)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 0)  # the side keeps the height its table needs; the plots take the rest
        self.splitter.setCollapsible(1, False)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.splitter, 1)

    # --- probes -------------------------------------------------------------------------------------
    def set_probes(self, probes: list[Probe]) -> None:
        self.probes_editor.set_probes(probes)

    def probes(self) -> list[Probe]:
        return self.probes_editor.probes()

    # --- actions ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start a new run with the workspace's corpus, tokenizer and configuration, continuing the imported model
        it names (if any), under the runs folder."""
        workspace = self.workspace
        refusal = self.model.refusal(workspace.corpus is not None, workspace.tokenizer is not None)
        if refusal:
            self.message_bar.show_message(refusal, "warning")
            return
        try:
            probes = self.probes()
        except UserError as exc:
            self.message_bar.show_message(f"Fix the probes first: {exc}.", "error")
            return
        request = TrainingRequest(
            runs_root=self.runs_root,
            config=workspace.config,
            corpus=workspace.corpus,
            tokenizer=None if workspace.initial_model else workspace.tokenizer,
            init_from=workspace.initial_model,
            probes=tuple(probes),
        )
        self._launch(request, "Starting", len(probes))

    def resume_run(self, path: Path | None) -> None:
        """Continue a run from its latest checkpoint, on the corpus recorded in it, with its own settings; where
        the Configuration panel's differ, say that they are not used."""
        if path is not None and not self.model.busy:
            self._launch(TrainingRequest(resume=path, form=self.workspace.config), "Resuming", _probe_count(path))

    def branch_run(self, path: Path | None) -> None:
        """*Branch from here…*: ask which checkpoint of `path`, which batches to skip and which settings to change,
        then train the branch."""
        if path is None or self.model.busy:
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
        message = f"{verb} {path.name}"
        self.log.say(message)
        self.shown.launch(path, message, probes)
        notes = self.model.notes

        def prepare_request(progress, control, held) -> Trainer:
            return prepare(
                request,
                say=notes.append,
                path=path,
                held=held,
                progress=progress,
                control=control,
                pause_on_save_error=True,
            )

        self.controller.start(prepare_request)
        self.training_run_changed.emit(path)

    def toggle_pause(self) -> None:
        if self.model.phase == RUNNING:
            self.controller.pause()
            self.log.say("Paused")
        elif self.model.phase == PAUSED:
            self.controller.resume()
            self.log.say("Resumed")

    def stop(self) -> None:
        if self.model.busy:
            self.log.say("Stopping after this step…")
            self.controller.stop()

    # --- runs ---------------------------------------------------------------------------------------
    @property
    def runs_root(self) -> Path:
        return self.runs.root

    @property
    def training_run(self) -> Path | None:
        """The run being prepared or trained; None while idle."""
        return self.model.training

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

    def open_run(self, path: Path | None) -> None:
        """Show a run's curves and outcome (it may live outside the runs folder): looking at a run, not choosing it
        for the other panels. The run being trained is shown live."""
        records = self.shown.open(path) if path is not None else None
        if records is not None:
            self.log.say(f"Opened {path.name}: {records} records")

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

    # --- the trainer's signals ----------------------------------------------------------------------
    def _on_prepared(self, started: StartedRecord) -> None:
        run = self.shown.prepared(started)
        self.workspace.set_run(run)
        self.log.say(started.describe())
        for note in self.model.take_notes():
            self.log.say(note.text)
            self.shown.tell(note.short, "info", run)
        self.workspace.read_runs()

    def _on_record(self, record) -> None:
        self.shown.record(record)
        if not isinstance(record, (StepRecord, StartedRecord)):
            self.log.say(record.describe())
        if isinstance(record, CheckpointRecord):
            self.checkpoint_written.emit(record.path)
            self.refresh_runs()

    def _on_finished(self) -> None:
        self.shown.finished()
        self.refresh_runs()
        self.training_run_changed.emit(None)
        self.run_finished.emit()

    # --- the buttons --------------------------------------------------------------------------------
    def set_config_error(self, message: str) -> None:
        self.model.config_error = message
        self._update_controls()

    def _update_controls(self) -> None:
        workspace = self.workspace
        refusal = self.model.refusal(workspace.corpus is not None, workspace.tokenizer is not None)
        controls = self.model.controls(refusal)
        self.buttons.show_controls(controls)
        path = self.selected_run()
        summary = self.runs.table.summary(path) if path is not None else None
        self.runs.enable(self.model.why_not(path, summary, workspace.shown_run, self.exporter.running))


def _probe_count(run: Path) -> int:
    """How many probes `run` scores (none where its list cannot be read)."""
    try:
        return len(load_probes(run))
    except UserError:
        return 0
