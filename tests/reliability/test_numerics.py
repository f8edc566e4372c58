"""Scenarios 7 and 8: non-finite losses or gradients, and running out of memory at step k."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from mlm_studio.core.models.bert import BertForMaskedLM
from mlm_studio.core.runs import loop as loop_module
from mlm_studio.core.runs.records import FailedRecord, FinishedRecord, WarningRecord
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config


def trainer_for(tmp_path, small_corpus, small_tokenizer, **training):
    run = start_run(tmp_path / "run", small_config(**training), small_corpus, small_tokenizer)
    return Trainer(run, *training_blocks(run, small_corpus))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_gradients_are_skipped_counted_and_stop_training(tmp_path, small_corpus, small_tokenizer, value):
    trainer = trainer_for(tmp_path, small_corpus, small_tokenizer, max_steps=20, checkpoint_interval=4)
    weight = trainer.model.bert.encoder.layer[0].intermediate.dense.weight
    weight.register_hook(lambda grad: grad * value if trainer.step >= 5 else grad)
    records = list(trainer.run())
    warnings = [r for r in records if isinstance(r, WarningRecord)]
    assert [w.step for w in warnings] == [6, 7, 8, 9, 10]  # max_nonfinite_steps defaults to 5
    assert all("non-finite gradient" in w.message for w in warnings)
    # the checkpoint of step 8 holds the weights of step 5: skipped updates changed nothing
    assert isinstance(records[-1], FailedRecord) and "step-0000008, is intact" in records[-1].message
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    written = [r for r in trainer.run_dir.read_metrics() if r["type"] in ("warning", "failed")]
    assert [r["type"] for r in written] == ["warning"] * 5 + ["failed"]  # the run's file says why it stopped
    assert written[-1]["message"] == records[-1].message
    assert trainer.run_dir.latest_checkpoint().name == "step-0000008"
    assert all(
        torch.isfinite(t).all()
        for t in load_file(str(trainer.run_dir.latest_checkpoint() / "model.safetensors")).values()
    )


def test_an_isolated_bad_step_is_skipped_and_training_goes_on(tmp_path, small_corpus, small_tokenizer):
    trainer = trainer_for(tmp_path, small_corpus, small_tokenizer, max_steps=10)
    forward = trainer.forward

    def once_infinite(*args, **kwargs):
        out = forward(*args, **kwargs)
        if trainer.step == 3:
            out.loss = out.loss * float("inf")
        return out

    trainer.forward = once_infinite
    records = list(trainer.run())
    assert [r.step for r in records if isinstance(r, WarningRecord)] == [4]
    assert isinstance(records[-1], FinishedRecord) and records[-1].step == 10


class OutOfMemoryAt:
    """Raises CUDA's out-of-memory error from the forward pass of training step `step` (counting from 0)."""

    def __init__(self, trainer: Trainer, step: int) -> None:
        self.trainer, self.step, self.forward = trainer, step, trainer.forward

    def __call__(self, *args, **kwargs):
        if self.trainer.step == self.step:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.forward(*args, **kwargs)


def test_out_of_memory_gives_advice_and_keeps_the_last_completed_step(tmp_path, small_corpus, small_tokenizer):
    trainer = trainer_for(tmp_path, small_corpus, small_tokenizer, max_steps=12, checkpoint_interval=4)
    trainer.forward = OutOfMemoryAt(trainer, 6)
    records = list(trainer.run())
    failed = records[-1]
    assert isinstance(failed, FailedRecord) and failed.step == 6
    assert "ran out of memory" in failed.message and "Lower the batch size" in failed.message
    assert "Step 6 was saved" in failed.message
    run = trainer.run_dir
    assert run.latest_checkpoint().name == "step-0000006"
    saved = load_file(str(run.latest_checkpoint() / "model.safetensors"))
    assert all(torch.equal(saved[n], p.detach()) for n, p in trainer.model.state_dict().items() if n in saved)
    resumed = Trainer(run, *training_blocks(run))
    assert resumed.step == 6 and isinstance(list(resumed.run())[-1], FinishedRecord)


def test_out_of_memory_in_the_window_leaves_it_usable(qtbot, tmp_path, small_corpus, small_tokenizer, monkeypatch):
    from mlm_studio.core.runs.run_folder import RunDir
    from mlm_studio.ui.panels.training.panel import TrainingPanel
    from mlm_studio.ui.workspace import Workspace

    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    workspace.set_config(small_config(max_steps=12, checkpoint_interval=100, eval_interval=100))
    workspace.set_runs_root(tmp_path / "runs")
    panel = TrainingPanel(workspace)
    qtbot.addWidget(panel)
    panel.show()
    forward, calls = BertForMaskedLM.forward, []

    def out_of_memory_on_the_third_step(self, *args, **kwargs):
        if self.training:
            calls.append(1)
            if len(calls) == 3:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(BertForMaskedLM, "forward", out_of_memory_on_the_third_step)
    with qtbot.waitSignal(panel.run_finished, timeout=60_000):
        panel.start_button.click()
    assert panel.message_bar.level == "error" and "ran out of memory" in panel.message_bar.text
    assert "Step 2 was saved" in panel.message_bar.text
    assert RunDir(workspace.run).latest_checkpoint().name == "step-0000002"
    assert panel.start_button.isEnabled() and not panel.stop_button.isEnabled()


def finite_on_disk(checkpoint) -> bool:
    return all(torch.isfinite(t).all() for t in load_file(str(checkpoint / "model.safetensors")).values())


def damage_with_nan(checkpoint) -> None:
    """Overwrite one weight of a checkpoint on disk with NaN, as a divergence saved before weights were checked."""
    path = checkpoint / "model.safetensors"
    tensors = load_file(str(path))
    name = next(n for n, t in tensors.items() if t.is_floating_point())
    tensors[name] = torch.full_like(tensors[name], float("nan"))
    save_file(tensors, str(path), metadata={"format": "pt"})


def test_a_learning_rate_that_blows_up_saves_no_non_finite_step_and_prunes_no_good_one(
    tmp_path, small_corpus, small_tokenizer, monkeypatch
):
    trainer = trainer_for(
        tmp_path,
        small_corpus,
        small_tokenizer,
        max_steps=20,
        checkpoint_interval=2,
        eval_interval=2,
        keep_checkpoints=2,
    )
    scheduled = loop_module.learning_rate
    # from step 6 on the rate overflows float32: AdamW's own update turns the weights into infinities and NaN
    monkeypatch.setattr(
        loop_module, "learning_rate", lambda t, step, *rest: 1e39 if step >= 5 else scheduled(t, step, *rest)
    )
    records = list(trainer.run())
    assert not all(torch.isfinite(p).all() for p in trainer.model.parameters())  # a real divergence
    failed = records[-1]
    assert isinstance(failed, FailedRecord) and failed.step == 6
    assert "no longer finite numbers at step 6" in failed.message and "step 6 was not saved" in failed.message
    assert "The newest checkpoint with finite weights, step-0000004, is intact" in failed.message
    kept = trainer.run_dir.checkpoints()
    assert [p.name for p in kept] == ["step-0000002", "step-0000004"]
    assert all(finite_on_disk(p) for p in kept)
    evaluation = [r for r in trainer.run_dir.read_metrics() if r["type"] == "eval"][-1]
    assert evaluation["step"] == 6 and evaluation["loss"] is None  # strict JSON: NaN is written as null
    for line in trainer.run_dir.metrics_path.read_text().splitlines():
        json.loads(line, parse_constant=pytest.fail)  # no NaN or Infinity anywhere


def test_resuming_from_a_nan_damaged_checkpoint_is_refused_naming_the_newest_finite_one(
    tmp_path, small_corpus, small_tokenizer
):
    trainer = trainer_for(
        tmp_path, small_corpus, small_tokenizer, max_steps=8, checkpoint_interval=2, keep_checkpoints=2
    )
    list(trainer.run())
    run = trainer.run_dir
    assert [p.name for p in run.checkpoints()] == ["step-0000006", "step-0000008"]
    damage_with_nan(run.checkpoints()[-1])
    with pytest.raises(CheckpointError) as refused:
        Trainer(run, *training_blocks(run, small_corpus))
    assert str(refused.value).startswith("step-0000008's weights hold values that are not finite numbers")
    assert "The newest checkpoint with finite weights is step-0000006: to resume from it, move step-0000008" in str(
        refused.value
    )
    assert [p.name for p in run.checkpoints()] == ["step-0000006", "step-0000008"]  # nothing removed
    shutil.move(run.checkpoints()[-1], tmp_path / "aside")  # as the message says
    resumed = Trainer(run, *training_blocks(run, small_corpus))
    assert resumed.step == 6 and isinstance(list(resumed.run())[-1], FinishedRecord)
    assert finite_on_disk(run.latest_checkpoint()) and run.latest_checkpoint().name == "step-0000008"


def test_the_window_shows_why_a_nan_damaged_run_cannot_resume(qtbot, tmp_path, small_corpus, small_tokenizer):
    from mlm_studio.ui.panels.training.panel import TrainingPanel
    from mlm_studio.ui.workspace import Workspace

    trainer = trainer_for(tmp_path, small_corpus, small_tokenizer, max_steps=4, checkpoint_interval=2)
    list(trainer.run())
    damage_with_nan(trainer.run_dir.latest_checkpoint())
    panel = TrainingPanel(Workspace(runs_root=tmp_path / "runs"))
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.run_finished, timeout=60_000):
        panel.resume_run(trainer.run_dir.path)
    assert panel.message_bar.level == "error"
    assert "step-0000004's weights hold values that are not finite numbers" in panel.message_bar.text
    assert "newest checkpoint with finite weights is step-0000002" in panel.message_bar.text
