"""Repeated texts in a task: a split never puts a text's copies on both sides, and files given apart whose
validation or test texts are training texts are said to be scored on what the model trained on."""

import pytest

from mlm_studio.core.data.labelled import Example, TaskError
from mlm_studio.core.finetune.examples import copies_said, copy_groups, stratified_split, text_key
from mlm_studio.core.finetune.setup import files_split, read_task


def _write(path, rows):
    path.write_text("text,label\n" + "".join(f"{text},{label}\n" for text, label in rows), encoding="utf-8")
    return path


def _copied_rows():
    """30 distinct texts of two labels, each written 1 to 4 times (with its spacing varied): 73 rows."""
    rows = []
    for i in range(30):
        label = "river" if i % 2 else "money"
        rows += [(f"text {i} about {label}" + " " * copy, label) for copy in range(1 + i % 4)]
    return rows


@pytest.mark.parametrize("seed", range(5))
def test_a_split_keeps_every_texts_copies_on_one_side_and_says_so(tmp_path, seed):
    files, _ = read_task("classification", _write(tmp_path / "task.csv", _copied_rows()), None, None, None)
    parts = files_split(files, seed, "classification")
    keys = [{text_key(example) for example in part} for part in parts]
    assert not keys[0] & keys[1] and not keys[0] & keys[2] and not keys[1] & keys[2]
    assert sum(len(part) for part in parts) == 73 and sum(len(k) for k in keys) == 30
    for part in parts[1:]:  # each label held out: 10% of its 15 distinct texts, rounded, at least one
        assert {example.labels[0] for example in part} == {"river", "money"}
    assert copies_said(["task.csv"] * 3, parts, split=True) == [
        "task.csv: 43 of its 73 examples repeat the text of another; the split keeps each text's copies on one "
        "side, so no validation or test text is a training text"
    ]


def test_without_copies_the_split_is_the_split_of_single_examples():
    examples = [Example(i, (f"text {i}",), ("a" if i % 3 else "b",)) for i in range(40)]
    assert [len(group) for group in copy_groups(examples)] == [1] * 40
    parts = tuple([examples[i] for i in part] for part in stratified_split(examples, 0, "classification"))
    assert copies_said(["t.csv"] * 3, parts, split=True) == []


def test_test_texts_that_are_training_texts_are_said_to_be_scored_on_training_data(tmp_path):
    rows = _copied_rows()
    train = _write(tmp_path / "train.csv", rows)
    validation = _write(tmp_path / "validation.csv", [("text 0 about money", "money"), ("new text", "river")])
    seen = [(f"text {i} about {'river' if i % 2 else 'money'}", "river") for i in range(29)]
    test = _write(tmp_path / "test.csv", [*seen, ("unseen", "money")])
    files, _ = read_task("classification", train, validation, test, None)
    parts = files_split(files, 0, "classification")
    assert copies_said(["train.csv", "validation.csv", "test.csv"], parts, split=False) == [
        "validation.csv: 1 of its 2 validation examples have a text that is also in the training file (train.csv): "
        "their validation scores are measured on texts the model trained on, not on unseen ones",
        "test.csv: 29 of its 30 test examples have a text that is also in the training file (train.csv): their test "
        "scores are measured on texts the model trained on, not on unseen ones",
    ]


def test_a_label_with_too_few_distinct_texts_is_refused_counting_texts_not_copies(tmp_path):
    rows = [("same river", "river")] * 5 + [("other river", "river")] + [(f"money {i}", "money") for i in range(6)]
    files, _ = read_task("classification", _write(tmp_path / "task.csv", rows), None, None, None)
    with pytest.raises(TaskError, match=r"the label 'river' has only 2 distinct example\(s\)"):
        files_split(files, 0, "classification")


def test_tagged_sentences_repeated_stay_on_one_side():
    sentences = [Example(i, tuple(f"w{i % 12} x".split()), ("O", "O")) for i in range(48)]  # 12 sentences, 4 times each
    parts = stratified_split(sentences, 3, "tokens")
    keys = [{text_key(sentences[i]) for i in part} for part in parts]
    assert not keys[0] & keys[1] and not keys[0] & keys[2] and not keys[1] & keys[2]
    assert sorted(len(part) for part in parts) == [4, 4, 40]


def test_the_test_record_says_how_many_test_examples_are_training_texts(trained_run, tmp_path):
    from mlm_studio.core.finetune.examples import seen_in_training
    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.setup import prepare_finetuner
    from mlm_studio.core.training.records import TestRecord

    rows = _copied_rows()
    train = _write(tmp_path / "train.csv", rows)
    validation = _write(tmp_path / "validation.csv", [("new text one", "money"), ("new text two", "river")])
    test = _write(tmp_path / "test.csv", [*rows[:9], ("unseen", "money")])
    files, _ = read_task("classification", train, validation, test, None)
    assert seen_in_training(*files_split(files, 0, "classification")[::2]) == 9
    options = FinetuneOptions(
        "classification", train, validation, test, learning_rate=5e-3, epochs=1, batch_size=8, device="cpu"
    )
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), options).run())
    tested = next(r for r in records if isinstance(r, TestRecord))
    assert tested.seen_in_training == 9 and tested.to_dict()["seen_in_training"] == 9
    assert tested.describe().endswith("(9 of the test examples are training texts: not scored on unseen texts)")


def test_a_tasks_files_are_known_by_their_contents_not_their_dates(trained_run, tmp_path):
    import os

    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.setup import prepare_finetuner
    from mlm_studio.core.training.run_folder import RunDir

    task = _write(tmp_path / "task.csv", _copied_rows())
    options = FinetuneOptions("classification", task, learning_rate=5e-3, epochs=1, batch_size=8, device="cpu")
    prepare_finetuner(tmp_path / "ft", str(trained_run.path), options)
    run = RunDir(tmp_path / "ft")
    os.utime(task, (1, 1))  # touched: the same bytes
    assert run.corpus_changes() == []
    stamp = task.stat()
    task.write_text(task.read_text().replace("river", "rivet"))  # other bytes of the same size, its date put back
    os.utime(task, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    [change] = run.corpus_changes()
    assert change.startswith(f"{task.resolve()} has other contents (fingerprint ")
