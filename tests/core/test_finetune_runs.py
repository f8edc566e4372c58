"""The fine-tuning runs of a folder as the window lists them: a completed run and a stopped one with their state,
the model they started from, the task and the best validation score; pre-training runs and damaged task files left
out; the last test scores read back as the record the run wrote."""

import json

import pytest

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.runs import finetune_runs, last_test
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.run_folder import RunDir
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

    listed = finetune_runs(root)
    runs = {run.path.name: run for run in listed.found}
    assert sorted(runs) == ["done", "stopped"]
    (damaged,) = listed.left_out  # said, with the file at fault
    assert damaged.path == root / "damaged"
    assert damaged.reason.startswith(f"{root / 'damaged' / 'task.json'} is damaged: it is not JSON")
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


def _poisoned(folder):
    """`folder`'s weights with one value made NaN, as a divergence saved before the check would leave them."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    name = next(n for n, t in tensors.items() if t.is_floating_point())
    tensors[name].view(-1)[0] = float("nan")
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})


def test_weights_that_are_not_finite_are_refused_by_every_road_through_a_fine_tuning(trained_run, tmp_path):
    import shutil

    from mlm_studio.core.finetune.predict import FineTuned
    from mlm_studio.core.storage.checkpoint import CheckpointError

    task = write_task(tmp_path / "task.csv", rows=40)
    options = FinetuneOptions("classification", task, learning_rate=5e-3, epochs=1, batch_size=8, device="cpu")
    source = RunDir(shutil.copytree(trained_run.path, tmp_path / "source"))
    latest = source.latest_checkpoint()
    _poisoned(latest)
    with pytest.raises(CheckpointError, match=rf"{latest.name}'s weights hold values that are not finite numbers, so "
                       "MLM Studio will not fine-tune it"):  # fmt: skip
        prepare_finetuner(tmp_path / "from-nan", str(source.path), options)
    assert not (tmp_path / "from-nan").exists()
    prepare_finetuner(tmp_path / "scratch", f"scratch:{source.path}", options)  # its shape alone: allowed

    tuned = tmp_path / "ft"
    list(prepare_finetuner(tuned, str(trained_run.path), options).run())
    _poisoned(tuned / "best")
    with pytest.raises(CheckpointError, match="ft / best: the weights hold values that are not finite numbers"):
        FineTuned(RunDir(tuned))  # predict, try it, search, export and the mistakes read it so
    _poisoned(RunDir(tuned).latest_checkpoint())
    written = (tuned / "config.toml").read_bytes(), (tuned / "metrics.jsonl").read_bytes()
    with pytest.raises(CheckpointError, match="weights hold values that are not finite numbers, so training cannot"):
        prepare_finetuner(tuned, changes={"epochs": 2.0})
    assert ((tuned / "config.toml").read_bytes(), (tuned / "metrics.jsonl").read_bytes()) == written
