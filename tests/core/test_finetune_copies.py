"""Repeated texts in a task: a split never puts a text's copies on both sides, and files given apart whose
validation or test texts are training texts are said to be scored on what the model trained on."""

import pytest

from mlm_studio.core.data.copies import (
    Copies,
    Split,
    copies_said,
    copy_keys,
    seen_in_training,
    stratified_split,
    text_key,
)
from mlm_studio.core.data.labelled import Example, TaskError
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
    assert copies_said(["task.csv"] * 3, parts) == [
        "task.csv: 43 of its 73 examples repeat the text of another; the split keeps each text's copies on one "
        "side, so no validation or test text is a training text"
    ]


def test_without_copies_the_split_is_the_split_of_single_examples():
    examples = [Example(i, (f"text {i}",), ("a" if i % 3 else "b",)) for i in range(40)]
    assert len(Copies.of(copy_keys(examples))) == 40
    split = Split.of(examples, 0, "classification", copy_keys(examples))
    assert [len(part) for part in split] == [32, 4, 4] and copies_said(["t.csv"] * 3, split) == []


def test_test_texts_that_are_training_texts_are_said_to_be_scored_on_training_data(tmp_path):
    rows = _copied_rows()
    train = _write(tmp_path / "train.csv", rows)
    validation = _write(tmp_path / "validation.csv", [("text 0 about money", "money"), ("new text", "river")])
    seen = [(f"text {i} about {'river' if i % 2 else 'money'}", "river") for i in range(29)]
    test = _write(tmp_path / "test.csv", [*seen, ("unseen", "money")])
    files, _ = read_task("classification", train, validation, test, None)
    parts = files_split(files, 0, "classification")
    assert copies_said(["train.csv", "validation.csv", "test.csv"], parts) == [
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
    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.setup import prepare_finetuner
    from mlm_studio.core.runs.records import TestRecord

    rows = _copied_rows()
    train = _write(tmp_path / "train.csv", rows)
    validation = _write(tmp_path / "validation.csv", [("new text one", "money"), ("new text two", "river")])
    test = _write(tmp_path / "test.csv", [*rows[:9], ("unseen", "money")])
    files, _ = read_task("classification", train, validation, test, None)
    assert files_split(files, 0, "classification").seen_in_training() == 9
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
    from mlm_studio.core.runs.run_folder import RunDir

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


def _wordpiece(tmp_path, lowercase):
    from mlm_studio.core.data.tokenizer import MLMTokenizer
    from mlm_studio.core.data.wordpiece import from_vocab_txt

    vocab = tmp_path / f"vocab-{lowercase}.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "The", "river"]), encoding="utf-8")
    return MLMTokenizer(from_vocab_txt(vocab, lowercase=lowercase))


def _case_variants():
    """12 texts of two labels, each written as typed, in capitals, and with its accents: 36 rows."""
    rows = []
    for i in range(12):
        label = "river" if i % 2 else "money"
        text = f"the café by the river, number {i}"
        rows += [(text, label), (text.upper(), label), (text.replace("e", "é"), label)]
    return [(f'"{text}"', label) for text, label in rows]


@pytest.mark.parametrize("seed", range(3))
def test_texts_an_uncased_tokenizer_reads_alike_are_copies_for_the_split_and_the_count(tmp_path, seed):
    uncased = _wordpiece(tmp_path, lowercase=True)
    assert uncased.normalised("Thé  RIVER") == "the  river"
    files, _ = read_task("classification", _write(tmp_path / "task.csv", _case_variants()), None, None, None)
    parts = files_split(files, seed, "classification", uncased.normalised)
    keys = [{text_key(example, uncased.normalised) for example in part} for part in parts]
    assert not keys[0] & keys[1] and not keys[0] & keys[2] and not keys[1] & keys[2]
    assert sum(len(k) for k in keys) == 12 and [len(part) % 3 for part in parts] == [0, 0, 0]
    assert copies_said(["task.csv"] * 3, parts)[0].startswith(
        "task.csv: 24 of its 36 examples repeat the text of another"
    )


def test_a_cased_tokenizer_keeps_the_and_the_capitalised_apart(tmp_path):
    cased = _wordpiece(tmp_path, lowercase=False)
    assert cased.normalised("The river") == "The river"
    files, _ = read_task("classification", _write(tmp_path / "task.csv", _case_variants()), None, None, None)
    assert len(Copies.of(copy_keys(files[0].examples, cased.normalised))) == 36
    train, uncased = [Example(1, ("The river",), ("a",))], _wordpiece(tmp_path, True).normalised
    lower, spaced = [Example(2, ("the river",), ("a",))], [Example(2, ("the  RIVER",), ("a",))]
    assert seen_in_training(copy_keys(train, cased.normalised), copy_keys(lower, cased.normalised)) == 0
    assert seen_in_training(copy_keys(train, uncased), copy_keys(spaced, uncased)) == 1


def test_a_run_splits_copies_as_its_tokenizer_reads_them_and_an_older_run_keeps_its_split(trained_run, tmp_path):
    import json

    from mlm_studio.core.data.copies import as_written
    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.setup import copies_by, prepare_finetuner
    from mlm_studio.core.runs.run_folder import RunDir

    task = _write(tmp_path / "task.csv", _case_variants())
    options = FinetuneOptions("classification", task, learning_rate=5e-3, epochs=1, batch_size=8, device="cpu")
    tuner = prepare_finetuner(tmp_path / "ft", str(trained_run.path), options)
    assert any(note.startswith("task.csv: 24 of its 36 examples repeat") for note in tuner.data.notes)
    run = RunDir(tmp_path / "ft")
    assert copies_by(run)("THÉ  River") == "the  river"
    older = json.loads((run.path / "task.json").read_text())
    del older["copies_as_read"]
    (run.path / "task.json").write_text(json.dumps(older))
    assert copies_by(RunDir(run.path)) is as_written
