"""The Training panel's rules without a window: why Start refuses, what Pause and Stop offer in each phase, and the
run being trained followed through its transitions (launched, preparing, started, its records, finished) as the
panel forwards them; what is said of it where it is shown and where another run is. The model imports no Qt."""

import subprocess
import sys
from pathlib import Path

from mlm_studio.core.runs.control import IDLE, PAUSED, PREPARING, RUNNING, STOPPING
from mlm_studio.core.runs.records import (
    EvalRecord,
    FinishedRecord,
    PausedRecord,
    StartedRecord,
    StepRecord,
    WarningRecord,
)
from mlm_studio.core.training.request import Note
from mlm_studio.ui.panels.training.model import TrainingModel

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
    assert (idle.start, idle.pause, idle.stop, idle.idle) == (False, False, False, True)
    assert idle.start_tip == idle.reason == "Load a corpus first (Corpus panel)."
    assert idle.pause_tip == "Pause the training run (Ctrl+P)"
    ready = model.controls("")
    assert ready.start and ready.reason == "" and "Train a new run" in ready.start_tip

    model.launch(RUN, "Starting run-a", 0)
    model.set_phase(PREPARING)
    preparing = model.controls(model.refusal(corpus=True, tokenizer=True))
    assert (preparing.start, preparing.pause, preparing.stop, preparing.idle) == (False, False, True, False)
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
