import codecs
import json
import random
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlm_studio.core.data.corpus import (
    COUNT_SLICE,
    SAMPLE_CHARS,
    CorpusError,
    ReadOptions,
    expand_sources,
    load_corpus,
    word_count,
)
from mlm_studio.core.progress import Cancelled, Progress


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))
    return path


def test_text_files_split_by_paragraph_or_line(tmp_path):
    f = write(tmp_path / "a.txt", "first line\nsame paragraph\n\n\n  second paragraph  \n")
    paragraphs = load_corpus([f])
    assert list(paragraphs.iter_documents()) == ["first line\nsame paragraph", "second paragraph"]
    lines = load_corpus([f], ReadOptions(text_unit="line"))
    assert list(lines.iter_documents()) == ["first line", "same paragraph", "second paragraph"]
    assert lines.documents == 3 and lines.words == 6
    assert paragraphs.characters == len("first line\nsame paragraph") + len("second paragraph")


def test_markdown_reads_like_text(tmp_path):
    f = write(tmp_path / "notes.md", "# Title\n\nSome *text* here.\n")
    corpus = load_corpus([f])
    assert corpus.sources[0].kind == "text"
    assert corpus.documents == 2


def test_jsonl_bad_lines_are_counted_with_line_numbers(tmp_path):
    lines = [
        json.dumps({"text": "good one"}),
        "{not json",
        json.dumps({"other": "x"}),
        "",
        json.dumps({"text": 5}),
        json.dumps(["text"]),
        json.dumps({"text": "good two"}),
    ]
    f = write(tmp_path / "d.jsonl", "\n".join(lines) + "\n")
    corpus = load_corpus([f])
    report = corpus.sources[0]
    assert report.loaded and report.documents == 2
    assert report.issue_count == 4
    assert [(i.line, i.message.split(" (")[0]) for i in report.issues] == [
        (2, "invalid JSON"),
        (3, "no field 'text'"),
        (5, "field 'text' is not a string"),
        (6, "not a JSON object but an array; write one {...} object per line"),
    ]
    assert list(corpus.iter_documents()) == ["good one", "good two"]


def test_jsonl_field_is_a_setting(tmp_path):
    f = write(tmp_path / "d.jsonl", json.dumps({"body": "hello there", "text": "ignored"}) + "\n")
    assert list(load_corpus([f], ReadOptions(jsonl_field="body")).iter_documents()) == ["hello there"]


def test_csv_and_tsv_by_column_with_short_rows_reported(tmp_path):
    csv_file = write(tmp_path / "t.csv", 'id,text\n1,"quoted, with comma\nand a newline"\n2\n3,plain\n')
    tsv_file = write(tmp_path / "t.tsv", "text\tlabel\nalpha beta\tx\n")
    corpus = load_corpus([csv_file, tsv_file])
    by_name = {s.path.name: s for s in corpus.sources}
    assert by_name["t.csv"].documents == 2
    assert [(i.line, "no 'text' value" in i.message) for i in by_name["t.csv"].issues] == [(4, True)]
    assert by_name["t.tsv"].documents == 1
    assert "quoted, with comma\nand a newline" in list(corpus.iter_documents())


def test_missing_column_skips_the_file_and_names_the_columns(tmp_path):
    good = write(tmp_path / "good.txt", "some text")
    table = write(tmp_path / "t.csv", "id,body\n1,hello\n")
    corpus = load_corpus([good, table])
    report = next(s for s in corpus.sources if s.path == table)
    assert not report.loaded
    assert report.reason == "no column 'text' (columns: id, body)"
    assert load_corpus([table], ReadOptions(table_column="body")).documents == 1


def test_folders_are_read_recursively_by_extension(tmp_path):
    write(tmp_path / "c" / "a.txt", "one")
    write(tmp_path / "c" / "deep" / "b.md", "two")
    write(tmp_path / "c" / "deep" / "c.jsonl", json.dumps({"text": "three"}))
    write(tmp_path / "c" / "image.png", "not text")
    write(tmp_path / "c" / ".hidden" / "d.txt", "hidden")
    files, skipped = expand_sources([tmp_path / "c", tmp_path / "c" / "a.txt"])
    assert [f.name for f in files] == ["a.txt", "b.md", "c.jsonl"]
    assert skipped == []
    (tmp_path / "empty").mkdir()
    _, skipped = expand_sources([tmp_path / "empty"])
    assert not skipped[0].loaded and "no .txt" in skipped[0].reason


def test_unsupported_and_missing_paths_are_skipped_with_reasons(tmp_path):
    good = write(tmp_path / "ok.txt", "text")
    pdf = write(tmp_path / "paper.pdf", "%PDF")
    corpus = load_corpus([good, pdf, tmp_path / "gone.txt"])
    reasons = {s.path.name: s.reason for s in corpus.sources if not s.loaded}
    assert reasons["paper.pdf"].startswith("unsupported file type '.pdf'")
    assert reasons["gone.txt"] == "file not found"


def test_utf8_bom_is_stripped(tmp_path):
    f = tmp_path / "bom.txt"
    f.write_bytes(codecs.BOM_UTF8 + "café au lait".encode())
    corpus = load_corpus([f])
    assert list(corpus.iter_documents()) == ["café au lait"]
    assert corpus.sources[0].encoding == "utf-8-sig"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_by_bom(tmp_path, encoding):
    bom = codecs.BOM_UTF16_LE if encoding.endswith("le") else codecs.BOM_UTF16_BE
    f = tmp_path / "u16.txt"
    f.write_bytes(bom + "naïve text\n\nsecond".encode(encoding))
    corpus = load_corpus([f])
    assert list(corpus.iter_documents()) == ["naïve text", "second"]
    assert corpus.sources[0].encoding_note == ""


def test_cp1252_fallback_is_reported_with_the_offset(tmp_path):
    head = "plain ascii line\n" * 2000  # the bad byte comes after the first read chunk
    f = tmp_path / "legacy.txt"
    f.write_bytes(head.encode() + "caf\xe9 cr\xe8me".encode("cp1252"))
    corpus = load_corpus([f], ReadOptions(text_unit="line"))
    report = corpus.sources[0]
    assert report.loaded and report.encoding == "cp1252"
    assert report.encoding_note == f"not valid UTF-8 (byte 0xe9 at offset {len(head) + 3}): read as cp1252"
    docs = list(corpus.iter_documents())
    assert docs[-1] == "café crème" and len(docs) == report.documents == 2001
    assert len(corpus.doc_words) == 2001  # the first, failed utf-8 pass left nothing behind


def test_binary_file_is_rejected_by_name(tmp_path):
    good = write(tmp_path / "ok.txt", "text")
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"abc\x00def" * 10)
    corpus = load_corpus([good, binary])
    report = next(s for s in corpus.sources if s.path == binary)
    assert not report.loaded and report.reason.startswith("binary file")


def test_empty_and_whitespace_only_input(tmp_path):
    empty = write(tmp_path / "empty.txt", "")
    blank = write(tmp_path / "blank.txt", "  \n\t\n\n ")
    good = write(tmp_path / "good.txt", "words")
    corpus = load_corpus([empty, blank, good])
    assert {s.path.name: s.reason for s in corpus.sources if not s.loaded} == {
        "empty.txt": "no usable text",
        "blank.txt": "no usable text",
    }
    with pytest.raises(CorpusError, match=r"No usable text.*empty.txt: no usable text"):
        load_corpus([empty, blank])
    with pytest.raises(CorpusError, match=r"no files were given"):
        load_corpus([])


def test_all_bad_jsonl_lines_give_no_usable_text_with_the_first_problem(tmp_path):
    f = write(tmp_path / "bad.jsonl", "{\n[1]\n")
    with pytest.raises(CorpusError, match=r"bad.jsonl: no usable text \(2 problem lines, first: line 1: invalid JSON"):
        load_corpus([f])


@pytest.mark.slow  # a large file read
def test_large_file_is_streamed_not_loaded_whole(tmp_path):
    f = tmp_path / "big.txt"
    line = "the quick brown fox jumps over the lazy dog " * 2 + "\n"
    with open(f, "w") as out:
        for _ in range(200_000):
            out.write(line)
    size = f.stat().st_size  # about 18 MB
    reports = []

    class Recorder(Progress):
        def report(self, done, total, message=""):
            reports.append(done)

    tracemalloc.start()
    corpus = load_corpus([f], ReadOptions(text_unit="line"), Recorder())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert corpus.documents == 200_000
    assert peak < size / 8, f"peak {peak} bytes for a {size}-byte file"
    assert len(set(reports)) > 20 and reports == sorted(reports) and reports[-1] == size


def test_cancel_stops_loading(tmp_path):
    f = write(tmp_path / "a.txt", "line\n" * 10_000)

    class CancelAtFirstReport(Progress):
        def report(self, done, total, message=""):
            self.cancel()

    with pytest.raises(Cancelled):
        load_corpus([f], ReadOptions(text_unit="line"), CancelAtFirstReport())


def test_stats_and_samples_are_consistent_and_deterministic(tmp_path):
    f = write(tmp_path / "a.txt", "\n".join(f"document number {i} " + "w " * (i % 7) for i in range(500)))
    a = load_corpus([f], ReadOptions(text_unit="line"))
    b = load_corpus([f], ReadOptions(text_unit="line"))
    docs = list(a.iter_documents())
    assert a.samples == b.samples and len(a.samples) == 8
    assert set(a.samples) <= set(docs)
    assert a.doc_words.tolist() == [len(d.split()) for d in docs]
    assert a.words == sum(len(d.split()) for d in docs)


@given(st.lists(st.text(min_size=1).filter(lambda s: s.strip()), min_size=1, max_size=20))
def test_jsonl_round_trips_any_text(tmp_path_factory, texts):
    f = tmp_path_factory.mktemp("rt") / "d.jsonl"
    f.write_text("\n".join(json.dumps({"text": t}) for t in texts) + "\n", encoding="utf-8")
    assert list(load_corpus([f]).iter_documents()) == [t.strip() for t in texts]


def test_invalid_options_are_refused_clearly():
    with pytest.raises(ValueError, match=r"text unit must be 'paragraph' or 'line'"):
        ReadOptions(text_unit="sentence")
    with pytest.raises(ValueError, match=r"JSONL field name must not be empty"):
        ReadOptions(jsonl_field=" ")


def test_words_are_counted_as_split_counts_them_across_every_cut():
    rng = random.Random(7)
    pieces = ["word", "é", "語", " ", "\n", "\u3000", "\xa0", "\t", "  "]
    for _ in range(10):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(COUNT_SLICE, 4 * COUNT_SLICE)))
        assert word_count(text) == len(text.split())
    exact = "ab" * COUNT_SLICE  # one word across every cut
    assert word_count(exact) == 1 and word_count(exact + " " + exact) == 2


def test_a_long_documents_words_are_counted_without_holding_them():
    text = "a " * 5_000_000  # str.split would hold five million strings (some 300 MB)
    tracemalloc.start()
    count = word_count(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 5_000_000 and peak < 8 * COUNT_SLICE * 8


def test_a_sample_keeps_the_start_of_a_long_document(tmp_path):
    f = write(tmp_path / "a.txt", "short one\n\n" + "long " * 10_000 + "\n")
    assert [len(s) for s in load_corpus([f]).samples] == [9, SAMPLE_CHARS]


ANY_CHARACTER = st.characters(exclude_categories=())  # lone surrogates too, as JSON escapes
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_CHARACTER, max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["text", "label", "x"]), inner),
    max_leaves=8,
)


def encodable(text: str) -> bool:
    return not any("\ud800" <= c <= "\udfff" for c in text)


@given(st.lists(st.fixed_dictionaries({"text": st.text(ANY_CHARACTER, max_size=20)}) | JSON_VALUES, max_size=6))
def test_any_json_value_on_a_corpus_line_is_read_or_refused_clearly(tmp_path_factory, values):
    f = tmp_path_factory.mktemp("any") / "d.jsonl"
    f.write_text("".join(json.dumps(value) + "\n" for value in values), encoding="utf-8")
    texts = [v["text"].strip() for v in values if isinstance(v, dict) and isinstance(v.get("text"), str)]
    texts = [text for text in texts if encodable(text)]  # a lone surrogate (an escape such as \ud800) is no text
    try:
        corpus = load_corpus([f])
    except CorpusError as exc:
        assert not any(texts) and "d.jsonl: no usable text" in str(exc)
    else:
        assert list(corpus.iter_documents()) == [t for t in texts if t]
