"""How a fine-tuning run's ending is recorded and read: a run whose patience runs out at its very last evaluation
trained every step and completed (no "stopping early" warning); a run folder an earlier version wrote as "stopped
early" at its last step is listed, and re-read by the tuner, as completed; one that stopped before its last step
is still "stopped early"."""

import json
import shutil

import pytest

from mlm_studio.core.finetune.runs import finetune_runs
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.records import FinishedRecord, ValidationRecord, WarningRecord
from mlm_studio.core.runs.run_folder import RunDir
from tests.core.test_finetune import options, write_task


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return write_task(tmp_path_factory.mktemp("task") / "task.csv", rows=60)


@pytest.fixture(scope="module")
def patience_out_at_the_end(trained_run, task, tmp_path_factory):
    """Two epochs with a learning rate too small to change the score and a patience of one: the second (and last)
    evaluation is no better than the first."""
    path = tmp_path_factory.mktemp("ending") / "ft"
    tuner = prepare_finetuner(path, str(trained_run.path), options(task, epochs=2, learning_rate=1e-7, patience=1))
    return path, tuner.total_steps, list(tuner.run())


def test_patience_running_out_at_the_last_step_is_a_completed_run(patience_out_at_the_end):
    path, total, records = patience_out_at_the_end
    validations = [r for r in records if isinstance(r, ValidationRecord)]
    assert len(validations) == 2 and validations[0].macro_f1 == validations[1].macro_f1  # no better: stale
    finished = records[-1]
    assert isinstance(finished, FinishedRecord) and finished.step == total
    assert finished.reason == "completed"
    assert not [r for r in records if isinstance(r, WarningRecord) and "early" in r.message]
    assert [run.state for run in finetune_runs(path.parent).found] == ["completed"]


def test_a_folder_written_as_stopped_early_at_its_last_step_reads_as_completed(patience_out_at_the_end, tmp_path):
    """What an earlier version wrote for the same run: "stopped early" at the last step, the checkpoint saying so."""
    source, total, _ = patience_out_at_the_end
    old = tmp_path / "runs" / "old"
    old.parent.mkdir()
    shutil.copytree(source, old)
    lines = (old / "metrics.jsonl").read_text().splitlines()
    finished = json.loads(lines[-1])
    lines[-1] = json.dumps({**finished, "reason": "stopped early"})
    (old / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    state_file = RunDir(old).latest_checkpoint() / "state.json"
    state_file.write_text(json.dumps({**json.loads(state_file.read_text()), "stopped_early": True}))

    assert [run.state for run in finetune_runs(old.parent).found] == ["completed"]
    again = list(prepare_finetuner(old).run())  # a finished run gives back the scores it wrote
    assert again[-1].reason == "completed" and again[-1].step == total


def test_a_run_that_stops_before_its_last_step_stopped_early(trained_run, task, tmp_path):
    tuner = prepare_finetuner(
        tmp_path / "runs" / "ft", str(trained_run.path), options(task, epochs=4, learning_rate=1e-7, patience=1)
    )
    records = list(tuner.run())
    assert records[-1].reason == "stopped early" and records[-1].step < tuner.total_steps
    assert any(isinstance(r, WarningRecord) and r.message.startswith("stopping early") for r in records)
    assert [run.state for run in finetune_runs(tmp_path / "runs").found] == ["stopped early"]


def test_a_run_stopped_before_its_first_validation_says_its_test_scores_are_the_latest_weights(
    trained_run, task, tmp_path
):
    """Stopped at step 2 of a 6-step epoch: no best weights exist, so the test scores the latest ones and says so, not
    "the best checkpoint (step 0) restored"."""
    from mlm_studio.core.runs.control import TrainingControl
    from mlm_studio.core.runs.records import StepRecord, TestRecord

    control = TrainingControl()
    tuner = prepare_finetuner(tmp_path / "ft", str(trained_run.path), options(task, epochs=1), control)
    records = []
    for record in tuner.run():
        records.append(record)
        if isinstance(record, StepRecord) and record.step == 2:
            control.stop()
    [test] = [r for r in records if isinstance(r, TestRecord)]
    assert not [r for r in records if isinstance(r, ValidationRecord)] and not (tmp_path / "ft" / "best").exists()
    assert (test.step, test.best_step) == (2, 0)
    assert test.describe().startswith("Test, with the latest weights (step 2, never validated): loss ")
    assert records[-1].reason == "stopped"


def test_a_stop_right_after_a_checkpoint_writes_and_says_it_once(trained_run, task, tmp_path):
    from mlm_studio.core.runs.control import TrainingControl

    control = TrainingControl()
    records = []
    for record in prepare_finetuner(tmp_path / "ft", str(trained_run.path), options(task, epochs=2), control).run():
        records.append(record)
        if record.kind == "checkpoint":
            control.stop()
    saved = [r.step for r in records if r.kind == "checkpoint"]
    assert len(saved) == 1 and [r.kind for r in records[-2:]] == ["test", "finished"], [r.kind for r in records]
    assert records[-1].reason == "stopped" and records[-1].step == saved[0]
