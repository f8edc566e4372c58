"""The Training panel's rules without a window: why Start refuses, what Pause and Stop offer in each phase, what the
Runs tab's buttons can do with the selected run, and the run being trained followed through its transitions
(launched, preparing, started, its records, finished) as the panel forwards them; what is said of it where it is
shown and where another run is. The model imports no Qt."""

import subprocess
import sys
from pathlib import Path

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import TrainConfig
from mlm_studio.core.runs.control import IDLE, PAUSED, PREPARING, RUNNING, STOPPING
from mlm_studio.core.runs.history import RunSummary
from mlm_studio.core.runs.records import (
    EvalRecord,
    FinishedRecord,
    PausedRecord,
    StartedRecord,
    StepRecord,
    WarningRecord,
)
from mlm_studio.core.training.probes import PROBES_FILE, Probe, save_probes
from mlm_studio.core.training.request import Note
from mlm_studio.ui.panels.training.model import RUN_ACTS, TrainingModel

RUN = Path("runs/run-a")


def started(step=0, total_steps=60, time_budget=0.0):
    return StartedRecord(step, str(RUN), total_steps, time_budget, "cpu", "fp32", 2, 64, 1000, 50)


def step(at, elapsed, tokens=None):
    return StepRecord(at, tokens if tokens is not None else 100 * at, elapsed, 8.5, 0.1, 1e-3, 1.0, 150.0)


def evaluation(at, loss=6.365, accuracy=0.12):
    return EvalRecord(at, 100 * at, 1.0, loss, accuracy, 0.3, 580.0)


def training(model=None, phase=RUNNING):
    """A model whose run has been launched and has started, in `phase`."""
    model = model or TrainingModel()
    model.launch(RUN, "Starting run-a", 2)
    model.set_phase(PREPARING)
    model.prepared(started(), [])
    model.set_phase(phase)
    return model


def test_the_model_imports_no_qt():
    code = "import sys, mlm_studio.ui.panels.training.model; print(sorted(m for m in sys.modules if 'PySide6' in m))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert imported.strip() == "[]"


def test_start_is_refused_for_the_first_thing_missing_in_order():
    model = TrainingModel()
    assert model.refusal(corpus=False, tokenizer=False) == "Load a corpus first (Corpus panel)."
    assert model.refusal(corpus=True, tokenizer=False) == "Train or load a tokenizer first (Corpus panel)."
    model.config_error = "hidden_size (100) must be divisible by num_attention_heads (3)"
    assert model.refusal(corpus=True, tokenizer=True) == (
        "Fix the configuration first: hidden_size (100) must be divisible by num_attention_heads (3)."
    )
    model.config_error = ""
    assert model.refusal(corpus=True, tokenizer=True) == ""
    model.set_phase(PREPARING)
    assert model.refusal(corpus=True, tokenizer=True) == "A training is already running."


def test_the_buttons_in_each_phase_name_the_run_being_trained():
    model = TrainingModel()
    idle = model.controls("Load a corpus first (Corpus panel).")
    assert (idle.start, idle.pause, idle.stop) == (False, False, False)
    assert idle.start_tip == idle.reason == "Load a corpus first (Corpus panel)."
    assert idle.pause_tip == "Pause the training run (Ctrl+P)"
    ready = model.controls("")
    assert ready.start and ready.reason == "" and "Train a new run" in ready.start_tip

    model.launch(RUN, "Starting run-a", 0)
    model.set_phase(PREPARING)
    preparing = model.controls(model.refusal(corpus=True, tokenizer=True))
    assert (preparing.start, preparing.pause, preparing.stop) == (False, False, True)
    assert preparing.reason == ""  # said only while idle
    assert preparing.stop_tip == "Stop run-a after this step and save a checkpoint (Ctrl+.)"

    model.set_phase(RUNNING)
    running = model.controls("A training is already running.")
    assert (running.pause, running.pause_text, running.pause_tip) == (True, "Pause", "Pause run-a (Ctrl+P)")
    model.set_phase(PAUSED)
    paused = model.controls("A training is already running.")
    assert (paused.pause, paused.pause_text, paused.pause_tip) == (True, "Resume", "Resume run-a (Ctrl+P)")
    model.set_phase(STOPPING)
    stopping = model.controls("A training is already running.")
    assert not stopping.pause and not stopping.stop and model.stopping


def test_a_launch_forgets_the_run_before_and_its_preparation_is_kept():
    model = training()
    model.record(step(10, 5.0))
    model.notes.append(Note("the configuration's seed is not used", "seed not used"))
    other = Path("runs/run-b")
    model.launch(other, "Resuming run-b", 3)
    assert (model.training, model.launched, model.probes) == (other, "Resuming run-b", 3)
    assert model.started is None and model.last_step is None and model.records == [] and model.notes == []
    model.preparing(2, 5, "Tokenizing the corpus")
    assert model.preparation == (2, 5, "Tokenizing the corpus")
    assert model.elsewhere() == "Training: preparing · run-b"


def test_a_resumed_run_keeps_its_earlier_curves_and_counts_its_time_left_from_its_own_pace():
    model = TrainingModel()
    model.launch(RUN, "Resuming run-a", 0)
    earlier = [step(10, 20.0).to_dict(), step(20, 40.0).to_dict()]
    assert model.prepared(started(step=20, total_steps=60), earlier) == RUN
    assert model.records == earlier and model.live_row() == (RUN, IDLE, 20, None, None)
    assert model.seconds_left() == 0.0  # before its first step here
    model.set_phase(RUNNING)
    model.record(step(30, 50.0, tokens=3000))
    # 10 steps in the 10 s since the resume: the 30 steps left take 30 s (the 40 s before it are not its pace)
    assert model.seconds_left() == 30.0
    assert model.live_row() == (RUN, RUNNING, 30, 3000, 50.0)
    assert [r["step"] for r in model.records] == [10, 20, 30]


def test_a_time_budget_counts_seconds_and_says_no_total_of_steps():
    model = TrainingModel()
    model.launch(RUN, "Starting run-a", 0)
    model.prepared(started(time_budget=120.0), [])
    model.set_phase(RUNNING)
    model.record(step(7, 45.0))
    assert model.counts_seconds and model.seconds_left() == 75.0
    assert model.elsewhere() == "Training: running, step 7 · run-a"


def test_what_is_said_of_the_run_while_another_is_shown():
    model = training()
    assert model.elsewhere() == "Training: running, step 0 of 60 · run-a"
    model.record(step(50, 5.0))
    model.set_phase(PAUSED)
    assert model.elsewhere() == "Training: paused, step 50 of 60 · run-a"
    warning = WarningRecord(50, "the checkpoint could not be saved")
    assert model.said_of(warning, shown=True) == ("the checkpoint could not be saved", "warning")
    assert model.said_of(warning, shown=False) == ("run-a: the checkpoint could not be saved", "warning")
    assert model.said_of(PausedRecord(50, "paused: disk full"), shown=False)[0] == "run-a: paused: disk full"
    assert model.said_of(step(51, 6.0), shown=True) == ("", "")


def test_the_end_is_said_with_the_last_evaluation_and_its_step():
    model = training()
    model.record(evaluation(75))
    model.record(step(98, 5.0))
    finished = FinishedRecord(98, "stopped", str(RUN), 6.365, 0.12)  # the record does not say the evaluation's step
    said, level = model.said_of(finished, shown=True)
    assert level == "info"
    assert said == (
        "Training stopped at step 98 (run-a); validation loss 6.365, accuracy 12.0% at step 75. "
        "Try the model in the Playground."
    )


def test_finishing_says_which_run_it_was_and_leaves_nothing_training():
    model = training()
    model.record(step(10, 5.0))
    model.notes.append(Note("the corpus recorded in the run is used", "recorded corpus used"))
    assert model.take_notes() == [Note("the corpus recorded in the run is used", "recorded corpus used")]
    assert model.take_notes() == []  # said once
    model.set_phase(IDLE)
    assert model.finished() == RUN
    assert model.training is None and model.started is None and model.last_step is None
    assert not model.is_training(RUN) and model.elsewhere() == ""
    assert model.controls("").start and not model.controls("").stop


def test_the_run_being_trained_is_known_however_its_folder_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = training()
    assert model.is_training(tmp_path / RUN) and model.is_training(Path("runs/../runs/run-a"))
    assert not model.is_training(Path("runs/run-b")) and not model.is_training(None)


def a_run(folder: Path, max_steps: int, checkpoint_step: int) -> RunSummary:
    """A run folder that trains for `max_steps`, and what the runs table read of it."""
    folder.mkdir()
    (folder / "config.toml").write_text(RunConfig(training=TrainConfig(max_steps=max_steps)).to_toml())
    return RunSummary(folder, "custom", checkpoint_step, "stopped", 0, 1.0, None, None, 0.0, checkpoint_step, max_steps)


def test_the_runs_tab_buttons_say_why_not_for_the_selected_run(tmp_path):
    model = TrainingModel()
    assert model.why_not(None, None, None, exporting=False) == dict.fromkeys(RUN_ACTS, "Select a run first")
    halfway = tmp_path / "halfway"
    summary = a_run(halfway, max_steps=30, checkpoint_step=20)
    assert model.why_not(halfway, summary, None, exporting=False) == dict.fromkeys(RUN_ACTS, "")
    shown = model.why_not(halfway, summary, tmp_path / "." / "halfway", exporting=True)
    assert shown["overlay"] == "halfway is the run shown" and shown["export"] == "An export is running"
    assert shown["open"] == shown["resume"] == shown["branch"] == ""

    done = tmp_path / "done"
    at_its_end = model.why_not(done, a_run(done, max_steps=30, checkpoint_step=30), None, exporting=False)
    assert at_its_end["resume"] == "done is at the end of its training: nothing is left to train"
    assert at_its_end["branch"] == at_its_end["export"] == ""  # a branch or an export of it still can

    fresh = tmp_path / "fresh"
    never_saved = model.why_not(fresh, a_run(fresh, max_steps=30, checkpoint_step=0), None, exporting=False)
    assert never_saved["resume"] == never_saved["export"] == never_saved["branch"] == "fresh has no checkpoint yet"
    unlisted = model.why_not(tmp_path / "elsewhere", None, None, exporting=False)  # one the table did not read
    assert unlisted["resume"] == "elsewhere has no checkpoint yet" and unlisted["open"] == ""

    training(model)
    busy = model.why_not(halfway, summary, None, exporting=False)
    assert busy["resume"] == busy["branch"] == "A training is running: one at a time"
    assert busy["open"] == busy["overlay"] == busy["export"] == ""


def test_the_empty_plots_say_whose_probes_they_wait_for(tmp_path):
    model = TrainingModel()
    nothing = model.hints(None, probes_set=2)
    assert nothing["probes"].startswith("No run shown. The 2 cloze probes on the Probes tab are scored")
    assert nothing["loss"] == "No run shown: Start trains one, Open on the Runs tab shows one."
    assert "no cloze probes: add sentences with [MASK]" in model.hints(None, probes_set=0)["probes"]

    opened = tmp_path / "opened"
    opened.mkdir()
    save_probes(opened, [Probe("Return the [MASK] of the list.", "value")])
    never = model.hints(opened, probes_set=2)  # its own probe, not the Probes tab's two
    assert never["probes"] == "This run's 1 cloze probe was never scored: it has no evaluation."
    assert never["loss"] == "This run has no logged step."
    (opened / PROBES_FILE).write_text("{not json")
    assert model.hints(opened, probes_set=2)["probes"].startswith("This run has no cloze probes.")

    model.launch(opened, "Starting opened", 3)
    live = model.hints(opened, probes_set=2)
    assert live["probes"].startswith("This run's 3 cloze probes are scored at its first evaluation")
    assert live["loss"] == "The curves begin with the first logged step."
