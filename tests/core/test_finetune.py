"""The fine-tuning engine on a small pre-trained run: it learns a separable task far past the majority class,
stops early restoring the best weights, resumes exactly, and says what is wrong with a bad labelled file."""

import csv
import json
import random
import re

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.data.labelled import TaskError
from mlm_studio.core.finetune.options import FinetuneOptions, OptionError
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.finetune.tuner import BEST, fine_tuning_steps
from mlm_studio.core.interop.export import export_choice
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import FinishedRecord, StepRecord, TestRecord, ValidationRecord

# each class is told by its own words; the rest of the sentence is shared
CLASS_WORDS = {"returns": ("return", "value"), "errors": ("error", "raise"), "files": ("file", "path")}
FILLER = ("the", "of", "a", "list", "to", "is", "and")


def write_task(path, rows=150, seed=0):
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence", "category"])
        for _ in range(rows):
            label = rng.choice(sorted(CLASS_WORDS))
            words = [rng.choice(FILLER) for _ in range(rng.randint(3, 9))]
            words.insert(rng.randint(0, len(words)), rng.choice(CLASS_WORDS[label]))
            writer.writerow([" ".join(words), label])
    return path


@pytest.fixture(scope="module")
def task_file(tmp_path_factory):
    return write_task(tmp_path_factory.mktemp("task") / "task.csv")


def options(task_file, **values):
    defaults = dict(learning_rate=5e-3, epochs=8, batch_size=8, patience=8, device="cpu")
    return FinetuneOptions("classification", task_file, **{**defaults, **values})


@pytest.mark.slow  # fine-tuning for several epochs
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_fine_tuned_model_beats_the_majority_class(trained_run, task_file, tmp_path, precision):
    tuner = prepare_finetuner(tmp_path / "ft", str(trained_run.path), options(task_file, precision=precision))
    records = list(tuner.run())
    assert records[0].precision == precision and f"on cpu in {precision}:" in records[0].describe()
    test = next(r for r in records if isinstance(r, TestRecord))
    support = [c[4] for c in test.per_class]
    majority = max(support) / sum(support)
    assert test.accuracy >= 0.9 > majority + 0.4
    assert sum(map(sum, test.confusion)) == sum(support) == 15  # 10% of 150, each label in proportion
    assert [c[0] for c in test.per_class] == sorted(CLASS_WORDS)
    assert isinstance(records[-1], FinishedRecord) and records[-1].reason == "completed"
    written = [json.loads(line)["type"] for line in (tmp_path / "ft" / "metrics.jsonl").read_text().splitlines()]
    assert written.count("validation") == 8 and written.count("test") == 1  # an evaluation per epoch
    assert any((tmp_path / "ft" / "tensorboard").iterdir())


def test_early_stopping_restores_the_best_weights(trained_run, task_file, tmp_path):
    """A learning rate too small to change the score: the second evaluation is no better, so the run stops
    there and the test is scored with the first evaluation's weights, not the last step's."""
    tuner = prepare_finetuner(
        tmp_path / "ft", str(trained_run.path), options(task_file, learning_rate=1e-7, patience=1)
    )
    records = list(tuner.run())
    validations = [r for r in records if isinstance(r, ValidationRecord)]
    test = next(r for r in records if isinstance(r, TestRecord))
    assert len(validations) == 2 and records[-1].reason == "stopped early"
    assert test.best_step == validations[0].step < tuner.step == validations[1].step
    best = load_file(str(tmp_path / "ft" / BEST / "model.safetensors"))
    last = load_file(str(tuner.run_dir.latest_checkpoint() / "model.safetensors"))
    final = tuner.model.state_dict()
    assert all(torch.equal(final[name], best[name]) for name in best)
    assert any(not torch.equal(last[name], best[name]) for name in best)
    # what an export of the run takes (the command line says it in these words), and of one checkpoint
    chosen = export_choice(tmp_path / "ft")
    assert (chosen.weights, chosen.said) == (tmp_path / "ft" / BEST, "best, its best weights by the validation score")
    assert chosen.fine_tuned is not None and chosen.fine_tuned.weights == chosen.weights
    latest = tuner.run_dir.latest_checkpoint()
    assert export_choice(latest).weights == latest and export_choice(latest).said.endswith("the checkpoint given")


def test_precision_auto_is_resolved_once_recorded_and_said(trained_run, task_file, tmp_path):
    tuner = prepare_finetuner(tmp_path / "ft", str(trained_run.path), options(task_file))
    chosen = "fp32"  # on a CPU; bf16 where a GPU computes it natively
    assert FinetuneOptions("classification", task_file).precision == "auto"  # the default
    assert RunConfig.load(tmp_path / "ft" / "config.toml").training.precision == chosen
    assert tuner.started().precision == chosen
    with pytest.raises(OptionError, match="precision must be one of auto, fp32, bf16, not fp16"):
        options(task_file, precision="fp16")


# A scratch model's first epoch as the engine computed it before it had a precision setting (in fp32 only): every
# step's loss, then the validation and test loss. A bf16 run differs from these by 2e-5 or more.
FP32_STEP_LOSSES = [1.0979087352752686, 1.1522687276204426, 1.0752840042114258, 1.1100127696990967, 1.0995599428812664]
FP32_VALIDATION_AND_TEST_LOSS = [1.086140505472819, 1.0862486521402994]


def test_an_fp32_run_computes_as_before(trained_run, task_file, tmp_path):
    tuner = prepare_finetuner(
        tmp_path / "ft", f"scratch:{trained_run.path}", options(task_file, epochs=1, precision="fp32")
    )
    records = list(tuner.run())
    steps = [r.loss for r in records if isinstance(r, StepRecord)]
    scored = [r.loss for r in records if isinstance(r, ValidationRecord | TestRecord)]
    assert steps == pytest.approx(FP32_STEP_LOSSES, rel=1e-6)
    assert scored == pytest.approx(FP32_VALIDATION_AND_TEST_LOSS, rel=1e-6)


@pytest.mark.slow  # fine-tuning for several epochs
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_resume_is_exact(trained_run, task_file, tmp_path, precision):
    chosen = options(task_file, epochs=2, precision=precision)
    straight = list(prepare_finetuner(tmp_path / "a", str(trained_run.path), chosen).run())
    control = TrainingControl()
    first = prepare_finetuner(tmp_path / "b", str(trained_run.path), chosen, control)
    for record in first.run():
        if isinstance(record, StepRecord) and record.step >= 20:  # mid-epoch: 15 steps an epoch
            control.stop()
    assert first.step < first.total_steps
    resumed = list(prepare_finetuner(tmp_path / "b").run())
    losses = {r.step: r.loss for r in straight if isinstance(r, StepRecord | ValidationRecord)}
    again = {r.step: r.loss for r in resumed if isinstance(r, StepRecord | ValidationRecord)}
    assert again and all(again[step] == losses[step] for step in again)
    a, b = (load_file(str(p / BEST / "model.safetensors")) for p in (tmp_path / "a", tmp_path / "b"))
    assert all(torch.equal(a[name], b[name]) for name in a)
    lines = (tmp_path / "b" / "metrics.jsonl").read_text().count("\n")
    again = list(prepare_finetuner(tmp_path / "b").run())  # a finished run: its scores as written, nothing rerun
    tested = next(r for r in resumed if isinstance(r, TestRecord))
    assert (again[1].accuracy, again[1].best_step, again[1].step) == (tested.accuracy, tested.best_step, tested.step)
    assert [r.kind for r in again] == ["warning", "test", "finished"]
    assert (tmp_path / "b" / "metrics.jsonl").read_text().count("\n") == lines


def test_a_finished_run_given_more_epochs_still_names_its_best_validation(trained_run, task_file, tmp_path):
    """A completed run resumed with more epochs whose best checkpoint stays the one from before the resume ends with
    that checkpoint's validation loss and accuracy, as the run wrote them (a learning rate too small to change the
    score keeps the best where it was)."""
    chosen = options(task_file, epochs=1, learning_rate=1e-7)
    first = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), chosen).run())
    best = next(r for r in first if isinstance(r, ValidationRecord))
    assert first[-1].val_loss == best.loss
    tuner = prepare_finetuner(tmp_path / "ft", changes={"epochs": 2})
    records = list(tuner.run())
    test, finished = next(r for r in records if isinstance(r, TestRecord)), records[-1]
    assert test.best_step == best.step < finished.step  # the resumed epoch did no better
    assert (finished.val_loss, finished.val_accuracy) == (best.loss, best.accuracy)
    assert f"validation loss {best.loss:.4f}, accuracy {best.accuracy:.1%}" in finished.describe()
    written = json.loads((tmp_path / "ft" / "metrics.jsonl").read_text().splitlines()[-1])
    assert (written["type"], written["val_loss"], written["val_accuracy"]) == ("finished", best.loss, best.accuracy)


# --- bad input: one sentence naming the file and row -----------------------------------------------------
def _csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _start(run, path, **values):
    return prepare_finetuner(path.parent / "ft", str(run.path), FinetuneOptions("classification", path, **values))


def test_one_class_is_refused(trained_run, tmp_path):
    path = _csv(tmp_path / "one.csv", ["text", "label"], [[f"text {i}", "same"] for i in range(10)])
    with pytest.raises(TaskError, match=r"one.csv: every row has the label 'same'; a classifier needs at least two"):
        _start(trained_run, path)
    assert not (tmp_path / "ft").exists()


def test_unknown_columns_are_named_with_the_override(trained_run, tmp_path):
    from mlm_studio.core.data.labelled import Columns

    path = _csv(tmp_path / "cols.csv", ["body", "kind"], [["a text", "x"], ["b text", "y"]] * 5)
    with pytest.raises(TaskError, match=r"cols.csv: no text column among its columns \(body, kind\); name it with"):
        _start(trained_run, path)
    with pytest.raises(TaskError, match=r"cols.csv: no column 'label' \(columns: body, kind\)"):
        _start(trained_run, path, columns=Columns("body", "label"))


def test_labels_unseen_in_training_are_refused(trained_run, tmp_path):
    train = _csv(tmp_path / "train.csv", ["text", "label"], [["a text", "x"], ["b text", "y"]] * 5)
    validation = _csv(tmp_path / "validation.csv", ["text", "label"], [["a text", "x"]])
    test = _csv(tmp_path / "test.csv", ["text", "label"], [["a text", "x"], ["c text", "z"]])
    with pytest.raises(TaskError, match=r"test.csv, row 3: the label 'z' never occurs in the training data"):
        _start(trained_run, train, validation=validation, test=test)


def test_long_texts_are_cut_and_counted(trained_run, tmp_path):
    """The small model reads 64 tokens: a text of 300 words is cut there, and each part says how many it cut and
    the first one's row."""
    rows = [[("word " * (300 if i % 4 == 0 else 3)) + str(i), "ab"[i % 2]] for i in range(40)]
    tuner = _start(trained_run, _csv(tmp_path / "long.csv", ["text", "label"], rows), epochs=1, device="cpu")
    data = tuner.data
    cut = [len(part.truncated) for part in (data.train, data.validation, data.test)]
    assert sum(cut) == 10 and max(len(ids) for ids in data.train.ids) == 64
    first = min(data.train.truncated)
    assert f"long.csv: {cut[0]} of the 32 training examples are longer than the 64 tokens" in data.notes[0]
    assert f"the first at row {first}" in data.notes[0] and (first - 2) % 4 == 0  # row 2 holds text 0


def test_tokens_and_tags_of_different_lengths_are_refused(trained_run, tmp_path):
    path = tmp_path / "tags.jsonl"
    good = {"tokens": ["a", "b"], "tags": ["O", "B-X"]}
    path.write_text("\n".join(json.dumps(r) for r in [good, good, {"tokens": ["a", "b", "c"], "tags": ["O"]}]))
    options = FinetuneOptions("tokens", path)
    with pytest.raises(TaskError, match=r"tags.jsonl, row 3: 3 tokens but 1 tags; give every token exactly one tag"):
        prepare_finetuner(tmp_path / "ft", str(trained_run.path), options)


def test_stratified_split_keeps_every_label_in_each_part():
    from mlm_studio.core.data.copies import stratified_split
    from mlm_studio.core.data.labelled import Example

    examples = [Example(i, (f"text {i}",), ("abc"[i % 3] if i < 90 else "d",)) for i in range(95)]
    train, validation, test = stratified_split(examples, 0, "classification")
    assert sorted(train + validation + test) == list(range(95))
    for part in (validation, test):
        assert {examples[i].labels[0] for i in part} == set("abcd")
    assert len(validation) == len(test) == 3 * 3 + 1
    assert stratified_split(examples, 0, "classification") == (train, validation, test)
    assert stratified_split(examples, 1, "classification") != (train, validation, test)


def test_batches_group_similar_lengths():
    from mlm_studio.core.finetune.examples import batch_order

    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 200, 1000).tolist()
    batches = batch_order(lengths, 16, seed=3)
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    shuffled = rng.permutation(1000)
    unsorted = sum(16 * max(lengths[i] for i in shuffled[s : s + 16]) for s in range(0, 1000, 16))
    assert padded < 0.65 * unsorted  # far less padding than batches of random lengths


def test_frozen_layers_stay_as_they_were(trained_run, task_file, tmp_path):
    tuner = prepare_finetuner(tmp_path / "ft", str(trained_run.path), options(task_file, freeze_layers=1))
    before = {name: p.detach().clone() for name, p in tuner.model.named_parameters()}
    for _ in range(3):
        tuner.train_step()
        tuner.step += 1
    after = dict(tuner.model.named_parameters())
    moved = {name for name in before if not torch.equal(before[name], after[name])}
    assert moved and all(not name.startswith(("bert.embeddings.", "bert.encoder.layer.0.")) for name in moved)
    assert {"classifier.weight", "bert.pooler.dense.weight"} <= moved  # the model has one layer: the head trains


def test_a_cpu_fine_tuning_run_re_decides_its_threads_at_every_step(
    trained_run, task_file, tmp_path, monkeypatch, torch_threads
):
    from mlm_studio.core.runs import threads as threads_module

    checks = []

    class Counted(threads_module.ThreadGovernor):
        def check(self) -> int:
            checks.append(super().check())
            return checks[-1]

    monkeypatch.setattr(threads_module, "ThreadGovernor", Counted)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    tuner = prepare_finetuner(tmp_path / "ft", str(trained_run.path), options(task_file, epochs=1, device="cpu"))
    assert tuner.optimizer.defaults["fused"] is True  # pre-training's kernel, one road (device.adamw)
    list(tuner.run())
    assert len(checks) == tuner.total_steps and all(1 <= t <= threads_module.thread_ceiling() for t in checks)


def test_gradient_accumulation_learns_as_the_batch_it_adds_up_to(trained_run, task_file, tmp_path):
    """Two micro-batches of 8 a step read the same examples in the same order as one batch of 16, so the runs take
    the same steps to the same scores: without dropout (whose draws follow the batches' shapes) only the order of
    the sums differs, and every validation loss agrees within 1e-3 through the run's take-off."""
    runs = {}
    for name, batch, accumulation in (("whole", 16, 1), ("accumulated", 8, 2)):
        asked = options(task_file, batch_size=batch, grad_accumulation=accumulation, epochs=10, learning_rate=1e-2)
        prepare_finetuner(tmp_path / name, str(trained_run.path), asked)
        written = tmp_path / name / "config.toml"
        written.write_text(re.sub(r"dropout_prob = [0-9.]+", "dropout_prob = 0.0", written.read_text()))
        tuner = prepare_finetuner(tmp_path / name)  # the run as written, before its first step
        runs[name] = (tuner, list(tuner.run()))
    (whole, said), (accumulated, heard) = runs["whole"], runs["accumulated"]
    assert whole.total_steps == accumulated.total_steps == 10 * whole.steps_per_epoch  # ten epochs, ten passes
    assert whole.steps_per_epoch == accumulated.steps_per_epoch
    assert accumulated.config.training.grad_accumulation == 2
    losses = [[r.loss for r in records if isinstance(r, ValidationRecord)] for records in (said, heard)]
    assert losses[0][-1] < 0.9 * losses[0][0]  # it learned
    assert losses[0] == pytest.approx(losses[1], rel=1e-3)
    tests = [next(r for r in records if isinstance(r, TestRecord)) for records in (said, heard)]
    assert tests[0].accuracy == tests[1].accuracy


@pytest.mark.parametrize(
    ("examples", "per_step", "epochs", "steps"),
    [
        (113, 32, 10, (4, 40)),
        (113, 16, 10, (8, 80)),
        (120, 8, 0.5, (15, 8)),
        (10, 16, 3, (1, 3)),
        (70, 10, 0.7, (7, 5)),
    ],
)
def test_epochs_are_whole_passes_each_ending_on_its_short_batch(examples, per_step, epochs, steps):
    """113 examples in steps of 32 take 4 steps an epoch (the last of 17): 10 epochs are 40 steps, not the 36 that
    counting examples alone gives; a fraction of an epoch is rounded up to a whole step, 0.7 × 7 to 5, not 6."""
    assert fine_tuning_steps(examples, per_step, epochs) == steps
