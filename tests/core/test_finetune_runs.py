"""The fine-tuning runs of a folder as the window lists them: a completed run and a stopped one with their state,
the model they started from, the task and the best validation score; pre-training runs and damaged task files left
out; the last test scores read back as the record the run wrote."""

import json

import pytest

from mlm_studio.core.finetune.runs import finetune_runs, last_test
from mlm_studio.core.finetune.setup import FinetuneOptions, prepare_finetuner
from mlm_studio.core.storage.run_folder import RunDir
from mlm_studio.core.training.control import TrainingControl
from tests.core.test_finetune import write_task


@pytest.mark.slow  # two small fine-tunings
def test_completed_stopped_and_scratch_runs_are_listed_with_their_scores(trained_run, tmp_path):
    options = FinetuneOptions(
        "classification", write_task(tmp_path / "task.csv", rows=60), learning_rate=5e-3, epochs=2, batch_size=8,
        patience=8, device="cpu",
    )  # fmt: skip
    root = tmp_path / "runs"
    written = list(prepare_finetuner(root / "done", str(trained_run.path), options).run())
    control = TrainingControl()
    for record in prepare_finetuner(root / "stopped", "scratch:" + str(trained_run.path), options, control).run():
        if record.kind == "checkpoint":
            control.stop()
    (root / "damaged").mkdir()
    (root / "damaged" / "config.toml").write_text((root / "done" / "config.toml").read_text())
    (root / "damaged" / "task.json").write_text("[1, 2")
    (root / "pretraining").symlink_to(trained_run.path)

    runs = {run.path.name: run for run in finetune_runs(root)}
    assert sorted(runs) == ["done", "stopped"]
    done, stopped = runs["done"], runs["stopped"]
    assert (done.state, done.resumable) == ("completed", False)
    assert (stopped.state, stopped.resumable) == ("stopped", True)
    assert done.model == trained_run.path.name and stopped.model == f"scratch:{trained_run.path.name}"
    assert done.task == "classification · task.csv"
    validations = [r.macro_f1 for r in written if r.kind == "validation"]
    assert done.best_score == max(validations)
    test, scored = last_test(root / "done"), next(r for r in written if r.kind == "test")
    assert (test.step, test.accuracy, test.macro_f1) == (scored.step, scored.accuracy, scored.macro_f1)
    assert [list(row) for row in test.confusion] == [list(row) for row in scored.confusion]
    assert (
        last_test(root / "stopped").step
        == json.loads((RunDir(root / "stopped").latest_checkpoint() / "state.json").read_text())["step"]
    )
