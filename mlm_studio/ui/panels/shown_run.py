"""The Training panel's view of one run at a time, the workspace's shown run: its curves, the header's progress bar
and status line, the empty plots' hints and the message bar's messages about it all belong to that run.

The run being trained goes on while the user looks at another: its records are kept for when it is shown again and
never drawn into another run's curves, and the header says which run trains, with a button back to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject

from mlm_studio.core.durations import Eta
from mlm_studio.core.errors import UserError
from mlm_studio.core.runs.history import same_run, summarize
from mlm_studio.core.runs.records import (
    EvalRecord,
    FinishedRecord,
    PausedRecord,
    StartedRecord,
    StepRecord,
    WarningRecord,
)
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.training.probes import load_probes
from mlm_studio.ui.panels.run_header import RunHeader
from mlm_studio.ui.panels.training_texts import finished_message, hints
from mlm_studio.ui.trainer_thread import PAUSED, STOPPING, TrainingController
from mlm_studio.ui.widgets.live_plots import LivePlots
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.runs_table import RunsTable
from mlm_studio.ui.workspace import Workspace


class ShownRun(QObject):
    """Keeps the views of the shown run true; the panel hands it the training's signals and the runs to show."""

    def __init__(
        self,
        workspace: Workspace,
        controller: TrainingController,
        views: tuple[RunHeader, LivePlots, MessageBar, RunsTable],
        probes_set: Callable[[], int],
    ) -> None:
        """`probes_set`: how many probes the Probes tab holds, said while no run is shown."""
        super().__init__(controller)
        self.workspace, self.controller, self.probes_set = workspace, controller, probes_set
        self.header, self.plots, self.message_bar, self.table = views
        self.training: Path | None = None  # the run being prepared or trained
        self.started: StartedRecord | None = None
        self.eta: Eta | None = None
        self._launched = ""  # what its launch said ("Starting …")
        self._preparation: tuple[int, int, str] | None = None  # how far its preparation got
        self._records: list[dict] = []  # its records, to draw again when it is shown again
        self._probes = 0  # how many cloze probes it scores
        self._live_step = 0
        self._last_step: StepRecord | None = None  # for the status line
        self._last_eval: EvalRecord | None = None  # for its finishing message
        self._curves_of: Path | None = None  # the run whose curves the plots hold
        self._message_run: Path | None = None  # the run the message bar speaks of, if any
        workspace.shown_run_changed.connect(self._on_shown_run)
        workspace.run_changed.connect(self._on_current_run)
        self.header.back_button.clicked.connect(self.show_training)

    # --- what is shown ------------------------------------------------------------------------------
    def launch(self, path: Path, said: str, probes: int) -> None:
        """Train `path`, shown from now on: its curves start empty, its progress is its preparation's."""
        self.training, self._launched, self._probes = path, said, probes
        self._preparation = self.started = self._last_step = self._last_eval = None
        self._records = []
        self.tell("", "info", None)
        self.plots.clear()
        self._curves_of = path
        self._show(path)

    def open(self, path: Path, records: list[dict]) -> None:
        """Show `path` with its `records`' curves and its outcome from its files."""
        self.plots.load(records)
        self._curves_of = path
        self._show(path)

    def show_training(self) -> None:
        """Show the run being trained again: its curves as far as they go, its progress live."""
        if self.training is not None:
            self.plots.load(self._records)
            self._curves_of = self.training
            self._show(self.training)

    def _on_current_run(self, path: Path | None) -> None:
        """The current run (one remembered from the last session) is shown while no other run is."""
        if path is not None and self.workspace.shown_run is None and self.training is None:
            self._show(path)

    def is_training(self, path: Path | None) -> bool:
        return same_run(path, self.training)

    def _showing_training(self) -> bool:
        return same_run(self.workspace.shown_run, self.training)

    def _show(self, path: Path | None) -> None:
        """Make `path` the shown run; the header, hints and messages follow it (again if it already was)."""
        self.plots.own_name = path.name if path is not None else ""
        if self.workspace.shown_run == path:
            self._on_shown_run(path)
        else:
            self.workspace.show_run(path)

    def _on_shown_run(self, path: Path | None) -> None:
        """Another run is shown: its curves (where they are not in the plots yet), header and hints; a message
        about another run goes."""
        if not same_run(path, self._curves_of):
            if path is not None and self.is_training(path):
                self.show_training()
                return
            try:
                self.plots.own_name = path.name if path is not None else ""
                self.plots.load(RunDir(path).read_metrics() if path is not None else [])
            except CheckpointError:
                self.plots.clear()
            self._curves_of = path
        if self._message_run is not None and not same_run(self._message_run, path):
            self.tell("", "info", None)
        self.update_header()
        self.update_hints()

    def tell(self, text: str, level: str, run: Path | None) -> None:
        """Show `text` in the message bar ("" clears it); `run`: the run it speaks of, whose message goes when
        another run is shown."""
        if text:
            self.message_bar.show_message(text, level)
        else:
            self.message_bar.clear()
        self._message_run = run if text else None

    def update_header(self) -> None:
        """The bar and status line of the shown run: live for the run being trained, else its outcome from its
        files; while a training runs out of sight, which run it is."""
        shown = self.workspace.shown_run
        if self._showing_training():
            self.header.show_elsewhere("")
            self._draw_live()
            return
        self.header.show_elsewhere(self._training_said())
        if shown is None:
            self.header.show_nothing()
        elif not (shown / "config.toml").is_file():
            self.header.show_missing(shown.name, "no run there (moved or deleted?)")
        else:
            self.header.show_outcome(shown.name, summarize(RunDir(shown)))

    def update_hints(self) -> None:
        """What the empty plots say: no run yet, or the shown run's probes (to come, never scored, or none)."""
        shown = self.workspace.shown_run
        if shown is None:
            probes = self.probes_set()
        elif self._showing_training():
            probes = self._probes
        else:
            try:
                probes = len(load_probes(shown))
            except (UserError, OSError):
                probes = 0
        for plot, text in hints(shown, self._showing_training(), probes).items():
            self.plots.set_hint(plot, text)

    def _draw_live(self) -> None:
        if self.started is None:
            self.header.show_preparing(self._launched)
            if self._preparation is not None:
                self.header.show_prepare_progress(*self._preparation)
        else:
            self.header.show_started(self.started)
            self._say_progress()
        if self.controller.state == STOPPING:
            self.header.show_stopping()

    def _training_said(self) -> str:
        """How far the training is and which run it is, said while another run is shown ("" when none trains): the
        progress first, where a narrow header still shows it."""
        if self.training is None:
            return ""
        if self.started is None:
            return f"Training: preparing · {self.training.name}"
        step = self._last_step.step if self._last_step is not None else self.started.step
        total = f" of {self.started.total_steps:,}" if self.started.time_budget <= 0 else ""
        return f"Training: {self.controller.state}, step {step:,}{total} · {self.training.name}"

    def _say_progress(self) -> None:
        """The status line: the last step's loss, pace and time left; while paused, no countdown."""
        record = self._last_step
        if record is None:
            return
        left = self.eta.seconds_left(record.step, record.elapsed) if self.eta else 0.0
        seconds = self.started is not None and self.started.time_budget > 0  # the bar counts the budget's seconds
        self.header.show_step(record, seconds, self.controller.state == PAUSED, left)

    # --- the training's signals ---------------------------------------------------------------------
    def prepare_progress(self, done: int, total: int, message: str) -> None:
        self._preparation = (done, total, message)
        if self._showing_training():
            self.header.show_prepare_progress(done, total, message)

    def prepared(self, started: StartedRecord) -> Path:
        """The run began at `started.step`: its earlier curves (a resumed run's) come back. Returns its folder."""
        self.started = started
        run = Path(started.run_dir)
        shown = self._showing_training()
        self.training = run
        earlier = [r for r in RunDir(run).read_metrics() if r["step"] <= started.step] if started.step else []
        self._records = list(earlier)
        if shown:
            if earlier:
                self.plots.load(earlier)
            self._curves_of = run
        first_elapsed = max((r.get("elapsed", 0.0) for r in earlier), default=0.0)
        self.eta = Eta(started.step, started.total_steps, started.time_budget, first_elapsed)
        self.show_live(started.step)
        if shown:
            self.workspace.show_run(run)  # as the trainer names it
        self.update_header()
        return run

    def record(self, record) -> None:
        """Keep the training's `record`; draw it where its run is shown, else say how far the training is."""
        data = record.to_dict()
        self._records.append(data)
        if self._showing_training():
            self.plots.add(record.kind, data)
        if isinstance(record, StepRecord):
            self._last_step = record
            self.show_live(record.step)
            if self._showing_training():
                self._say_progress()
            else:
                self.header.show_elsewhere(self._training_said())
        elif isinstance(record, EvalRecord):
            self._last_eval = record
        elif isinstance(record, (PausedRecord, WarningRecord)):
            said = record.message if self._showing_training() else f"{self.training.name}: {record.message}"
            self.tell(said, "warning", self.training)
        elif isinstance(record, FinishedRecord):
            self.tell(finished_message(record, self.training.name, self._last_eval), "info", self.training)

    def state_changed(self) -> None:
        if self.started is not None:
            self.show_live(self._live_step)
        if self.training is not None:
            self.update_header()

    def finished(self) -> None:
        """The training ended: the header tells the shown run's outcome from its files (no run, where it failed
        before its folder was made)."""
        training, self.training = self.training, None
        self.started = self._last_step = self._preparation = None
        self.table.set_live(None)
        if same_run(self.workspace.shown_run, training) and not (training / "config.toml").is_file():
            self._message_run = None  # why it was never made stays said
            self._show(None)
        else:
            self.update_header()
            self.update_hints()

    def show_live(self, step: int) -> None:
        """The Runs table's row of the run being trained says its state and step as they are now."""
        self._live_step = step
        last = self._last_step if self._last_step is not None and self._last_step.step == step else None
        tokens, elapsed = (last.tokens_seen, last.elapsed) if last is not None else (None, None)
        self.table.set_live(Path(self.started.run_dir), self.controller.state, step, tokens, elapsed)
