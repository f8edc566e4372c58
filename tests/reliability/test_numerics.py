"""Scenarios 7 and 8: non-finite losses or gradients, and running out of memory at step k."""

import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.core.models.bert import BertForMaskedLM
from mlm_studio.core.training.records import FailedRecord, FinishedRecord, WarningRecord
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
    from mlm_studio.core.storage.run_folder import RunDir
    from mlm_studio.ui.panels.training import TrainingPanel
    from mlm_studio.ui.workspace import Workspace

    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    workspace.set_config(small_config(max_steps=12, checkpoint_interval=100, eval_interval=100))
    panel = TrainingPanel(workspace, tmp_path / "runs")
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
