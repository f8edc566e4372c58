"""A step's batch from the Training panel's curves: the shown run's loss spikes marked on its loss plot (as its steps
arrive, while it trains), and a click on a point of the loss, accuracy or gradient-norm curves opening that step's
batch, replayed off the GUI thread and drawn as the masking preview draws blocks, each masked token with its loss
and the model's candidates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, Qt, Signal
from PySide6.QtWidgets import QLabel, QProgressBar, QScrollArea, QVBoxLayout, QWidget

from mlm_studio.core.storage.step_file import StepFileDamaged
from mlm_studio.core.training.replay import Replay, ReplayedToken, Replayer
from mlm_studio.core.training.spikes import LiveSpikes
from mlm_studio.ui.panels.masking.masked_samples import legend, token_cell
from mlm_studio.ui.tasks import TaskRunner, show_progress
from mlm_studio.ui.widgets.live_plots import LivePlots
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView

PICKED_PLOTS = ("loss", "accuracy", "grad_norm")  # the plots whose training points open a step's batch
SHOWN_SEQUENCES = 12  # the blocks drawn, those that carried most of the loss
SPIKE_COLOUR = "#d62728"


def replayed_cell(token: ReplayedToken) -> TokenCell:
    """A token's chip as the masking preview draws it; a masked one with its loss, its tooltip with the model's
    candidates."""
    cell = token_cell(token.token)
    if token.loss is None:
        return cell
    candidates = ", ".join(f"{piece} {chance:.0%}" for piece, chance in token.candidates)
    tip = f"{cell.tooltip}\nloss {token.loss:.3f}; the model's candidates: {candidates}"
    return TokenCell(f"{cell.text} · {token.loss:.1f}", cell.background, tip, cell.muted)


class StepBatchView(QWidget):
    """A window of one step's batch: which checkpoint scored it, then its blocks by their share of the loss."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setWindowTitle("A step's batch")
        self.resize(900, 640)
        self.title, self.summary = QLabel(), QLabel()
        self.summary.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.hide()
        self.sequences = QWidget()
        self.rows = QVBoxLayout(self.sequences)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.sequences)
        layout = QVBoxLayout(self)
        for widget in (self.title, self.summary, legend(), self.progress):
            layout.addWidget(widget)
        layout.addWidget(scroll, 1)
        self.runner = TaskRunner(self)
        self.runner.progress.connect(lambda done, total, message: show_progress(self.progress, done, total, message))
        self.runner.succeeded.connect(self._show)
        self.runner.failed.connect(self._refused)
        self.runner.finished.connect(self.progress.hide)
        self.replay: Replay | None = None
        self._replayer: Replayer | None = None  # the last run's: its blocks, model and weights kept between clicks

    def show_step(self, run: Path, step: int) -> None:
        """Replay `step` of `run` in the background and show it when scored."""
        self.title.setText(f"<b>Step {step}</b> of {run.name}")
        self.summary.setText("Rebuilding the step's batch and scoring it…")
        self._clear()
        kept = self._replayer
        if kept is not None and (kept.run.path != run or not kept.current()):
            kept = None

        def work(progress):
            replayer = kept or Replayer(run)  # a run folder gone is refused in its sentence
            return replayer, replayer.replay(step, progress)

        self.progress.setRange(0, 0)
        self.progress.show()
        self.runner.start(work)
        if self.isVisible():
            self.raise_()  # open behind the main window: in front again
        else:
            self.show()

    def _show(self, result: tuple[Replayer, Replay]) -> None:
        self._replayer, self.replay = result
        replay = self.replay
        self.summary.setText(
            f"Scored with {replay.checkpoint_said()}. Loss {replay.loss:.4f} over {replay.predicted} masked tokens; "
            f"its {len(replay.sequences)} blocks by their share of it, largest first (hover a masked token for the "
            "model's candidates)."
        )
        total = replay.loss * replay.predicted
        for sequence in replay.sequences[:SHOWN_SEQUENCES]:
            share = sequence.loss_sum / total if total else 0.0
            header = QLabel(
                f"block {sequence.block}, micro-batch {sequence.micro_batch}: {share:.1%} of the loss, "
                f"{sequence.predicted} masked tokens, mean loss {sequence.loss:.3f}"
            )
            view = TokenView()
            view.set_cells([replayed_cell(token) for token in sequence.tokens])
            self.rows.addWidget(header)
            self.rows.addWidget(view)
        self.rows.addStretch(1)

    def _refused(self, message: str) -> None:
        self.replay = None
        self.summary.setText(message)

    def _clear(self) -> None:
        while self.rows.count():
            item = self.rows.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()


class StepPicker(QObject):
    """Marks the shown run's spikes on the loss plot, and says which training step a click picked."""

    picked = Signal(int)

    def __init__(self, plots: LivePlots) -> None:
        super().__init__(plots)
        self.plots = plots
        self.spikes = np.zeros(0, dtype=np.int64)
        self.spike_loss = np.zeros(0)
        self.marks = pg.ScatterPlotItem(symbol="t1", size=10, brush=pg.mkBrush(SPIKE_COLOUR), pen=None)
        plots.view.scene().sigMouseClicked.connect(self._on_click)

    def mark(self, spikes: np.ndarray, loss: np.ndarray, again: bool) -> None:
        """Mark the steps `spikes` at their `loss` (a loss that is not a number at the top of the plot), besides
        those marked before unless `again` (and remember them, for picking)."""
        self.plots.construction.finish()
        if again:
            self.spikes, self.spike_loss = spikes, loss
        elif len(spikes):
            self.spikes = np.concatenate([self.spikes, spikes])
            self.spike_loss = np.concatenate([self.spike_loss, loss])
        elif self.marks in self.plots.plots["loss"].items:
            return  # nothing new
        series = self.plots.series.get("step_loss")
        top = float(np.nanmax(series.y, initial=0.0)) if series is not None else 0.0
        plot = self.plots.plots["loss"]
        if self.marks not in plot.items:  # a cleared plot lost it
            plot.addItem(self.marks)
        self.marks.setData(self._x_of(self.spikes), np.nan_to_num(self.spike_loss, nan=top, posinf=top))
        self.marks.setToolTip(f"{len(self.spikes)} loss spike(s): click one to see its batch")

    def _x_of(self, steps: np.ndarray) -> np.ndarray:
        series = self.plots.series.get("step_loss")
        if series is None or not series.size or self.plots.axis == "step":
            return steps.astype(float)
        return np.interp(steps, series.x("step"), series.x(self.plots.axis))

    def step_at(self, plot: str, x: float) -> int | None:
        """The training step nearest `x` in `plot`: a logged step's point, or a spike's mark on the loss plot."""
        steps = [s.x("step") for key, s in self.plots.series.items() if key == f"step_{plot}"]
        if plot == "loss":
            steps.append(self.spikes.astype(float))
        every = np.concatenate(steps) if steps else np.zeros(0)
        if not len(every):
            return None
        return int(every[np.abs(self._x_of(every) - x).argmin()])

    def _on_click(self, event) -> None:
        position: QPointF = event.scenePos()
        for name in PICKED_PLOTS:
            view = self.plots.plots[name].vb
            if view.sceneBoundingRect().contains(position):
                step = self.step_at(name, view.mapSceneToView(position).x())
                if step is not None:
                    self.picked.emit(step)
                return


class StepBatches(QObject):
    """The Training panel's step batches: spikes marked for each run shown, and as its steps arrive for the run
    being trained, a picked step's batch in its window."""

    def __init__(self, plots: LivePlots, workspace) -> None:
        super().__init__(plots)
        self.workspace = workspace
        self.picker = StepPicker(plots)
        self.view = StepBatchView(plots)
        self.live: LiveSpikes | None = None  # the shown run's steps.tsv, followed as it grows
        self.picker.picked.connect(self.open_step)
        workspace.shown_run_changed.connect(self.mark)
        plots.loaded.connect(lambda: self.mark(workspace.shown_run))
        plots.stepped.connect(self.mark_new)

    def mark(self, run: Path | None) -> None:
        """Mark `run`'s spikes, read from its whole steps.tsv (none for a run without one, or with one damaged:
        replay still works)."""
        self.live = LiveSpikes(Path(run), Path(run).name) if run is not None else None
        self._update(again=True)

    def mark_new(self) -> None:
        """Mark the spikes among the steps written since the last look: only those lines are read."""
        if self.live is not None:
            self._update(again=False)

    def _update(self, again: bool) -> None:
        found = np.zeros(0, dtype=np.int64), np.zeros(0), again
        if self.live is not None:
            try:
                found = self.live.update()
            except StepFileDamaged:
                self.live = None
        spikes, loss, begun_again = found
        self.picker.mark(spikes, loss, again or begun_again)

    def open_step(self, step: int) -> None:
        run = self.workspace.shown_run
        if run is not None:
            self.view.show_step(Path(run), step)
