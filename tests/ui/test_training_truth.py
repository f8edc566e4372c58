"""The Training panel never shows what is not true: its progress, status and messages are the shown run's, a
training out of sight is never drawn into another run's curves, quoted evaluations say their step, empty plots say
why, and at 1280 x 720 both rows of plots keep their axes beside a Runs table of four rows."""

import shutil

import pytest
from PySide6.QtCore import QSettings, Qt

from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import FinishedRecord, StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training.probes import Probe
from mlm_studio.ui.panels.training.panel import TrainingPanel
from mlm_studio.ui.workspace import Workspace
from tests.core.helpers import small_config

TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def stopped_run(small_corpus, small_tokenizer, tmp_path_factory):
    """A run of 30 steps stopped after step 15, its last evaluation at step 10."""
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    config = small_config(max_steps=30, eval_interval=10, checkpoint_interval=10, learning_rate=5e-3)
    run = start_run(tmp_path_factory.mktemp("stopped") / "stopped", config, small_corpus, small_tokenizer)
    control = TrainingControl()
    for record in Trainer(run, *training_blocks(run, small_corpus), control=control).run():
        if isinstance(record, StepRecord) and record.step == 15:
            control.stop()
    return run.path


@pytest.fixture
def runs(tmp_path, trained_runs, stopped_run):
    """A folder with the `late` run (completed, 40 steps, no probes) and the stopped one."""
    root = tmp_path / "runs"
    shutil.copytree(trained_runs / "late", root / "late")
    shutil.copytree(stopped_run, root / "stopped")
    return root


@pytest.fixture
def panel(qtbot, small_corpus, small_tokenizer, runs):
    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    workspace.set_config(small_config(max_steps=4, eval_interval=2, checkpoint_interval=2))
    workspace.set_runs_root(runs)
    widget = TrainingPanel(workspace)
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    widget.show()
    yield widget
    widget.controller.stop()
    widget.controller.wait(60_000)


def click(qtbot, button):
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def open_run(qtbot, panel, path):
    panel.runs.table.select_run(path)
    click(qtbot, panel.runs.open_button)


def test_opening_another_run_shows_its_own_outcome_not_the_last_trainings(qtbot, panel, runs):
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
    trained = panel.workspace.run.name
    assert panel.progress_bar.text() == "completed · 4 / 4 steps"  # the idle bar says a state, not a bare count
    assert panel.message_bar.text.startswith(f"Training completed at step 4 ({trained}); validation loss ")

    open_run(qtbot, panel, runs / "stopped")
    evaluation = [r for r in RunDir(runs / "stopped").read_metrics() if r["type"] == "eval"][-1]
    assert evaluation["step"] == 10
    assert panel.progress_bar.isVisible() and panel.progress_bar.text() == "stopped · 15 / 30 steps"
    said = f"validation loss {evaluation['loss']:.3f}, accuracy {evaluation['accuracy']:.1%} at step 10"
    assert panel.status_label.text() == f"stopped: {said}"
    assert panel.progress_bar.toolTip() == f"stopped: stopped at step 15 of 30; {said}"
    assert panel.message_bar.text == ""  # the trained run's message went with it
    assert panel.plots.series["step_loss"].size == 15 and panel.workspace.run.name == trained

    open_run(qtbot, panel, runs / "late")
    assert panel.progress_bar.text() == "completed · 40 / 40 steps"
    assert panel.status_label.text().startswith("late: validation loss ")
    assert panel.status_label.text().endswith(" at step 40")


def test_a_training_out_of_sight_is_never_drawn_over_the_run_shown(qtbot, panel, runs):
    panel.workspace.set_config(small_config(max_steps=100_000, eval_interval=10_000, checkpoint_interval=10_000))
    steps = []
    panel.controller.record.connect(lambda r: steps.append(r) if isinstance(r, StepRecord) else None)
    training = []
    panel.training_run_changed.connect(training.append)
    click(qtbot, panel.start_button)
    qtbot.waitUntil(lambda: len(steps) >= 2, timeout=TIMEOUT_MS)
    live = panel.training_run
    assert training == [live] and panel.header.live_label.isHidden()

    open_run(qtbot, panel, runs / "late")
    seen = len(steps)
    qtbot.waitUntil(lambda: len(steps) >= seen + 3, timeout=TIMEOUT_MS)
    assert panel.plots.series["step_loss"].size == 40  # the late run's curve, nothing added to it
    assert panel.progress_bar.text() == "completed · 40 / 40 steps"
    assert panel.status_label.text().startswith("late: validation loss ")
    assert panel.header.live_label.isVisible() and panel.header.back_button.isVisible()
    assert panel.header.live_label.text().startswith("Training: running, step ")
    assert panel.header.live_label.text().endswith(f" · {live.name}")
    panel.window().resize(1090, 700)  # the Training panel's width in a 1280-wide window
    qtbot.waitUntil(lambda: panel.header.live_label.width() < 300)
    assert panel.header.live_label.shown_text().startswith("Training: running, step ")  # the progress, not "Training…"
    assert panel.runs.table.item(panel.runs.table._row_of(live), 1).text() == "running"  # the live row stays live
    assert panel.workspace.shown_run == runs / "late" and panel.workspace.run == live

    click(qtbot, panel.header.back_button)
    assert panel.workspace.shown_run == live and panel.header.back_button.isHidden()
    assert panel.plots.series["step_loss"].size == len(steps)  # every step it trained, none lost while away
    assert panel.status_label.text().startswith("step ") and " tok/s · ETA " in panel.status_label.text()
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.stop_button)
    assert training == [live, None]


def test_the_stop_message_and_the_runs_table_say_the_step_of_the_evaluation_they_quote(qtbot, panel, runs, monkeypatch):
    panel.workspace.set_config(small_config(max_steps=100_000, eval_interval=10, checkpoint_interval=10_000))
    steps = []
    original = TrainingControl.wait_while_paused

    def stop_after_step_13(control):  # Stop pressed as step 13 ends, in the trainer's thread: no lag past step 20
        steps.append(None)
        if len(steps) == 14:
            control.stop()
        original(control)

    monkeypatch.setattr(TrainingControl, "wait_while_paused", stop_after_step_13)
    records = []
    panel.controller.record.connect(records.append)
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
    finished = records[-1]
    evaluation = [r for r in records if r.kind == "eval"][-1]
    assert isinstance(finished, FinishedRecord) and (finished.step, evaluation.step) == (13, 10)
    assert panel.message_bar.text == (
        f"Training stopped at step 13 ({panel.workspace.run.name}); validation loss {evaluation.loss:.3f}, "
        f"accuracy {evaluation.accuracy:.1%} at step 10. Try the model in the Playground."
    )
    table = panel.runs.table
    columns = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    row = table._row_of(runs / "stopped")
    cells = {name: table.item(row, c) for c, name in enumerate(columns)}
    assert cells["Val step"].text() == "10" and cells["Step"].text() == "15"
    assert cells["Val loss"].toolTip().startswith("Stopped at step 15 of 30; validation loss ")
    assert cells["Val loss"].toolTip().endswith(" at step 10")
    described = FinishedRecord(98, "stopped", str(runs), 6.36521, 0.125, val_step=75).describe()
    assert described.startswith("Finished (stopped) at step 98: validation loss 6.3652, accuracy 12.5% at step 75")


def test_the_probe_plot_says_what_is_true_before_and_during_a_run(qtbot, panel, runs):
    hint = panel.plots.hints["probes"]
    assert hint.isVisible() and hint.toPlainText().startswith("No run shown. The 3 cloze probes on the Probes tab")
    panel.set_probes([])
    assert hint.toPlainText().startswith("No run shown, and no cloze probes")
    panel.set_probes([Probe("Return the [MASK] of the list.", "value"), Probe("A [MASK] of it.", "copy")])
    panel.workspace.set_config(small_config(max_steps=100_000, eval_interval=10_000, checkpoint_interval=10_000))
    click(qtbot, panel.start_button)
    said = "This run's 2 cloze probes are scored at its first evaluation"
    assert hint.isVisible() and hint.toPlainText().startswith(said)  # its first seconds
    with qtbot.waitSignal(panel.controller.prepared, timeout=TIMEOUT_MS):
        pass
    assert hint.isVisible() and hint.toPlainText().startswith(said)
    open_run(qtbot, panel, runs / "late")
    assert hint.isVisible() and hint.toPlainText().startswith("This run has no cloze probes.")
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.stop_button)


def test_the_runs_buttons_are_enabled_only_where_they_work(qtbot, panel, runs, small_corpus, small_tokenizer):
    from mlm_studio.core.training.runs import start_run

    start_run(runs / "fresh", small_config(), small_corpus, small_tokenizer)  # no checkpoint yet
    panel.workspace.read_runs()
    buttons = panel.runs
    panel.runs.table.select_run(runs / "fresh")
    assert buttons.open_button.isEnabled() and buttons.overlay_button.isEnabled()
    assert not buttons.resume_button.isEnabled() and buttons.resume_button.toolTip() == "fresh has no checkpoint yet"
    assert not buttons.export_button.isEnabled() and buttons.export_button.toolTip() == "fresh has no checkpoint yet"
    panel.runs.table.select_run(runs / "late")
    assert not buttons.resume_button.isEnabled() and "nothing is left to train" in buttons.resume_button.toolTip()
    assert buttons.export_button.isEnabled()
    click(qtbot, buttons.open_button)
    assert not buttons.overlay_button.isEnabled() and buttons.overlay_button.toolTip() == "late is the run shown"
    panel.runs.table.select_run(runs / "stopped")
    assert (
        buttons.resume_button.isEnabled() and buttons.export_button.isEnabled() and buttons.overlay_button.isEnabled()
    )


@pytest.fixture
def small_window(qtbot, tmp_path, runs):
    from mlm_studio.ui.main_window import MainWindow

    for index in range(5):
        shutil.copytree(runs / "late", runs / f"late-{index}")
    window = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat), runs_root=runs)
    qtbot.addWidget(window)
    window.resize(1280, 720)
    window.show()
    qtbot.waitUntil(lambda: window.workspace.corpus is not None, timeout=TIMEOUT_MS)
    window.show_panel(window.training_panel)
    qtbot.waitUntil(lambda: window.training_panel.plots.isVisible())
    return window


def test_at_1280_by_720_both_rows_of_plots_keep_their_axes_and_the_table_shows_four_runs(qtbot, small_window):
    panel = small_window.training_panel
    for message in ("", "Training stopped at step 98 (a run); validation loss 6.365, accuracy 1.0% at step 75."):
        if message:
            panel.message_bar.show_message(message, "info")
        qtbot.waitUntil(lambda m=message: panel.message_bar.isVisible() == bool(m))
        panel.layout().activate()
        plots = panel.plots
        viewport = plots.scroll.viewport()
        for name in ("loss", "accuracy", "learning_rate", "grad_norm", "throughput", "probes"):
            axis = plots.plots[name].getAxis("bottom")
            rect = plots.view.mapFromScene(axis.sceneBoundingRect()).boundingRect()
            top_left = plots.view.mapTo(viewport, rect.topLeft())
            bottom = plots.view.mapTo(viewport, rect.bottomLeft()).y()
            assert axis.height() > 0 and plots.plots[name].vb.height() >= 96, (name, message)
            assert 0 <= top_left.y() and bottom <= viewport.height(), (name, message)  # the x axis is in sight
        table = panel.runs.table
        assert table.rowCount() == 7
        rows = [table.visualRect(table.model().index(r, 0)) for r in range(table.rowCount())]
        assert len([row for row in rows if 0 <= row.top() and row.bottom() < table.viewport().height()]) >= 4, message


def test_the_runs_table_lists_the_newest_run_first_until_another_column_is_chosen(qtbot, trained_runs):
    from mlm_studio.ui.runs_folder import RunsFolder
    from mlm_studio.ui.widgets.runs_table import RunsTable

    table = RunsTable()
    qtbot.addWidget(table)
    table.show_runs(RunsFolder().read(trained_runs))
    assert [table.item(row, 0).text() for row in range(table.rowCount())] == ["late", "early"]  # trained in turn
    table.sortByColumn(2, Qt.SortOrder.AscendingOrder)  # by step: the user's choice holds on the next refresh
    table.show_runs(RunsFolder().read(trained_runs))
    assert [table.item(row, 0).text() for row in range(table.rowCount())] == ["early", "late"]


def test_a_checkpoint_rewrites_its_runs_row_alone_and_moves_it_to_its_sorted_place(qtbot, trained_runs, tmp_path):
    from mlm_studio.ui.runs_folder import RunsFolder
    from mlm_studio.ui.widgets.runs_table import RunsTable

    for name in ("early", "late"):
        shutil.copytree(trained_runs / name, tmp_path / name, ignore=shutil.ignore_patterns("*.safetensors"))
    folder, table = RunsFolder(), RunsTable()
    qtbot.addWidget(table)
    table.show_runs(folder.read(tmp_path))
    table.sortByColumn(2, Qt.SortOrder.AscendingOrder)  # by the latest checkpoint's step
    names = lambda: [table.item(row, 0).text() for row in range(table.rowCount())]  # noqa: E731
    assert names() == ["early", "late"]
    late = [table.item(1, column) for column in range(table.columnCount())]
    checkpoints = tmp_path / "early" / "checkpoints"
    shutil.copytree(sorted(checkpoints.iterdir())[-1], checkpoints / "step-0000050")
    table.show_runs(folder.read(tmp_path))
    assert names() == ["late", "early"] and table.item(1, 2).text() == "50"
    assert all(table.item(0, column) is cell for column, cell in enumerate(late))  # the other row left as it was
