"""The Training panel's step batches: a run's spikes marked on its loss plot, a click on a point of its curves opens
that step's batch, replayed with the checkpoint before it, or says in a sentence why it cannot be."""

import shutil

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from mlm_studio.core.data.masking import MaskKind
from mlm_studio.core.storage.step_file import HEADER, STEPS_FILE, read_steps, step_lines
from mlm_studio.core.training.spikes import spike_steps
from mlm_studio.ui.panels.training.panel import TrainingPanel
from mlm_studio.ui.panels.training.step_batch import replayed_cell
from mlm_studio.ui.widgets.token_view import TokenView
from mlm_studio.ui.workspace import Workspace
from tests.core.helpers import small_config

TIMEOUT_MS = 60_000


@pytest.fixture
def panel(qtbot, trained_runs, tmp_path, listed):
    """The panel showing a copy of the 40-step run, whose steps.tsv says step 30 spiked."""
    run = shutil.copytree(trained_runs / "late", tmp_path / "runs" / "late")
    steps = read_steps(run, "late")
    loss = steps.loss.copy()
    loss[29] = 50.0
    entries = list(zip(steps.steps.tolist(), loss.tolist(), steps.grad_norm.tolist(), strict=True))
    (run / STEPS_FILE).write_text(HEADER + step_lines(entries), encoding="utf-8")
    widget = TrainingPanel(Workspace(runs_root=tmp_path / "runs"))
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    widget.show()
    widget.refresh_runs()
    listed(widget.workspace)
    widget.runs.table.select_run(run)
    qtbot.mouseClick(widget.runs.open_button, Qt.MouseButton.LeftButton)
    return widget


def click_point(qtbot, panel, plot, step):
    """A click on the training curve of `plot` at `step`, where the user sees it."""
    series = panel.plots.series[f"step_{plot}"]
    index = int(np.flatnonzero(series.x("step") == step)[0])
    panel.plots.redraw(everything=True)
    scene = panel.plots.plots[plot].vb.mapViewToScene(QPointF(step, series.y[index]))
    view = panel.plots.view
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(scene))


def test_the_spikes_of_the_shown_run_are_marked_on_its_loss_plot(panel):
    picker = panel.step_batches.picker
    assert picker.spikes.tolist() == [30]
    x, y = picker.marks.getData()
    assert x.tolist() == [30.0] and y.tolist() == [50.0]
    assert picker.marks in panel.plots.plots["loss"].items


@pytest.mark.parametrize("plot", ["loss", "accuracy", "grad_norm"])
def test_a_click_on_a_curve_opens_that_steps_batch_scored_with_the_checkpoint_before_it(qtbot, panel, plot):
    view = panel.step_batches.view
    click_point(qtbot, panel, plot, 37)
    qtbot.waitUntil(lambda: view.replay is not None, timeout=TIMEOUT_MS)
    replay = view.replay
    assert view.isVisible() and replay.step == 37 and replay.exact and replay.checkpoint == "step-0000036"
    assert replay.loss == pytest.approx(read_steps(panel.workspace.shown_run, "late").at(37)[0], rel=1e-4)
    assert view.summary.text().startswith("Scored with step-0000036, the weights step 37 was trained with.")
    tokens = view.sequences.findChildren(TokenView)
    worst = replay.sequences[0]
    assert len(tokens) == len(replay.sequences) == 8
    masked = [t for t in worst.tokens if t.token.kind != MaskKind.UNTOUCHED]
    cell = replayed_cell(masked[0])
    assert cell.text.endswith(f" · {masked[0].loss:.1f}") and "the model's candidates: " in cell.tooltip


def test_a_step_without_a_checkpoint_before_it_says_why(qtbot, panel):
    view = panel.step_batches.view
    click_point(qtbot, panel, "loss", 2)
    qtbot.waitUntil(lambda: "keeps no checkpoint" in view.summary.text(), timeout=TIMEOUT_MS)
    assert view.replay is None
    assert view.summary.text().startswith("late keeps no checkpoint at or before step 2 to score it with")


def test_a_spike_in_a_run_being_trained_is_marked_while_it_trains(qtbot, small_corpus, small_tokenizer, tmp_path):
    """A learning rate warmed up to far too high a value blows the loss up part way through: its first spikes are
    marked on the live loss plot as their steps arrive, well before the run ends."""
    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    too_fast = dict(learning_rate=0.9, warmup_steps=30, schedule="constant", max_grad_norm=0.0)
    workspace.set_config(
        small_config(max_steps=40, log_interval=2, eval_interval=40, checkpoint_interval=40, **too_fast)
    )
    workspace.set_runs_root(tmp_path / "runs")
    widget = TrainingPanel(workspace)
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    widget.show()
    picker = widget.step_batches.picker
    seen, followers = [], set()  # (step, spikes marked then) at each step record, after the panel drew it
    batches = widget.step_batches

    def on_record(record):
        if record.kind == "step":
            seen.append((record.step, picker.spikes.tolist()))
            followers.add(id(batches.live))

    widget.controller.record.connect(on_record)
    with qtbot.waitSignal(widget.run_finished, timeout=120_000):
        qtbot.mouseClick(widget.start_button, Qt.MouseButton.LeftButton)
    spikes = spike_steps(read_steps(workspace.run, workspace.run.name)).tolist()
    first = next(step for step, marked in seen if marked)
    assert spikes and seen[-1][0] == 40 and first < 36  # marked while steps were still to come
    assert all(marked == spikes[: len(marked)] for _, marked in seen)  # marked as they were written, never taken back
    x, _ = picker.marks.getData()
    assert x.tolist() == spikes and picker.marks in widget.plots.plots["loss"].items
    # one reading of the file, followed from its first line to its last: never read whole again
    assert len(followers) == 1 and batches.live.tail.offset == (workspace.run / STEPS_FILE).stat().st_size


def test_a_steps_file_damaged_while_followed_leaves_the_marks_and_one_damaged_from_the_start_marks_none(panel):
    picker, run = panel.step_batches.picker, panel.workspace.shown_run
    with open(run / STEPS_FILE, "a", encoding="utf-8") as file:
        file.write("41\tnot a loss\t1.0\n")
    panel.plots.stepped.emit()  # a step record of the run
    assert picker.spikes.tolist() == [30] and picker.marks.getData()[0].tolist() == [30.0]
    panel.step_batches.mark(run)  # the run opened again
    assert picker.spikes.tolist() == [] and len(picker.marks.getData()[0]) == 0


@pytest.mark.qt_log_ignore("This plugin does not support raise")  # the offscreen platform's own limitation
def test_a_second_click_reuses_the_runs_replayer_until_its_config_changes_or_the_run_is_gone(qtbot, panel, tmp_path):
    view, run = panel.step_batches.view, panel.workspace.shown_run
    click_point(qtbot, panel, "loss", 37)
    qtbot.waitUntil(lambda: view.replay is not None and view.replay.step == 37, timeout=TIMEOUT_MS)
    kept = view._replayer
    click_point(qtbot, panel, "accuracy", 38)
    qtbot.waitUntil(lambda: view.replay is not None and view.replay.step == 38, timeout=TIMEOUT_MS)
    assert view._replayer is kept and view.replay.checkpoint == "step-0000036"
    config = run / "config.toml"
    config.write_text(config.read_text(encoding="utf-8"), encoding="utf-8")  # written anew, as a resume writes it
    click_point(qtbot, panel, "loss", 37)
    qtbot.waitUntil(lambda: view.replay is not None and view.replay.step == 37, timeout=TIMEOUT_MS)
    assert view._replayer is not kept
    shutil.move(run, tmp_path / "elsewhere")
    click_point(qtbot, panel, "loss", 38)
    qtbot.waitUntil(lambda: "does not exist" in view.summary.text(), timeout=TIMEOUT_MS)
    assert view.replay is None
