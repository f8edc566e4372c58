"""A labelled task file is read as a corpus is: every table format, compressed or not, in any encoding the corpus
reads, with its bad lines reported by number and the rest kept."""

import codecs
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from mlm_studio.core.data.formats import TABLE_KINDS, TABLE_SUFFIXES, kind_of
from mlm_studio.core.evaluation.task_probe import TaskError, read_labelled

TEXTS = ["The river flows, muddy.", "Rates rise at the bank.", "Fish swim «upstream».", "Le prêt coûte cher."]
LABELS = ["river", "money", "river", "money"]


def csv_text(delimiter=","):
    quoted = [f'"{t}"' if delimiter in t else t for t in TEXTS]
    return f"text{delimiter}label\n" + "".join(f"{t}{delimiter}{label}\n" for t, label in zip(quoted, LABELS))


def jsonl_text():
    return "".join(
        json.dumps({"text": t, "label": label}, ensure_ascii=False) + "\n" for t, label in zip(TEXTS, LABELS)
    )


WRITERS = {
    "topics.csv.gz": lambda: gzip.compress(csv_text().encode()),
    "topics.TSV": lambda: csv_text("\t").encode(),
    "topics-utf16.csv": lambda: codecs.BOM_UTF16_LE + csv_text().encode("utf-16-le"),
    "topics.jsonl.zst": lambda: zstandard.compress(jsonl_text().encode()),
    "topics.JsonL.GZ": lambda: gzip.compress(jsonl_text().encode()),
}


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_table_format_compressed_or_not_gives_the_same_texts_and_labels(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(WRITERS[name]())
    task = read_labelled(path)
    assert (task.texts, task.labels) == (TEXTS, LABELS)
    assert task.report.loaded and task.report.documents == 4 and task.report.issue_count == 0
    assert task.report.encoding == ("utf-16" if "utf16" in name else "utf-8")


def test_parquet_and_arrow_take_their_columns_and_numeric_labels(tmp_path):
    table = pa.table({"id": [1, 2, 3, 4], "body": TEXTS, "stars": [5, 1, 5, 1]})
    pq.write_table(table, tmp_path / "reviews.parquet", row_group_size=3)
    with pa.OSFile(str(tmp_path / "reviews.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    for name in ("reviews.parquet", "reviews.arrow"):
        task = read_labelled(tmp_path / name, "body", "stars")
        assert (task.texts, task.labels) == (TEXTS, ["5", "1", "5", "1"]), name


def test_malformed_lines_are_reported_by_number_and_the_rest_is_used(tmp_path):
    rows = csv_text().splitlines()
    rows[2:2] = ["only a text", "   ,blank texts are passed over", "another text without its label"]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    task = read_labelled(tmp_path / "t.csv")
    assert (task.texts, task.labels) == (TEXTS, LABELS)
    assert [str(issue) for issue in task.report.issues] == [
        "line 3: row has no 'label' value (1 of 2 fields)",
        "line 5: row has no 'label' value (1 of 2 fields)",
    ]

    lines = jsonl_text().splitlines()
    lines[1:1] = [
        "{broken",
        json.dumps({"text": "no label here"}),
        json.dumps({"text": 7, "label": "river"}),
        json.dumps({"text": "half", "label": 0.5}),
    ]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    task = read_labelled(tmp_path / "t.jsonl")
    assert (task.texts, task.labels) == (TEXTS, LABELS)
    assert [str(issue) for issue in task.report.issues] == [
        "line 2: invalid JSON (Expecting property name enclosed in double quotes)",
        "line 3: no field 'label' (fields: text)",
        "line 4: field 'text' is not a string",
        "line 5: field 'label' is not a string or an integer",
    ]
    assert task.report.noteworthy and "4 problem line(s) not used:" in task.report.describe()


def test_a_legacy_encoding_is_read_and_said(tmp_path):
    (tmp_path / "legacy.csv").write_bytes(csv_text().encode("cp1252"))
    task = read_labelled(tmp_path / "legacy.csv")
    assert (task.texts, task.labels) == (TEXTS, LABELS)
    assert task.report.encoding == "cp1252" and task.report.encoding_note.endswith("read as cp1252")


def test_a_missing_label_column_is_named_with_the_columns_found(tmp_path):
    (tmp_path / "t.csv").write_text(csv_text())
    with pytest.raises(TaskError, match=r"^t.csv: no column 'category' \(columns: text, label\)$"):
        read_labelled(tmp_path / "t.csv", label_column="category")
    pq.write_table(pa.table({"text": TEXTS, "label": LABELS}), tmp_path / "t.parquet")
    with pytest.raises(TaskError, match=r"^t.parquet: no column 'category' \(columns: text, label\)$"):
        read_labelled(tmp_path / "t.parquet", label_column="category")
    (tmp_path / "t.jsonl").write_text(jsonl_text(), encoding="utf-8")
    with pytest.raises(TaskError, match=r"no usable rows \(4 problem lines, first: line 1: no field 'category' "):
        read_labelled(tmp_path / "t.jsonl", label_column="category")


def test_files_without_columns_or_without_text_are_refused_clearly(tmp_path):
    (tmp_path / "notes.txt").write_text("plain text has no columns\n")
    with pytest.raises(TaskError, match=r"notes.txt: a labelled file is \.jsonl, \.csv, \.tsv \(each also"):
        read_labelled(tmp_path / "notes.txt")
    (tmp_path / "cut.csv.gz").write_bytes(gzip.compress(csv_text().encode() * 40)[:-30])
    with pytest.raises(TaskError, match=r"^cut\.csv\.gz: damaged or cut short compressed data"):
        read_labelled(tmp_path / "cut.csv.gz")
    with pytest.raises(TaskError, match=r"^gone\.csv: cannot be read \(No such file"):
        read_labelled(tmp_path / "gone.csv")
    with pytest.raises(TaskError, match="must differ"):
        read_labelled(tmp_path / "gone.csv", "label", "label")


def test_the_table_suffixes_are_the_corpus_formats_with_columns():
    names = [f"file{suffix}" for suffix in TABLE_SUFFIXES]
    assert {kind_of(Path(n)) for n in names} == set(TABLE_KINDS)
    assert ".csv.zst" in TABLE_SUFFIXES and ".txt" not in TABLE_SUFFIXES and ".md.gz" not in TABLE_SUFFIXES
