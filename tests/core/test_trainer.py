import json
import math
import shutil
from typing import ClassVar

import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import (
    CheckpointRecord,
    EvalRecord,
    FailedRecord,
    FinishedRecord,
    StepRecord,
    WarningRecord,
)
from mlm_studio.core.storage.checkpoint import CheckpointError, read_state
from mlm_studio.core.training.runs import check_resume, start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config, train_documents, with_training


def new_run(tmp_path, corpus, tokenizer, config, name="run"):
    run = start_run(tmp_path / name, config, corpus, tokenizer)
    train, validation = training_blocks(run, corpus)
    return run, train, validation


def train_all(run, train, validation, control=None):
    return list(Trainer(run, train, validation, control).run())


def steps(records):
    return [(r.step, r.loss, r.learning_rate, r.tokens_seen) for r in records if isinstance(r, StepRecord)]


def test_a_run_learns_and_leaves_a_complete_folder(tmp_path, small_corpus, small_tokenizer):
    config = small_config(max_steps=40, eval_interval=20, checkpoint_interval=20, log_interval=5, learning_rate=5e-3)
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, config)
    records = train_all(run, train, validation)
    losses = [loss for _, loss, _, _ in steps(records)]
    evals = [r for r in records if isinstance(r, EvalRecord)]
    assert losses[-1] < losses[0] - 0.4  # measured: 5.93 → 5.45
    assert [e.step for e in evals] == [20, 40] and evals[-1].loss < evals[0].loss
    assert 0 <= evals[-1].accuracy <= evals[-1].top5_accuracy <= 1
    assert evals[-1].perplexity == pytest.approx(math.exp(evals[-1].loss))
    finished = records[-1]
    assert isinstance(finished, FinishedRecord) and finished.reason == "completed" and finished.step == 40
    assert finished.val_loss == evals[-1].loss
    assert [p.name for p in run.checkpoints()] == ["step-0000020", "step-0000040"]
    logged = run.read_metrics()
    assert [r["type"] for r in logged].count("step") == 8 and logged[-1]["type"] == "finished"
    first = next(r for r in records if isinstance(r, StepRecord))
    assert first.tokens_seen == 5 * 8 * 32 and first.tokens_per_second > 0


def test_checkpoints_hold_no_pickles_and_load_back(tmp_path, small_corpus, small_tokenizer):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, small_config(max_steps=4))
    train_all(run, train, validation)
    checkpoint = run.latest_checkpoint()
    assert sorted(p.name for p in checkpoint.iterdir()) == ["model.safetensors", "optimizer.safetensors", "state.json"]
    weights = load_file(str(checkpoint / "model.safetensors"))
    assert "bert.embeddings.word_embeddings.weight" in weights
    state = read_state(checkpoint)
    assert state["step"] == 4 and state["tokens_seen"] == 4 * 8 * 32 and state["val_loss"] > 0


@pytest.mark.parametrize("accumulation", [1, 2])
def test_resume_is_exact(tmp_path, small_corpus, small_tokenizer, accumulation):
    """8 steps straight equal 4 steps, a stop, and 4 more: same losses, same weights. The training set is
    so small that both halves cross epoch boundaries."""
    config = small_config(max_steps=8, grad_accumulation=accumulation, checkpoint_interval=100, eval_interval=100)
    straight, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, config, "straight")
    train = type(train)(train.data, train_documents(train, 8), train.config, small_tokenizer)
    assert 2 * len(train) < 4 * 8  # each half of 4 steps of 8 blocks spans more than an epoch
    expected = steps(train_all(straight, train, validation))

    halves, _, _ = new_run(tmp_path, small_corpus, small_tokenizer, config, "halves")
    control = TrainingControl()
    first = []
    for record in Trainer(halves, train, validation, control).run():
        first.append(record)
        if isinstance(record, StepRecord) and record.step == 4:
            control.stop()
    assert isinstance(first[-1], FinishedRecord) and first[-1].reason == "stopped" and first[-1].step == 4
    assert halves.latest_checkpoint().name == "step-0000004"
    second = train_all(halves, train, validation)
    assert steps(first) + steps(second) == expected
    a = load_file(str(straight.latest_checkpoint() / "model.safetensors"))
    b = load_file(str(halves.latest_checkpoint() / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [r["step"] for r in halves.read_metrics() if r["type"] == "step"] == list(range(1, 9))


def test_pause_takes_effect_within_one_step(tmp_path, small_corpus, small_tokenizer):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, small_config(max_steps=6))

    class Recording(TrainingControl):
        waited_at: ClassVar[list] = []

        def wait_while_paused(self):
            if self.paused:
                self.waited_at.append(trainer.step)
                self.resume()
            super().wait_while_paused()

    control = Recording()
    trainer = Trainer(run, train, validation, control)
    for record in trainer.run():
        if isinstance(record, StepRecord) and record.step == 2:
            control.pause()
    assert control.waited_at == [2]


def test_stop_while_paused_saves_and_finishes(tmp_path, small_corpus, small_tokenizer):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, small_config(max_steps=20))
    control = TrainingControl()
    records = []
    for record in Trainer(run, train, validation, control).run():
        records.append(record)
        if isinstance(record, StepRecord) and record.step == 3:
            control.pause()
            control.stop()
    assert isinstance(records[-2], CheckpointRecord) and records[-1].reason == "stopped"
    assert run.latest_checkpoint().name == "step-0000003"


def test_a_stopped_run_says_which_step_its_validation_figures_are_from(tmp_path, small_corpus, small_tokenizer):
    """Stopped at step 7 with evaluations every 5 steps: the figures it ends with are step 5's, and it says so."""
    config = small_config(max_steps=20, eval_interval=5, log_interval=1)
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, config)
    control = TrainingControl()
    records = []
    for record in Trainer(run, train, validation, control).run():
        records.append(record)
        if isinstance(record, StepRecord) and record.step == 7:
            control.stop()
    finished, evaluated = records[-1], [r for r in records if isinstance(r, EvalRecord)][-1]
    assert (finished.step, finished.val_step, finished.val_loss) == (7, 5, evaluated.loss) and evaluated.step == 5
    assert "at step 5" in finished.describe() and run.read_metrics()[-1]["val_step"] == 5


def test_non_finite_losses_are_skipped_then_training_stops_with_the_last_checkpoint_intact(
    tmp_path, small_corpus, small_tokenizer
):
    config = small_config(max_steps=20, checkpoint_interval=4, max_nonfinite_steps=3)
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, config)
    trainer = Trainer(run, train, validation)
    model_forward = trainer.forward

    def poisoned(*args, **kwargs):
        out = model_forward(*args, **kwargs)
        if trainer.step >= 5:
            out.loss = out.loss * float("nan")
        return out

    trainer.forward = poisoned
    records = list(trainer.run())
    warnings = [r for r in records if isinstance(r, WarningRecord)]
    assert [w.step for w in warnings] == [6, 7, 8]
    assert isinstance(records[-1], FailedRecord)
    assert "3 steps in a row" in records[-1].message and "step-0000004, is intact" in records[-1].message
    checkpoint = run.latest_checkpoint()
    assert checkpoint.name == "step-0000004"
    assert all(torch.isfinite(t).all() for t in load_file(str(checkpoint / "model.safetensors")).values())


def test_a_crash_while_writing_leaves_the_previous_checkpoint_as_latest(tmp_path, small_corpus, small_tokenizer):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, small_config(max_steps=4))
    train_all(run, train, validation)
    folder = run.path / "checkpoints"
    (folder / ".step-0000008.tmp999").mkdir()
    (folder / ".step-0000008.tmp999" / "model.safetensors").write_bytes(b"partial")
    assert run.latest_checkpoint().name == "step-0000004"
    records = train_all(run, train, validation)
    assert records[-1].reason == "completed" and records[-1].step == 4  # resumed at the end: nothing to do


def test_only_the_latest_and_the_best_checkpoints_are_kept(tmp_path, small_corpus, small_tokenizer):
    config = small_config(max_steps=12, checkpoint_interval=2, eval_interval=2, keep_checkpoints=2)
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, config)
    train_all(run, train, validation)
    kept = [p.name for p in run.checkpoints()]
    best = run.best_checkpoint().name
    assert kept[-2:] == ["step-0000010", "step-0000012"] and best in kept and len(kept) <= 3


def test_a_damaged_metrics_line_is_skipped(tmp_path, small_corpus, small_tokenizer):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, small_config(max_steps=2))
    train_all(run, train, validation)
    with open(run.metrics_path, "a") as f:
        f.write('{"type": "step", "step": 3, "lo')
    assert run.read_metrics()[-1]["type"] == "finished"


def test_resuming_with_another_shape_or_tokenizer_is_refused_listing_the_differences(
    tmp_path, small_corpus, small_tokenizer, tokenizer
):
    run, _, _ = new_run(tmp_path, small_corpus, small_tokenizer, small_config())
    other = small_config()
    other = type(other)(
        model=type(other.model)(**{**other.model.__dict__, "hidden_size": 64}),
        data=other.data,
        training=other.training,
    )
    with pytest.raises(CheckpointError, match=r"model.hidden_size: 32 → 64"):
        check_resume(run, other, None)
    with pytest.raises(CheckpointError, match=r"tokenizer: 400 pieces \(\w+\) → 4,000 pieces"):
        check_resume(run, None, tokenizer)
    check_resume(run, with_training(small_config(), learning_rate=0.01), small_tokenizer)  # training may change


def test_a_damaged_checkpoint_is_refused_clearly(tmp_path, small_corpus, small_tokenizer):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, small_config(max_steps=2))
    train_all(run, train, validation)
    (run.latest_checkpoint() / "model.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(CheckpointError, match=r"model.safetensors cannot be read"):
        Trainer(run, train, validation)


def test_unsupported_hardware_choices_are_refused(tmp_path, small_corpus, small_tokenizer):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    for training, message in (
        ({"precision": "fp16"}, "fp16 needs a CUDA GPU"),
        ({"device": "cuda"}, "PyTorch sees no CUDA GPU"),
    ):
        run, train, validation = new_run(
            tmp_path, small_corpus, small_tokenizer, small_config(**training), name=training.popitem()[0]
        )
        with pytest.raises(ValueError, match=message):
            Trainer(run, train, validation)


def test_starting_over_an_existing_run_is_refused(tmp_path, small_corpus, small_tokenizer):
    new_run(tmp_path, small_corpus, small_tokenizer, small_config())
    with pytest.raises(CheckpointError, match=r"already holds a run"):
        start_run(tmp_path / "run", small_config(), small_corpus, small_tokenizer)
    assert json.loads((tmp_path / "run" / "corpus.json").read_text())["options"]["text_unit"] == "paragraph"
    shutil.rmtree(tmp_path / "run")


def test_the_metrics_csv_holds_step_eval_and_probe_rows():
    import csv
    import io

    from mlm_studio.core.runs.history import metrics_csv

    records = [
        {"type": "step", "step": 1, "tokens_seen": 10, "elapsed": 0.1, "loss": 5.0},
        {"type": "eval", "step": 1, "tokens_seen": 10, "elapsed": 0.2, "loss": 4.9, "accuracy": 0.1},
        {
            "type": "probe",
            "step": 1,
            "tokens_seen": 10,
            "elapsed": 0.3,
            "results": [
                {"text": "a [MASK]", "expected": "copy", "rank": 3, "probability": 0.2},
                {"text": "b [MASK]", "expected": "list", "rank": 1, "probability": 0.6},
            ],
        },
        {"type": "checkpoint", "step": 1, "path": "x"},
    ]
    rows = list(csv.DictReader(io.StringIO(metrics_csv(records))))
    assert [r["type"] for r in rows] == ["step", "eval", "probe", "probe"]
    assert (rows[2]["probe"], rows[2]["rank"], rows[2]["tokens_seen"]) == ("copy", "3", "10")
    assert (rows[3]["probe"], rows[3]["probability"]) == ("list", "0.6")
