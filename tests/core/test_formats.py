"""Every corpus format reads the same documents, streamed; a damaged file is named and the rest is kept."""

import bz2
import gzip
import json
import lzma
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from mlm_studio.core.data.corpus import CorpusError, ReadOptions, load_corpus
from mlm_studio.core.data.formats import kind_of
from mlm_studio.core.data.rows import MAX_VALUE_CHARS
from mlm_studio.core.storage.json_text import NESTED_TOO_DEEPLY

DOCS = ["The first document, in ASCII.", "Le deuxième, accentué.", "A third\nwith two lines."]
COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress, ".zst": zstandard.compress}


def plain(kind):
    if kind == "txt":
        return "\n\n".join(DOCS) + "\n"
    if kind == "jsonl":
        return "".join(json.dumps({"text": d}) + "\n" for d in DOCS)
    return "id,text\n" + "".join(f'{n},"{d}"\n' for n, d in enumerate(DOCS))


@pytest.mark.parametrize("kind", ["txt", "jsonl", "csv"])
@pytest.mark.parametrize("compression", ["", *COMPRESS])
def test_every_text_format_compressed_or_not_gives_the_same_documents(tmp_path, kind, compression):
    data = plain(kind).encode()
    path = tmp_path / f"corpus.{kind}{compression}"
    path.write_bytes(COMPRESS[compression](data) if compression else data)
    corpus = load_corpus([path])
    assert list(corpus.iter_documents()) == DOCS and corpus.sources[0].loaded


def test_parquet_and_arrow_read_the_text_column_and_name_bad_rows(tmp_path):
    table = pa.table({"id": [1, 2, 3, 4], "text": [DOCS[0], None, DOCS[1], DOCS[2]]})
    pq.write_table(table, tmp_path / "shard-0.parquet", row_group_size=2)
    with pa.OSFile(str(tmp_path / "data-00000-of-00001.arrow"), "wb") as sink:  # as datasets.save_to_disk writes
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    corpus = load_corpus([tmp_path])
    assert [s.path.name for s in corpus.loaded_sources] == ["data-00000-of-00001.arrow", "shard-0.parquet"]
    assert list(corpus.iter_documents()) == DOCS + DOCS
    assert [str(issue) for issue in corpus.sources[1].issues] == ["row 2: no 'text' value"]
    with pytest.raises(CorpusError, match=r"shard-0.parquet: no column 'body' \(columns: id, text\)"):
        load_corpus([tmp_path / "shard-0.parquet"], ReadOptions(table_column="body"))


def test_a_damaged_parquet_file_and_a_truncated_gz_are_named_and_the_rest_is_kept(tmp_path):
    pq.write_table(pa.table({"text": DOCS}), tmp_path / "good.parquet")
    damaged = (tmp_path / "good.parquet").read_bytes()
    (tmp_path / "damaged.parquet").write_bytes(damaged[: len(damaged) // 2])
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(plain("jsonl").encode() * 50)[:-40])
    (tmp_path / "notes.txt.zst").write_bytes(zstandard.compress(plain("txt").encode()))
    corpus = load_corpus([tmp_path])
    reasons = {s.path.name: s.reason for s in corpus.sources if not s.loaded}
    assert reasons["damaged.parquet"].startswith("not a readable Parquet file")
    assert reasons["cut.jsonl.gz"].startswith("damaged or cut short compressed data")
    assert sorted(s.path.name for s in corpus.loaded_sources) == ["good.parquet", "notes.txt.zst"]
    assert corpus.documents == 2 * len(DOCS)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.txt", "text"),
        ("a.md.xz", "text"),
        ("a.jsonl.gz", "jsonl"),
        ("a.tsv.bz2", "tsv"),
        ("a.parquet", "parquet"),
        ("a.arrow", "arrow"),
        ("a.parquet.gz", None),
        ("a.gz", None),
        ("a.pdf", None),
        ("archive.tar.gz", None),
    ],
)
def test_the_format_comes_from_the_name(tmp_path, name, kind):
    assert kind_of(tmp_path / name) == kind


def test_a_truncated_or_damaged_zst_is_named_as_such_and_a_multi_frame_one_is_read_whole(tmp_path):
    whole = zstandard.compress(plain("jsonl").encode() * 50)
    (tmp_path / "cut.jsonl.zst").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "damaged.jsonl.zst").write_bytes(whole[:12] + bytes(range(256)) * 4)
    (tmp_path / "frames.txt.zst").write_bytes(b"".join(zstandard.compress(f"{doc}\n\n".encode()) for doc in DOCS))
    corpus = load_corpus([tmp_path])
    reasons = {s.path.name: s.reason for s in corpus.sources if not s.loaded}
    assert reasons["cut.jsonl.zst"] == (
        "damaged or cut short compressed data (the data ends inside a frame: the file was cut short); compress the "
        "file again from its original, or leave it out"
    )
    assert reasons["damaged.jsonl.zst"].startswith("damaged or cut short compressed data (")
    assert list(corpus.iter_documents()) == DOCS  # every frame of frames.txt.zst, not the first alone


@pytest.mark.parametrize("unit", ["line", "paragraph"])
def test_a_text_line_longer_than_the_bound_is_split_after_a_space_into_documents(tmp_path, unit):
    words = MAX_VALUE_CHARS // 5 + 1000  # "word " each: a line of more than MAX_VALUE_CHARS characters
    path = tmp_path / "long.txt.gz"
    path.write_bytes(gzip.compress(("word " * words + "\nlast line\n").encode(), 1))
    corpus = load_corpus([path], ReadOptions(text_unit=unit))
    documents = list(corpus.iter_documents())
    if unit == "paragraph":
        documents[-1:] = documents[-1].split("\n")  # the last piece and the line after it form one paragraph
    assert [len(d) <= MAX_VALUE_CHARS for d in documents] == [True] * len(documents)
    assert [d.count("word") * 5 - 1 for d in documents[:-1]] == [len(d) for d in documents[:-1]]  # no word cut
    assert sum(d.count("word") for d in documents) == words and documents[-1] == "last line"
    assert corpus.words == words + 2


def test_table_lines_longer_than_the_bound_are_problems_of_their_line_numbers(tmp_path):
    long = "x" * (MAX_VALUE_CHARS + 10)
    lines = [json.dumps({"text": "first"}), json.dumps({"text": long}), "{broken", json.dumps({"text": "fourth"})]
    (tmp_path / "rows.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "rows.csv").write_text(f"text\nfirst\n{long}\nfourth\n")
    corpus = load_corpus([tmp_path / "rows.jsonl"])
    assert list(corpus.iter_documents()) == ["first", "fourth"]
    too_long = f"longer than {MAX_VALUE_CHARS:,} characters"
    assert [str(i) for i in corpus.sources[0].issues] == [
        f"line 2: {too_long}; write one record per line, its text shorter",
        "line 3: invalid JSON (Expecting property name enclosed in double quotes)",
    ]
    corpus = load_corpus([tmp_path / "rows.csv"])
    assert list(corpus.iter_documents()) == ["first", "fourth"]
    assert [str(i) for i in corpus.sources[0].issues] == [f"line 3: {too_long}; split its text over several rows"]


def test_json_lines_are_numbered_as_the_tools_that_count_lines_number_them(tmp_path):
    lines = [json.dumps({"text": "one"}), '{"text": "a stray\rreturn"}', "{broken", json.dumps({"text": "four"})]
    (tmp_path / "cr.jsonl").write_bytes(("\r\n".join(lines) + "\r\n").encode())
    corpus = load_corpus([tmp_path / "cr.jsonl"])
    assert list(corpus.iter_documents()) == ["one", "four"]
    assert [i.line for i in corpus.sources[0].issues] == [2, 3]


def test_json_a_python_int_or_the_stack_cannot_hold_is_a_problem_of_its_line(tmp_path):
    lines = [json.dumps({"text": "fine"}), '{"text": "x", "n": ' + "9" * 5000 + "}", "[" * 100_000]
    (tmp_path / "odd.jsonl").write_text("\n".join(lines) + "\n")
    corpus = load_corpus([tmp_path / "odd.jsonl"])
    assert list(corpus.iter_documents()) == ["fine"]
    assert [str(i) for i in corpus.sources[0].issues] == [
        f"line 2: a number longer than {sys.get_int_max_str_digits():,} digits",
        f"line 3: {NESTED_TOO_DEEPLY}",
    ]


def test_messages_repeat_at_most_80_characters_of_a_value(tmp_path):
    name = "n" * 500
    (tmp_path / "keys.jsonl").write_text(json.dumps({name: 1}) + "\n")
    (tmp_path / "header.csv").write_text(f"{name},other\nx,y\n")
    with pytest.raises(CorpusError) as refused:
        load_corpus([tmp_path])
    message = str(refused.value)
    assert f"line 1: no field 'text' (fields: {'n' * 40}…)" in message
    assert f"no column 'text' (columns: {'n' * 40}…, other)" in message
    assert len(message) < 400


def test_a_column_of_lists_is_refused_without_reading_its_values(tmp_path):
    pq.write_table(pa.table({"text": [["a", "b"], ["c"]]}), tmp_path / "lists.parquet")
    with pytest.raises(CorpusError, match=r"lists.parquet: the column 'text' holds list<element: string>, not text"):
        load_corpus([tmp_path / "lists.parquet"])
