import csv
import itertools
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QStyle

from mlm_studio.core.durations import format_duration
from mlm_studio.core.errors import UserError
from mlm_studio.core.runs import loop as loop_module
from mlm_studio.core.runs.control import IDLE, PAUSED, RUNNING, TrainingControl
from mlm_studio.core.runs.records import StartedRecord, StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training import runs as runs_module
from mlm_studio.core.training.probes import Probe
from mlm_studio.ui.panels.training.panel import TrainingPanel
from mlm_studio.ui.runs_folder import RunsFolder
from mlm_studio.ui.theme import glyph_icon
from mlm_studio.ui.widgets.runs_table import RunsTable
from mlm_studio.ui.workspace import Workspace
from tests.core.helpers import small_config

TIMEOUT_MS = 120_000


@pytest.fixture
def panel(qtbot, small_corpus, small_tokenizer, tmp_path):
    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    workspace.set_config(small_config(max_steps=30, eval_interval=10, checkpoint_interval=10, log_interval=2))
    workspace.set_runs_root(tmp_path / "runs")
    widget = TrainingPanel(workspace)
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    widget.show()
    yield widget
    widget.controller.stop()
    widget.controller.wait(60_000)


def click(qtbot, button):
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_a_run_started_from_the_gui_plots_evaluates_and_checkpoints(qtbot, panel):
    panel.set_probes([Probe("Return the [MASK] of the list.", "value")])
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
        assert not panel.start_button.isEnabled()
    series = panel.plots.series
    assert series["step_loss"].size == 15 and series["eval_loss"].size == 3 and series["probe0"].size == 3
    assert series["step_loss"].y[-1] < series["step_loss"].y[0]
    assert panel.progress_bar.value() == 30
    log = panel.log.toPlainText()
    assert "Evaluation at step 10" in log and "Checkpoint written" in log and "Probes at step 30: value #" in log
    assert panel.message_bar.level == "info" and "Training completed at step 30" in panel.message_bar.text
    run = RunDir(panel.workspace.run)
    assert [p.name for p in run.checkpoints()][-1] == "step-0000030"
    qtbot.waitUntil(lambda: not panel.workspace.reading_runs)  # the folder read again off the GUI thread
    table = panel.runs.table
    assert table.rowCount() == 1
    row = [table.item(0, column).text() for column in range(table.columnCount())]
    assert row[1:3] == ["completed", "30"] and row[0] == run.path.name
    last_eval = [r for r in run.read_metrics() if r["type"] == "eval"][-1]
    assert row[3] == f"{last_eval['loss']:.3f}" and row[4] == f"{last_eval['accuracy']:.1%}"
    assert panel.start_button.isEnabled() and not panel.stop_button.isEnabled()


def test_the_live_readout_keeps_to_one_line_beside_the_bar_in_a_1280_window(qtbot, panel):
    panel.resize(1090, 600)  # the panel's share of a 1280-pixel-wide window
    started = StartedRecord(0, "run", 60, 0.0, "cpu", "fp32", 2, 64, 1000, 50)
    step = StepRecord(20, 1000, 10.0, 8.586, 0.1, 1e-3, 1.0, 154.0)
    panel.header.show_started(started)
    panel.header.show_step(step, seconds=False, paused=False, left=417.0)
    qtbot.waitUntil(lambda: panel.progress_bar.isVisible())
    panel.layout().activate()
    assert panel.status_label.text() == "step 20 · loss 8.586 · 154 tok/s · ETA 6m57s"
    assert panel.status_label.height() < 2 * panel.status_label.fontMetrics().lineSpacing()
    assert panel.progress_bar.width() > 200 and panel.progress_bar.text() == "20 / 60 steps"


def test_pause_resume_and_stop(qtbot, panel):
    panel.workspace.set_config(
        small_config(max_steps=100_000, eval_interval=10_000, checkpoint_interval=10_000, log_interval=7)
    )
    records = []
    panel.controller.record.connect(records.append)
    click(qtbot, panel.start_button)
    qtbot.waitUntil(lambda: len(records) >= 2, timeout=TIMEOUT_MS)
    click(qtbot, panel.pause_button)
    assert panel.controller.state == PAUSED and panel.pause_button.text() == "Resume"
    play = glyph_icon(panel.style().standardIcon(QStyle.StandardPixmap.SP_MediaPlay), panel.palette())
    assert panel.pause_button.icon().pixmap(16).toImage() == play.pixmap(16).toImage()  # Resume shows Play
    assert panel.controller.control.paused
    click(qtbot, panel.pause_button)
    assert panel.controller.state == RUNNING and not panel.controller.control.paused
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.stop_button)
    assert panel.controller.state == IDLE
    finished = [r for r in records if r.kind == "finished"]
    assert finished and finished[0].reason == "stopped"
    assert RunDir(panel.workspace.run).latest_checkpoint() is not None
    assert f"Training stopped at step {finished[0].step} " in panel.message_bar.text
    assert panel.progress_bar.value() == finished[0].step  # the bar agrees, between two step records too


class LongPauses:
    """The trainer's clock moves `tick` seconds per reading and `pause` seconds while it waits on a pause: a run
    that takes seconds of the clock, and pauses as long as a coffee, in a fraction of a second."""

    def __init__(self, monkeypatch, tick: float, pause: float) -> None:
        self.now, self.tick, self.pause = 0.0, tick, pause
        self.waiting = threading.Event()
        monkeypatch.setattr(loop_module, "time", self)
        original = TrainingControl.wait_while_paused

        def wait_while_paused(control):
            if control.paused:
                self.now += self.pause
                self.waiting.set()
            original(control)

        monkeypatch.setattr(TrainingControl, "wait_while_paused", wait_while_paused)

    def perf_counter(self) -> float:
        self.now += self.tick
        return self.now


def pause_at(qtbot, panel, clock: LongPauses, step: int) -> tuple[list, int]:
    """Start, press Pause on `step`'s record, press Resume once the trainer waits; the records of the run (with
    the status line and the Runs table's state as each arrived) and the step the pause came after."""
    records = []

    def on_record(record):
        records.append((record, panel.status_label.text(), panel.runs.table.item(0, 1).text()))
        if isinstance(record, StepRecord) and record.step == step:
            click(qtbot, panel.pause_button)

    panel.controller.record.connect(on_record)
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
        qtbot.waitUntil(clock.waiting.is_set, timeout=TIMEOUT_MS)
        QApplication.processEvents()  # the records sent before the trainer began to wait
        last = max(r.step for r, _, _ in records if isinstance(r, StepRecord))
        assert last >= step and panel.runs.table.item(0, 1).text() == "paused"
        assert panel.runs.table.item(0, 2).text() == str(last)  # where the pause took effect, between two steps
        click(qtbot, panel.pause_button)
    return records, last


def test_a_pause_in_the_window_does_not_spend_the_time_budget(qtbot, panel, monkeypatch):
    panel.workspace.set_config(
        small_config(time_budget=20.0, warmup_steps=0, eval_interval=10_000, checkpoint_interval=10_000, log_interval=1)
    )
    clock = LongPauses(monkeypatch, tick=0.25, pause=600.0)
    records, _ = pause_at(qtbot, panel, clock, step=3)
    steps = [r for r, _, _ in records if isinstance(r, StepRecord)]
    assert records[-1][0].kind == "finished" and records[-1][0].reason == "completed"
    assert clock.now > 620  # the clock did pass the pause
    assert 20.0 <= steps[-1].elapsed < 21.0 and steps[-2].elapsed < 20.0
    assert max(b.elapsed - a.elapsed for a, b in itertools.pairwise(steps)) < 2.0
    states = [state for r, _, state in records if isinstance(r, StepRecord)]
    # steps that ended after the click and before the trainer saw it arrive while the table says paused (how many
    # depends on the threads' timing); none is shown as anything else
    assert states[0] == states[-1] == "running" and set(states) <= {"running", "paused"}
    qtbot.waitUntil(lambda: not panel.workspace.reading_runs)  # the folder read again off the GUI thread
    assert panel.runs.table.item(0, 1).text() == "completed"


def test_the_eta_reads_the_training_time_not_the_pause(qtbot, panel, monkeypatch):
    config = small_config(max_steps=40, eval_interval=10_000, checkpoint_interval=10_000, log_interval=1)
    panel.workspace.set_config(config)
    clock = LongPauses(monkeypatch, tick=0.25, pause=600.0)
    records, paused_after = pause_at(qtbot, panel, clock, step=3)
    record, status = next((r, text) for r, text, _ in records if isinstance(r, StepRecord) and r.step > paused_after)
    assert record.elapsed < 100.0  # the pause is not training time
    done = record.step
    assert status.endswith(f"ETA {format_duration(record.elapsed / done * (40 - done))}")


def test_a_worker_error_reaches_the_user_and_the_controls_recover(qtbot, panel, monkeypatch):
    def broken(*args, **kwargs):
        raise UserError("the data could not be prepared")

    monkeypatch.setattr(runs_module, "training_blocks", broken)
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
    assert panel.message_bar.level == "error" and panel.message_bar.text == "the data could not be prepared"
    assert panel.start_button.isEnabled() and not panel.pause_button.isEnabled()


def test_start_is_disabled_with_the_reason_while_something_is_missing(qtbot, panel):
    panel.set_config_error("hidden_size (100) must be divisible by num_attention_heads (3)")
    assert not panel.start_button.isEnabled() and "Fix the configuration first" in panel.start_button.toolTip()
    panel.set_config_error("")
    panel.workspace.set_tokenizer(None)
    assert not panel.start_button.isEnabled() and "tokenizer" in panel.start_button.toolTip()


def test_a_bad_probe_is_refused_before_starting(qtbot, panel):
    panel.set_probes([Probe("Return the [MASK].", "value")])
    panel.probes_editor.table.item(0, 0).setText("no mask here")
    click(qtbot, panel.start_button)
    assert panel.controller.state == IDLE
    assert "probe 1: a probe needs exactly one [MASK]" in panel.message_bar.text


def test_runs_open_overlay_resume_and_export(qtbot, panel, trained_runs, tmp_path, monkeypatch, listed):
    panel.workspace.set_runs_root(trained_runs)
    listed(panel.workspace)
    names = [panel.runs.table.item(i, 0).text() for i in range(panel.runs.table.rowCount())]
    assert sorted(names) == ["early", "late"]
    panel.runs.table.select_run(trained_runs / "late")
    click(qtbot, panel.runs.open_button)
    assert panel.plots.series["step_loss"].size == 40 and panel.workspace.shown_run.name == "late"
    assert panel.workspace.run is None  # looked at, not chosen for the other panels
    panel.runs.table.select_run(trained_runs / "early")
    click(qtbot, panel.runs.overlay_button)
    assert panel.plots.overlays == ["early"] and panel.plots.series["overlay:early:step:loss"].size == 4

    csv_path = tmp_path / "metrics.csv"
    monkeypatch.setattr("PySide6.QtWidgets.QFileDialog.getSaveFileName", lambda *a, **k: (str(csv_path), ""))
    click(qtbot, panel.curves.csv_button)
    rows = list(csv.DictReader(csv_path.open()))
    assert len([r for r in rows if r["type"] == "step"]) == 40 and rows[0]["loss"]
    png = tmp_path / "plots.png"
    assert panel.export_plots(str(png)) and QImage(str(png)).width() == 2 * panel.plots.view.width()
    assert not panel.export_plots(str(tmp_path / "missing" / "plots.png"))
    assert panel.message_bar.level == "error" and "could not be written" in panel.message_bar.text

    copy = tmp_path / "runs2"
    import shutil

    shutil.copytree(trained_runs / "early", copy / "early")
    config = RunDir(copy / "early").config
    config.__class__(
        **{**config.__dict__, "training": config.training.__class__(**{**config.training.__dict__, "max_steps": 8})}
    ).save(copy / "early" / "config.toml")
    panel.workspace.set_runs_root(copy)
    listed(panel.workspace)
    panel.runs.table.selectRow(0)
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.runs.resume_button)
    log = panel.log.toPlainText()
    assert "steps 4 → 8" in log  # the run's own settings, and the panel's said not to be used:
    assert "early resumes with its own settings; the Configuration panel's differ and are not used: " in log
    assert "training.learning_rate: 0.005 → 0.001; training.max_steps: 8 → 30" in log
    assert RunDir(copy / "early").latest_checkpoint().name == "step-0000008"
    assert Path(panel.workspace.run) == copy / "early"


def test_the_csv_export_of_an_electra_run_holds_its_detection_columns(
    qtbot, panel, small_corpus, small_tokenizer, tmp_path, monkeypatch, listed
):
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    config = small_config(max_steps=4, eval_interval=2, log_interval=1).with_objective("electra")
    run = start_run(tmp_path / "electra-runs" / "electra", config, small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    panel.workspace.set_runs_root(run.path.parent)
    listed(panel.workspace)
    panel.runs.table.select_run(run.path)
    click(qtbot, panel.runs.open_button)
    assert {"step_detection_accuracy", "eval_detection_auc"} <= set(panel.plots.series)
    csv_path = tmp_path / "electra.csv"
    monkeypatch.setattr("PySide6.QtWidgets.QFileDialog.getSaveFileName", lambda *a, **k: (str(csv_path), ""))
    click(qtbot, panel.curves.csv_button)
    rows = list(csv.DictReader(csv_path.open(encoding="utf-8")))
    for kind, count in (("step", 4), ("eval", 2)):
        written = [r for r in run.read_metrics() if r["type"] == kind]
        exported = [r for r in rows if r["type"] == kind]
        assert len(exported) == len(written) == count
        detection = [name for name in written[0] if name.startswith("detection_")]
        assert len(detection) == {"step": 4, "eval": 5}[kind]
        for record, row in zip(written, exported, strict=True):
            for name in detection:
                if record[name] is None:  # undefined (precision with nothing flagged): null, an empty cell
                    assert row[name] == "", name
                else:
                    assert float(row[name]) == pytest.approx(record[name]), name


def test_a_time_budget_shows_progress_in_seconds_and_ends_the_run(qtbot, panel):
    panel.workspace.set_config(small_config(time_budget=2.0, eval_interval=10_000, checkpoint_interval=10_000))
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
    assert panel.progress_bar.maximum() == 2 and panel.progress_bar.format() == "completed · %v / %m s"
    assert "for 0m02s" in panel.log.toPlainText() and "Training completed" in panel.message_bar.text
    steps = [r for r in RunDir(panel.workspace.run).read_metrics() if r["type"] == "step"]
    assert steps[-1]["elapsed"] >= 2.0 and steps[-1]["step"] > 8  # the budget ended it, not the 8-step default


def test_the_reason_start_is_disabled_is_shown_on_the_panel(qtbot, small_corpus, small_tokenizer, tmp_path):
    panel = TrainingPanel(Workspace(runs_root=tmp_path / "runs"))
    qtbot.addWidget(panel)
    panel.show()
    assert not panel.start_button.isEnabled()
    assert panel.reason_label.isVisible() and panel.reason_label.text() == "Load a corpus first (Corpus panel)."
    panel.workspace.set_corpus(small_corpus)
    assert panel.reason_label.text() == "Train or load a tokenizer first (Corpus panel)."
    panel.workspace.set_tokenizer(small_tokenizer)
    panel.set_config_error("Hidden size (128) must be a multiple of Attention heads (3)")
    assert panel.reason_label.text() == (
        "Fix the configuration first: Hidden size (128) must be a multiple of Attention heads (3)."
    )
    panel.set_config_error("")
    assert panel.start_button.isEnabled() and not panel.reason_label.isVisible()


def test_overlaying_a_run_deleted_meanwhile_says_so_and_drops_it(qtbot, panel, trained_runs, tmp_path, listed):
    import shutil

    shutil.copytree(trained_runs, tmp_path / "copied")
    panel.workspace.set_runs_root(tmp_path / "copied")
    listed(panel.workspace)
    panel.runs.table.select_run(tmp_path / "copied" / "early")
    shutil.rmtree(tmp_path / "copied" / "early")
    click(qtbot, panel.runs.overlay_button)
    assert panel.message_bar.level == "error"
    assert panel.message_bar.text == "Cannot overlay early: the folder no longer exists"
    qtbot.waitUntil(lambda: panel.runs.table.rowCount() == 1)  # the folder read again off the GUI thread
    assert panel.plots.overlays == []


def test_the_window_prepares_the_same_run_as_the_engine(qtbot, panel, small_corpus, small_tokenizer, tmp_path):
    from contextlib import ExitStack

    from mlm_studio.core.training.runs import NewRun, prepare_trainer
    from tests.core.test_runs import comparable

    panel.workspace.set_config(small_config(max_steps=6, eval_interval=3, checkpoint_interval=3))
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
    window_run = RunDir(panel.workspace.run)
    new = NewRun(window_run.config, small_corpus, small_tokenizer, probes=tuple(panel.probes()))
    with ExitStack() as held:
        records = [r.to_dict() for r in prepare_trainer(tmp_path / "engine", begin=lambda: new, held=held).run()]
    assert comparable(window_run.read_metrics()) == comparable(records)
    assert [r["type"] for r in records][:2] == ["started", "step"]


def test_a_long_reading_wraps_and_never_widens_the_panel(qtbot, panel):
    narrowest = panel.minimumSizeHint().width()
    reading = " · ".join(f"accuracy (val) {n}.0% at step {n:,}" for n in range(60))
    panel.plots.hovered.emit(reading)
    assert panel.curves.readout.text() == reading
    assert panel.minimumSizeHint().width() == narrowest
    assert panel.curves.readout.width() <= panel.width()


def test_a_one_document_corpus_says_why_there_is_no_validation(qtbot, panel, corpus_file, tmp_path, monkeypatch):
    from mlm_studio.core.data.corpus import load_corpus

    one = tmp_path / "one.txt"
    one.write_text(" ".join(corpus_file.read_text(encoding="utf-8").split()[:3000]), encoding="utf-8")
    panel.workspace.set_corpus(load_corpus([one]))
    panel.workspace.set_config(small_config(max_steps=4))
    shown = []
    monkeypatch.setattr(panel.message_bar, "show_message", lambda text, level: shown.append((level, text)))
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
    reason = "no validation set: data.validation_fraction (0.05) held out none of the corpus's 1 document(s)"
    assert shown[0][0] == "warning" and shown[0][1].startswith(reason)
    name = panel.workspace.run.name
    assert shown[-1] == (
        "info",
        f"Training completed at step 4 ({name}); no evaluation. Try the model in the Playground.",
    )
    assert "NaN" not in RunDir(panel.workspace.run).metrics_path.read_text(encoding="utf-8")


def test_long_run_names_keep_their_end_and_say_it_whole_in_a_tooltip(qtbot, trained_runs, tmp_path):
    import shutil

    name = "20261201-112312-modern-continued"
    shutil.copytree(trained_runs / "late", tmp_path / name)
    table = RunsTable()
    qtbot.addWidget(table)
    table.show_runs(RunsFolder().read(tmp_path))
    assert table.textElideMode() == Qt.TextElideMode.ElideMiddle
    assert table.item(0, 0).toolTip().splitlines()[0] == name
    assert table.item(0, 1).text() == "completed"


def test_while_paused_the_status_says_paused_with_no_countdown(qtbot, panel, monkeypatch):
    panel.workspace.set_config(
        small_config(max_steps=40, eval_interval=10_000, checkpoint_interval=10_000, log_interval=1)
    )
    clock = LongPauses(monkeypatch, tick=0.25, pause=600.0)
    said = []
    panel.controller.state_changed.connect(lambda state: said.append((state, panel.status_label.text())))
    records, paused_after = pause_at(qtbot, panel, clock, step=3)
    paused = [text for state, text in said if state == PAUSED]
    paused += [text for r, text, state in records if state == "paused" and isinstance(r, StepRecord)]
    assert paused[0].startswith("step 3 · loss ") and len(paused) >= 2  # on the press, and records sent before it
    assert all(text.endswith(" · paused: the ETA resumes with training") for text in paused)
    resumed = [text for r, text, state in records if isinstance(r, StepRecord) and r.step > paused_after]
    assert resumed and all(" tok/s · ETA " in text for text in resumed)


def test_the_preparation_says_what_it_prepares(qtbot, panel, tmp_path, monkeypatch):
    """Before the first step the bar is no mute busy bar: it names the work ("Tokenizing the corpus… 100%")."""
    monkeypatch.setenv("MLM_STUDIO_CACHE", str(tmp_path / "cache"))  # nothing tokenized yet
    seen = []
    panel.controller.progress.connect(lambda *_: seen.append(panel.progress_bar.text()))
    with qtbot.waitSignal(panel.controller.prepared, timeout=TIMEOUT_MS):
        click(qtbot, panel.start_button)
        assert panel.status_label.text().endswith(": preparing the corpus's blocks and the model…")
    assert seen and all(text.startswith("Tokenizing the corpus… ") and text.endswith("%") for text in seen)
    assert seen[-1] == "Tokenizing the corpus… 100%"
    panel.controller.stop()
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
