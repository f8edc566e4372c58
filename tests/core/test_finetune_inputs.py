"""Labelled files and options a user gets wrong: quoted headers, lines past the bound on any line, files that are
not files, an empty file, options out of range; each is one sentence naming the file or the option."""

import csv
import json
import os

import pytest

from mlm_studio.core.data.labelled import Columns, TaskError, read_labelled_file
from mlm_studio.core.data.rows import MAX_VALUE_CHARS
from mlm_studio.core.finetune.options import FinetuneOptions, OptionError


def _rows(n):
    return [[f"text number {i}", "yes" if i % 2 else "no"] for i in range(n)]


def test_a_quoted_header_with_a_comma_is_read_as_the_rows_are(tmp_path):
    path = tmp_path / "quoted.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL)
        writer.writerow(["id, as given", "text", "label"])
        writer.writerows([[str(i), text, label] for i, (text, label) in enumerate(_rows(6))])
    file = read_labelled_file(path, "classification")
    assert file.columns == Columns("text", "label")
    assert [e.inputs for e in file.examples[:2]] == [("text number 0",), ("text number 1",)]
    named = read_labelled_file(path, "classification", Columns("id, as given", ""))
    assert named.columns == Columns("id, as given", "label")
    assert named.examples[3].inputs == ("3",)


def test_a_line_past_the_bound_is_left_out_and_a_header_past_it_is_named(tmp_path):
    long_row = tmp_path / "long_row.csv"
    with open(long_row, "w", encoding="utf-8") as f:
        f.write("text,label\n" + "x" * (MAX_VALUE_CHARS + 10) + ",yes\n")
        f.writelines(f"{text},{label}\n" for text, label in _rows(4))
    file = read_labelled_file(long_row, "classification")
    assert len(file.examples) == 4 and [e.row for e in file.examples] == [3, 4, 5, 6]
    assert file.skipped == (
        "1 problem lines, first: line 2: longer than 16,777,216 characters; split its text over several rows"
    )
    long_header = tmp_path / "long_header.csv"
    long_header.write_text("t" * (MAX_VALUE_CHARS + 10) + ",label\na,yes\n", encoding="utf-8")
    with pytest.raises(TaskError, match=r"^long_header.csv: its first line is longer than 16,777,216 characters"):
        read_labelled_file(long_header, "classification")


def test_what_is_not_a_labelled_file_is_named(tmp_path):
    (tmp_path / "zero.csv").symlink_to(os.devnull)
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "empty.csv").write_bytes(b"")
    for name, sentence in [
        ("zero.csv", "not a regular file (a device or a pipe); give a labelled file"),
        ("folder.csv", "a folder, not a labelled file; give the file itself"),
        ("empty.csv", "the file is empty; give a file with a header line and labelled rows"),
        ("missing.csv", "no such file"),
    ]:
        with pytest.raises(TaskError) as caught:
            read_labelled_file(tmp_path / name, "classification")
        assert str(caught.value) == f"{tmp_path / name}: {sentence}"


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("learning_rate", 5.0, "more than 0 and less than 1"),
        ("learning_rate", float("nan"), "more than 0 and less than 1"),
        ("epochs", 0.0, "more than 0 and at most 1,000,000"),
        ("batch_size", 0, "between 1 and 65,536"),
        ("warmup_share", 1.5, "a share of the steps between 0 and 1"),
        ("patience", 0, "at least 1"),
        ("max_length", 3, "0 (as many as the model reads) or between 8 and 8,192"),
        ("seed", -1, "between 0 and 4,294,967,295"),
    ],
)
def test_an_option_out_of_range_names_its_field(tmp_path, field, value, rule):
    with pytest.raises(OptionError) as caught:
        FinetuneOptions("classification", tmp_path / "t.csv", **{field: value})
    assert (caught.value.field, caught.value.rule) == (field, rule)
    assert caught.value.sentence("--x") == f"--x must be {rule}, not {value}"


def test_labels_of_numbers_and_booleans_are_read_as_text_and_nulls_left_out(tmp_path):
    """true is the class "true" as JSON writes it; 1 and 1.0 are one class, as a CSV file's "1"."""
    path = tmp_path / "typed.jsonl"
    values = [1, 2, True, False, None, 1.5, 1.0, float("nan")]
    path.write_text("\n".join(json.dumps({"text": f"text {i}", "label": v}) for i, v in enumerate(values)) + "\n")
    file = read_labelled_file(path, "classification")
    assert [(e.row, e.labels[0]) for e in file.examples] == [
        (1, "1"), (2, "2"), (3, "true"), (4, "false"), (6, "1.5"), (7, "1")
    ]  # fmt: skip
    assert file.skipped.startswith("2 problem lines, first: line 5: ")
    assert "line 8: the label nan is not a finite number" in [str(issue) for issue in file.issues.kept]
    nulls = tmp_path / "nulls.jsonl"
    nulls.write_text('{"text": "a", "label": null}\n' * 3)
    with pytest.raises(TaskError, match=r"^nulls.jsonl has no usable rows \(3 problem lines, first: line 1: no"):
        read_labelled_file(nulls, "classification")
