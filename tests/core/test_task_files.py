"""A labelled task file is read as a corpus is: every table format, compressed or not, in any encoding the corpus
reads, with its bad lines reported by number and the rest kept."""

import codecs
import gzip
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from mlm_studio.core.config.sections import ModelConfig, TokenizerConfig
from mlm_studio.core.data.formats import TABLE_KINDS, TABLE_SUFFIXES, kind_of
from mlm_studio.core.data.labelled import TaskError, read_labelled_file
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.evaluation.task_probe import probe_task, read_task
from mlm_studio.core.models.build import build_model

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
    task = read_task(path)
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
        task = read_task(tmp_path / name, "body", "stars")
        assert (task.texts, task.labels) == (TEXTS, ["5", "1", "5", "1"]), name


def test_a_tagging_task_reads_its_tokens_and_tags_from_parquet_lists(tmp_path):
    words, tags = [["Chopin", "left", "Warsaw"], ["Paris"]], [["B-PER", "O", "B-LOC"], ["B-LOC"]]
    pq.write_table(pa.table({"tokens": words, "tags": tags}), tmp_path / "ner.parquet", row_group_size=1)
    examples = read_labelled_file(tmp_path / "ner.parquet", "tokens").examples
    assert [(list(e.inputs), list(e.labels)) for e in examples] == list(zip(words, tags))


def test_malformed_lines_are_reported_by_number_and_the_rest_is_used(tmp_path):
    rows = csv_text().splitlines()
    rows[2:2] = ["only a text", "   ,blank texts are passed over", "another text without its label"]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    task = read_task(tmp_path / "t.csv")
    assert (task.texts, task.labels) == (TEXTS, LABELS)
    assert [str(issue) for issue in task.report.issues] == [
        "line 3: row has no 'label' value (1 of 2 fields)",
        "line 4: an empty text",
        "line 5: row has no 'label' value (1 of 2 fields)",
    ]

    lines = jsonl_text().splitlines()
    lines[1:1] = [
        "{broken",
        json.dumps({"text": "no label here"}),
        json.dumps({"text": 7, "label": "river"}),
        json.dumps({"text": "listed", "label": [0.5]}),
    ]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    task = read_task(tmp_path / "t.jsonl")
    assert (task.texts, task.labels) == (TEXTS, LABELS)
    assert [str(issue) for issue in task.report.issues] == [
        "line 2: invalid JSON (Expecting property name enclosed in double quotes)",
        "line 3: no field 'label' (fields: text)",
        "line 4: field 'text' is not a string",
        "line 5: field 'label' is not a string or a number",
    ]
    assert task.report.noteworthy and "4 problem line(s) not used:" in task.report.describe()


def test_a_legacy_encoding_is_read_and_said(tmp_path):
    (tmp_path / "legacy.csv").write_bytes(csv_text().encode("cp1252"))
    task = read_task(tmp_path / "legacy.csv")
    assert (task.texts, task.labels) == (TEXTS, LABELS)
    assert task.report.encoding == "cp1252" and task.report.encoding_note.endswith("read as cp1252")


def test_a_missing_label_column_is_named_with_the_columns_found(tmp_path):
    (tmp_path / "t.csv").write_text(csv_text())
    with pytest.raises(TaskError, match=r"^t.csv: no column 'category' \(columns: text, label\)$"):
        read_task(tmp_path / "t.csv", label_column="category")
    pq.write_table(pa.table({"text": TEXTS, "label": LABELS}), tmp_path / "t.parquet")
    with pytest.raises(TaskError, match=r"^t.parquet: no column 'category' \(columns: text, label\)$"):
        read_task(tmp_path / "t.parquet", label_column="category")
    (tmp_path / "t.jsonl").write_text(jsonl_text(), encoding="utf-8")
    with pytest.raises(TaskError, match=r"no usable rows \(4 problem lines, first: line 1: no field 'category' "):
        read_task(tmp_path / "t.jsonl", label_column="category")


def test_files_without_columns_or_without_text_are_refused_clearly(tmp_path):
    (tmp_path / "notes.txt").write_text("plain text has no columns\n")
    with pytest.raises(
        TaskError, match=r"^notes.txt: a labelled file for classification is \.jsonl, \.csv, \.tsv \(each also"
    ):
        read_task(tmp_path / "notes.txt")
    (tmp_path / "cut.csv.gz").write_bytes(gzip.compress(csv_text().encode() * 40)[:-30])
    with pytest.raises(TaskError, match=r"^cut\.csv\.gz: damaged or cut short compressed data"):
        read_task(tmp_path / "cut.csv.gz")
    with pytest.raises(TaskError, match=r"gone\.csv: no such file$"):
        read_task(tmp_path / "gone.csv")
    (tmp_path / "t.csv").write_text(csv_text())
    with pytest.raises(TaskError, match=r"^t\.csv: the text and label columns must differ, not both 'label'$"):
        read_task(tmp_path / "t.csv", "label", "label")


def test_the_table_suffixes_are_the_corpus_formats_with_columns():
    names = [f"file{suffix}" for suffix in TABLE_SUFFIXES]
    assert {kind_of(Path(n)) for n in names} == set(TABLE_KINDS)
    assert ".csv.zst" in TABLE_SUFFIXES and ".txt" not in TABLE_SUFFIXES and ".md.gz" not in TABLE_SUFFIXES


def test_lines_that_are_not_objects_empty_labels_and_huge_numbers_are_problems_of_their_lines(tmp_path):
    lines = jsonl_text().splitlines()
    lines[1:1] = [
        "[1, 2]",
        "null",
        json.dumps({"text": "no class", "label": ""}),
        json.dumps({"text": "no class either", "label": "   "}),
        '{"text": "a big one", "label": ' + "7" * 5000 + "}",
    ]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    task = read_task(tmp_path / "t.jsonl")
    assert (task.texts, task.labels) == (TEXTS, LABELS)
    assert [str(issue) for issue in task.report.issues] == [
        "line 2: not a JSON object but an array; write one {...} object per line",
        "line 3: not a JSON object but null; write one {...} object per line",
        "line 4: no 'label' value",
        "line 5: no 'label' value",
        f"line 6: a number longer than {sys.get_int_max_str_digits():,} digits",
    ]
    (tmp_path / "t.csv").write_text(csv_text() + "no class,\n")
    assert [str(issue) for issue in read_task(tmp_path / "t.csv").report.issues] == ["line 6: no 'label' value"]


def test_an_upper_case_parquet_suffix_is_read_as_parquet(tmp_path):
    pq.write_table(pa.table({"text": TEXTS, "label": LABELS}), tmp_path / "TOPICS.PARQUET")
    task = read_task(tmp_path / "TOPICS.PARQUET")
    assert (task.texts, task.labels, task.report.kind) == (TEXTS, LABELS, "parquet")


def test_labels_with_a_single_text_are_named_in_a_short_message(tmp_path):
    rows = [{"text": f"text number {i}", "label": f"label-{i}"} for i in range(15_000)]
    (tmp_path / "many.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(TaskError) as refused:
        read_task(tmp_path / "many.jsonl")
    assert str(refused.value) == (
        "many.jsonl: 15,000 of the 15,000 labels have a single text (such as 'label-0', 'label-1', 'label-2'); give "
        "each label at least two"
    )
    rows = [{"text": f"text number {i}", "label": f"label-{i}"} for i in range(50_000)]
    (tmp_path / "more.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    sampled = r"20,000 of the 20,000 labels in a sample of 20,000 of its 50,000 texts have a single text"
    with pytest.raises(TaskError, match=rf"^more.jsonl: {sampled} \(such as 'label-\d+', 'label-\d+', 'label-\d+'\)"):
        read_task(tmp_path / "more.jsonl")


@pytest.fixture(scope="module")
def tiny():
    """A tokenizer and an untrained model small enough to read a few texts at once."""
    tokenizer = train_tokenizer([*TEXTS, "some words"] * 10, TokenizerConfig(vocab_size=120))
    config = ModelConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)  # fmt: skip
    return build_model(config), tokenizer


def test_texts_without_words_and_too_many_labels_for_the_split_are_refused_clearly(tiny):
    model, tokenizer = tiny
    with pytest.raises(TaskError, match=r"^the training texts hold no words for the bag-of-words reference \("):
        probe_task(model, tokenizer, ["!", "?", "-", "!!", ".", "..", "?!", "--"], ["a", "b"] * 4)
    labels = [f"label-{i // 2}" for i in range(40)]
    with pytest.raises(TaskError, match=r"^20 labels for 40 texts: the test split \(10 texts\) cannot hold one text"):
        probe_task(model, tokenizer, [f"text {i}" for i in range(40)], labels)


ANY_CHARACTER = st.characters(exclude_categories=())  # lone surrogates too, as JSON escapes
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_CHARACTER, max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["text", "label", "x"]), inner),
    max_leaves=6,
)


ROW_LIKE = st.fixed_dictionaries({"text": st.text(ANY_CHARACTER, max_size=12), "label": st.sampled_from(["a", 1, ""])})


@settings(max_examples=150, deadline=None)
@given(st.lists(ROW_LIKE | JSON_VALUES, min_size=1, max_size=8))
def test_any_json_value_on_a_task_line_is_read_or_refused_clearly(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("any") / "task.jsonl"
    path.write_text("".join(json.dumps(value) + "\n" for value in values), encoding="utf-8")
    try:
        task = read_task(path)
    except TaskError as exc:
        assert str(exc).startswith("task.jsonl")
    else:
        assert len(task.texts) == len(task.labels) >= 2 and all(task.texts) and all(task.labels)
        assert all(text.encode() for text in task.texts)  # text a tokenizer takes: no lone surrogate
        assert task.report.documents + task.report.issue_count <= len(values)


TOPICS = {
    "river": "water bank flow stream boat fish shore rain".split(),
    "money": "coin price loan cash debt rate fund bill".split(),
    "music": "song drum tune band note choir piano bass".split(),
    "sport": "goal ball team race match coach score pitch".split(),
}


def test_same_label_neighbours_are_scored_beside_the_probe_high_when_separable_and_at_chance_when_shuffled():
    """Four topics of eight words each, 60 texts of each: the held-out texts' nearest training texts share their
    label, by the model's vectors and by the bag of words; with the labels shuffled, as often as chance says
    (1 in 4 at rank 1, 1 - 0.75⁵ ≈ 76% among five, MRR ≈ (p / (1 - p))·ln(1 / p) ≈ 0.46 for p = 1/4)."""
    import random

    import numpy as np
    import torch

    rng = random.Random(0)
    texts = [" ".join(rng.choices(words, k=8)) for words in TOPICS.values() for _ in range(60)]
    labels = [label for label in TOPICS for _ in range(60)]
    tokenizer = train_tokenizer(texts, TokenizerConfig(vocab_size=200))
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)  # fmt: skip
    model = build_model(config)
    separable = probe_task(model, tokenizer, texts, labels)
    assert separable.recall_at_1 >= 0.95 and separable.recall_at_5 >= separable.recall_at_1 and separable.mrr >= 0.95
    assert separable.bag_of_words_recall_at_1 >= 0.95 and separable.bag_of_words_mrr >= 0.95
    shuffled = probe_task(model, tokenizer, texts, list(np.random.default_rng(0).permutation(labels)))
    tolerance = 0.15  # 60 held-out texts: about 2.7 standard deviations of a share near 1/4
    for recall_at_1, recall_at_5, mrr in (
        (shuffled.recall_at_1, shuffled.recall_at_5, shuffled.mrr),
        (shuffled.bag_of_words_recall_at_1, shuffled.bag_of_words_recall_at_5, shuffled.bag_of_words_mrr),
    ):
        assert abs(recall_at_1 - 0.25) <= tolerance
        assert abs(recall_at_5 - (1 - 0.75**5)) <= tolerance
        assert abs(mrr - (1 / 3) * np.log(4)) <= tolerance
    assert set(separable.to_json()) >= {"recall_at_1", "recall_at_5", "mrr", "bag_of_words_mrr"}


@pytest.mark.parametrize("arrow_format", ["stream", "file"])
def test_both_arrow_formats_are_read_alike_by_fine_tuning_the_probe_and_search(tmp_path, arrow_format):
    """`datasets.save_to_disk` writes Arrow's streaming format: fine-tuning (finding its columns) once refused it."""
    from mlm_studio.core.data.labelled import read_labelled_file

    table = pa.table({"text": ["a river", "a bank", "the stream", "the loan"], "label": ["r", "m", "r", "m"]})
    path = tmp_path / "data.arrow"
    with pa.OSFile(str(path), "wb") as sink:
        writer = (pa.ipc.new_stream if arrow_format == "stream" else pa.ipc.new_file)(sink, table.schema)
        with writer:
            writer.write_table(table)
    tuned = read_labelled_file(path, "classification")  # its columns found from the file's schema
    probed = read_task(path)
    assert tuned.texts == probed.texts == ["a river", "a bank", "the stream", "the loan"]
    assert tuned.labels == probed.labels == ["r", "m", "r", "m"]


def test_reading_a_big_task_file_reports_how_far_it_is_and_stops_when_cancelled(tmp_path):
    from mlm_studio.core.progress import Cancelled, Progress

    path = tmp_path / "big.csv"
    path.write_text("text,label\n" + "".join(f"text number {i},{'ab'[i % 2]}\n" for i in range(20_000)))
    size = path.stat().st_size

    class Recorded(Progress):
        def __init__(self, cancel_at=None):
            super().__init__()
            self.reports, self.cancel_at = [], cancel_at

        def report(self, done, total, message=""):
            self.reports.append((done, total, message))
            if self.cancel_at is not None and len(self.reports) >= self.cancel_at:
                self.cancel()

    recorded = Recorded()
    assert len(read_task(path, progress=recorded).texts) == 20_000
    done = [d for d, _, _ in recorded.reports]
    assert len(done) == 5 and done == sorted(done) and 0 < done[-1] <= size  # every 4,096 rows
    assert {(total, message) for _, total, message in recorded.reports} == {(size, "Reading big.csv")}
    with pytest.raises(Cancelled):
        read_task(path, progress=Recorded(cancel_at=2))


def test_the_probe_says_each_step_after_reading_the_texts(tiny):
    """What follows the reading (a minute on 20,000 texts) is said step by step, not a silence after 99.8%."""
    from mlm_studio.core.progress import Progress

    class Recorded(Progress):
        def __init__(self):
            super().__init__()
            self.said = []

        def report(self, done, total, message=""):
            self.said.append((message, done, total))

    model, tokenizer = tiny
    recorded = Recorded()
    probe_task(model, tokenizer, [f"text {i} about words" for i in range(40)], ["a", "b"] * 20, progress=recorded)
    assert recorded.said[0][0] == "Reading the texts with the model"
    assert [said for said in recorded.said if said[0] != "Reading the texts with the model"] == [
        ("Fitting a logistic regression on the model's vectors", 0, 3),
        ("Fitting the bag-of-words reference", 1, 3),
        ("Ranking the held-out texts' neighbours", 2, 3),
    ]
