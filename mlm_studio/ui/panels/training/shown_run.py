"""The Training panel's view of one run at a time, the workspace's shown run: its curves, the header's progress bar
and status line, the empty plots' hints and the message bar's messages about it all belong to that run.

The run being trained goes on while the user looks at another: its records are kept for when it is shown again and
never drawn into another run's curves, and the header says which run trains, with a button back to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject

from mlm_studio.core.runs.history import same_run, summarize
from mlm_studio.core.runs.records import StartedRecord, StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.ui.panels.training.model import TrainingModel
from mlm_studio.ui.panels.training.run_header import RunHeader
from mlm_studio.ui.widgets.live_plots import LivePlots
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.runs_table import RunsTable
from mlm_studio.ui.workspace import Workspace


class ShownRun(QObject):
    """Keeps the views of the shown run true; the panel hands it the training's signals, which it applies to the
    `model`, and the runs to show."""

    def __init__(
        self,
        workspace: Workspace,
        model: TrainingModel,
        views: tuple[RunHeader, LivePlots, MessageBar, RunsTable],
        probes_set: Callable[[], int],
        parent: QObject,
    ) -> None:
        """`probes_set`: how many probes the Probes tab holds, said while no run is shown."""
        super().__init__(parent)
        self.workspace, self.model, self.probes_set = workspace, model, probes_set
        self.header, self.plots, self.message_bar, self.table = views
        self._curves_of: Path | None = None  # the run whose curves the plots hold
        self._message_run: Path | None = None  # the run the message bar speaks of, if any
        workspace.shown_run_changed.connect(self._on_shown_run)
        workspace.run_changed.connect(self._on_current_run)
        self.header.back_button.clicked.connect(self.show_training)

    # --- what is shown ------------------------------------------------------------------------------
    def launch(self, path: Path, said: str, probes: int) -> None:
        """Train `path`, shown from now on: its curves start empty, its progress is its preparation's."""
        self.model.launch(path, said, probes)
        self.tell("", "info", None)
        self.plots.clear()
        self._curves_of = path
        self._show(path)

    def open(self, path: Path) -> int | None:
        """Show `path` with its curves and its outcome from its files (the run being trained, live); returns how
        many records were read, None where none were (the run being trained, or records that cannot be read: said
        in the message bar)."""
        if self.model.is_training(path):
            self.show_training()
            return None
        try:
            records = RunDir(path).read_metrics()
        except CheckpointError as exc:
            self.message_bar.show_message(str(exc), "error")
            return None
        self.plots.load(records)
        self._curves_of = path
        self._show(path)
        return len(records)

    def overlay(self, path: Path | None) -> None:
        """Draw `path`'s curves over the shown ones; a run that can no longer be read is said, and the runs folder
        read again."""
        if path is None:
            return
        try:
            if not path.is_dir():
                raise CheckpointError("the folder no longer exists")
            records = RunDir(path).read_metrics()
        except (CheckpointError, OSError) as exc:
            self.message_bar.show_message(f"Cannot overlay {path.name}: {exc}", "error")
            self.workspace.runs_updated()
            return
        self.plots.overlay(path.name, records)

    def show_training(self) -> None:
        """Show the run being trained again: its curves as far as they go, its progress live."""
        training = self.model.training
        if training is not None:
            self.plots.load(self.model.records)
            self._curves_of = training
            self._show(training)

    def _on_current_run(self, path: Path | None) -> None:
        """The current run (one remembered from the last session) is shown while no other run is."""
        if path is not None and self.workspace.shown_run is None and self.model.training is None:
            self._show(path)

    def _showing_training(self) -> bool:
        return self.model.is_training(self.workspace.shown_run)

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
            if path is not None and self.model.is_training(path):
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
        self.header.show_elsewhere(self.model.elsewhere())
        if shown is None:
            self.header.show_nothing()
        elif not (shown / "config.toml").is_file():
            self.header.show_missing(shown.name, "no run there (moved or deleted?)")
        else:
            self.header.show_outcome(shown.name, summarize(RunDir(shown)))

    def update_hints(self) -> None:
        """What the empty plots say: no run yet, or the shown run's probes (to come, never scored, or none)."""
        for plot, text in self.model.hints(self.workspace.shown_run, self.probes_set()).items():
            self.plots.set_hint(plot, text)

    def _draw_live(self) -> None:
        model = self.model
        if model.started is None:
            self.header.show_preparing(model.launched)
            if model.preparation is not None:
                self.header.show_prepare_progress(*model.preparation)
        else:
            self.header.show_started(model.started)
            self._say_progress()
        if model.stopping:
            self.header.show_stopping()

    def _say_progress(self) -> None:
        """The status line: the last step's loss, pace and time left; while paused, no countdown."""
        model = self.model
        if model.last_step is not None:
            self.header.show_step(model.last_step, model.counts_seconds, model.paused, model.seconds_left())

    # --- the training's signals ---------------------------------------------------------------------
    def prepare_progress(self, done: int, total: int, message: str) -> None:
        self.model.preparing(done, total, message)
        if self._showing_training():
            self.header.show_prepare_progress(done, total, message)

    def prepared(self, started: StartedRecord) -> Path:
        """The run began at `started.step`: its earlier curves (a resumed run's) come back. Returns its folder."""
        shown = self._showing_training()
        run = Path(started.run_dir)
        earlier = [r for r in RunDir(run).read_metrics() if r["step"] <= started.step] if started.step else []
        self.model.prepared(started, earlier)
        if shown:
            if earlier:
                self.plots.load(earlier)
            self._curves_of = run
        self._show_live()
        if shown:
            self.workspace.show_run(run)  # as the trainer names it
        self.update_header()
        return run

    def record(self, record) -> None:
        """Keep the training's `record`; draw it where its run is shown, else say how far the training is. A record
        still on its way when its training ended (the controller stopped and waited for) belongs to no training now."""
        if self.model.training is None:
            return
        model, shown = self.model, self._showing_training()
        model.record(record)
        if shown:
            self.plots.add(record.kind, model.records[-1])
        if isinstance(record, StepRecord):
            self._show_live()
            if shown:
                self._say_progress()
            else:
                self.header.show_elsewhere(model.elsewhere())
        said, level = model.said_of(record, shown)
        if said:
            self.tell(said, level, model.training)

    def failed(self, message: str) -> None:
        self.tell(message, "error", self.model.training)

    def state_changed(self) -> None:
        if self.model.started is not None:
            self._show_live()
        if self.model.training is not None:
            self.update_header()

    def finished(self) -> None:
        """The training ended: the header tells the shown run's outcome from its files (no run, where it failed
        before its folder was made)."""
        training = self.model.finished()
        self.table.set_live(None)
        if same_run(self.workspace.shown_run, training) and not (training / "config.toml").is_file():
            self._message_run = None  # why it was never made stays said
            self._show(None)
        else:
            self.update_header()
            self.update_hints()

    def _show_live(self) -> None:
        """The Runs table's row of the run being trained says its state and step as they are now."""
        self.table.set_live(*self.model.live_row())
