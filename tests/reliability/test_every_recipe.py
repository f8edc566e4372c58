"""The loop's fault policies hold for every recipe: the same faults, real where they can be (a filesystem that fills
up), for pre-training and for fine-tuning alike. Each recipe's run here has checkpoints at steps 4, 8 and 12."""

import json
import math

import pytest
import torch

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs import loop as loop_module
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import (
    CheckpointRecord,
    FailedRecord,
    FinishedRecord,
    PausedRecord,
    TestRecord,
    WarningRecord,
)
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config, two_label_task
from tests.reliability.disks import fill

RECIPES = ["pre-training", "fine-tuning"]


@pytest.fixture(scope="module")
def task_file(tmp_path_factory):
    """150 labelled sentences: 120 train (15 steps of 8 an epoch), 15 validation, 15 test."""
    return two_label_task(tmp_path_factory.mktemp("task") / "task.csv", 150)


@pytest.fixture
def start(tmp_path, small_corpus, small_tokenizer, finished_run, task_file):
    """`start(recipe, folder, **values)`: a new run of `recipe` in `folder` (under tmp_path if relative), its
    loop made with `values` (control, pause_on_save_error) and `learning_rate`."""

    def make(recipe, folder="run", learning_rate=1e-3, **values):
        path = tmp_path / folder
        if recipe == "pre-training":
            config = small_config(max_steps=14, checkpoint_interval=4, eval_interval=4, learning_rate=learning_rate)
            run = start_run(path, config, small_corpus, small_tokenizer)
            return Trainer(run, *training_blocks(run, small_corpus), **values)
        options = FinetuneOptions(
            "classification", task_file, learning_rate=learning_rate, epochs=1, batch_size=8, eval_interval=4,
            patience=100, device="cpu",
        )  # fmt: skip
        return prepare_finetuner(path, str(finished_run), options, **values)

    return make


def resumed(loop):
    """A new loop of the same recipe on the same run, as a later session would make it."""
    if isinstance(loop, Trainer):
        return Trainer(loop.run_dir, *training_blocks(loop.run_dir))
    return prepare_finetuner(loop.run_dir.path)


def a_weight(model: torch.nn.Module) -> torch.nn.Parameter:
    """The first matrix of the encoder's first layer, whichever recipe's model holds it."""
    return next(p for name, p in model.named_parameters() if p.dim() == 2 and "layer" in name and p.requires_grad)


def written(run: RunDir) -> list[dict]:
    """Every record of the run's metrics, strictly read: no NaN or Infinity may be written."""
    lines = (run.path / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line, parse_constant=pytest.fail) for line in lines]


@pytest.mark.parametrize("recipe", RECIPES)
def test_non_finite_steps_are_said_skipped_kept_out_of_the_losses_and_end_the_run(start, recipe):
    loop = start(recipe)
    a_weight(loop.model).register_hook(lambda grad: grad * float("nan") if loop.step >= 5 else grad)
    records = list(loop.run())
    warnings = [r for r in records if isinstance(r, WarningRecord) and "non-finite" in r.message]
    assert [w.step for w in warnings] == [6, 7, 8, 9, 10]  # max_nonfinite_steps is 5
    assert all("the update was skipped" in w.message for w in warnings)
    failed = records[-1]
    assert isinstance(failed, FailedRecord) and "not finite numbers 5 steps in a row" in failed.message
    assert "step-0000008, is intact" in failed.message  # steps 6 to 8 were skipped: its weights are step 5's
    steps = [r for r in written(loop.run_dir) if r["type"] == "step"]
    assert steps and all(isinstance(r["loss"], float) and math.isfinite(r["loss"]) for r in steps)
    assert all(torch.isfinite(p).all() for p in loop.model.parameters())


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_learning_rate_that_blows_up_is_said_and_leaves_no_null_loss_in_the_metrics(start, recipe, monkeypatch):
    """From step 6 on the rate overflows float32: AdamW's update turns the weights into infinities, the next steps'
    losses are not finite. Each is said and skipped, none reaches a logged loss, and the weights are not saved."""
    scheduled = loop_module.learning_rate
    monkeypatch.setattr(
        loop_module, "learning_rate", lambda t, step, *rest: 1e39 if step >= 5 else scheduled(t, step, *rest)
    )
    loop = start(recipe)
    records = list(loop.run())
    said = [r.step for r in records if isinstance(r, WarningRecord) and "non-finite loss" in r.message]
    assert said == [7, 8]  # step 6's update overflowed; 7 and 8 could not learn, and 8 could not be saved
    failed = records[-1]
    assert isinstance(failed, FailedRecord) and "no longer finite numbers at step 8" in failed.message
    assert "The newest checkpoint with finite weights, step-0000004, is intact" in failed.message
    steps = [r for r in written(loop.run_dir) if r["type"] == "step"]
    assert [r["step"] for r in steps][-1] == 6  # the last step that learned
    assert all(isinstance(r["loss"], float) and math.isfinite(r["loss"]) for r in steps)


class OutOfMemoryAt:
    """Raises CUDA's out-of-memory error from the forward pass of training step `step` (counting from 0)."""

    def __init__(self, loop, step: int) -> None:
        self.loop, self.step, self.forward = loop, step, loop.forward

    def __call__(self, *args, **kwargs):
        if self.loop.step == self.step and self.loop.model.training:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.forward(*args, **kwargs)


@pytest.mark.parametrize("recipe", RECIPES)
def test_out_of_memory_keeps_the_last_completed_step_and_the_run_resumes(start, recipe):
    loop = start(recipe)
    loop.forward = OutOfMemoryAt(loop, 6)
    records = list(loop.run())
    failed = records[-1]
    assert isinstance(failed, FailedRecord) and failed.step == 6
    assert "ran out of memory" in failed.message and "Step 6 was saved" in failed.message
    assert loop.run_dir.latest_checkpoint().name == "step-0000006"
    again = resumed(loop)
    assert again.step == 6
    ending = list(again.run())
    assert isinstance(ending[-1], FinishedRecord) and ending[-1].reason == "completed"


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_disk_that_fills_up_fails_the_terminal_run_with_the_reason_and_it_resumes_exactly(
    start, recipe, tmpfs, tmp_path
):
    disk = tmpfs(tmp_path / "disk", "size=16m")
    loop = start(recipe, folder=disk / "run")
    records = []
    for record in loop.run():
        records.append(record)
        if isinstance(record, CheckpointRecord) and record.step == 4:
            fill(disk)  # a user's file takes the last byte after the first checkpoint
    failed = records[-1]
    assert isinstance(failed, FailedRecord) and failed.step == 8
    # the checkpoint, or first a fine-tuning's better weights (best/), of step 8
    assert "of step 8 (No space left on device)" in failed.message and failed.message.startswith("Could not write")
    assert "step-0000004, is intact" in failed.message
    assert [p.name for p in loop.run_dir.checkpoints()] == ["step-0000004"]
    assert not [p for p in (loop.run_dir.path / "checkpoints").iterdir() if p.name.startswith(".")]
    (disk / "filler.bin").unlink()
    again = resumed(loop)
    assert again.step == 4
    ending = list(again.run())
    assert isinstance(ending[-1], FinishedRecord) and ending[-1].reason == "completed"
    assert [r["step"] for r in written(again.run_dir) if r["type"] == "checkpoint"][-1] == again.total_steps


@pytest.mark.parametrize("recipe", RECIPES)
def test_in_the_window_a_full_disk_pauses_the_run_and_it_ends_once_room_is_made(start, recipe, tmpfs, tmp_path):
    disk = tmpfs(tmp_path / "disk", "size=16m")
    control = TrainingControl()
    loop = start(recipe, folder=disk / "run", control=control, pause_on_save_error=True)
    records, pauses = [], 0
    for record in loop.run():
        records.append(record)
        if isinstance(record, CheckpointRecord) and record.step == 4:
            fill(disk)
        if isinstance(record, PausedRecord):
            pauses += 1
            assert control.paused and "No space left on device" in record.message
            (disk / "filler.bin").unlink()  # the user makes room and presses Resume
            control.resume()
    assert pauses == 1
    assert isinstance(records[-1], FinishedRecord) and records[-1].reason == "completed"
    kinds = [r["type"] for r in written(loop.run_dir)]
    assert kinds.count("finished") == 1 and ("test" in kinds) == (recipe == "fine-tuning")
    if recipe == "fine-tuning":
        assert isinstance(records[-2], TestRecord)
