"""What the Corpus panel says of a corpus, read from real files without a window: each source's row, the warning a
load ends with, and the length histogram whose last bar holds the longest 1%."""

import numpy as np

from mlm_studio.core.data.builtin_corpus import builtin_corpus_location
from mlm_studio.core.data.corpus import SourceReport, load_corpus
from mlm_studio.ui.panels.corpus.report import (
    BUILTIN_LABEL,
    COLUMNS,
    ISSUES_SHOWN,
    length_histogram,
    loading_warning,
    source_details,
    source_row,
)


def test_a_loaded_source_reads_as_its_row(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("alpha beta\n\ngamma delta epsilon", encoding="utf-8")
    report = load_corpus([path]).sources[0]
    row = source_row(report)
    assert len(row) == len(COLUMNS)
    assert row == ("notes.txt", report.kind, "loaded", "2", "5", report.encoding, "")


def test_the_builtin_corpus_is_named_as_such_and_a_count_keeps_its_thousands():
    report = SourceReport(path=builtin_corpus_location(), kind="text", loaded=True, documents=12345, words=1234567)
    row = source_row(report)
    assert row[0] == BUILTIN_LABEL and row[3:5] == ("12,345", "1,234,567")


def test_a_load_with_nothing_wrong_says_nothing(tmp_path):
    path = tmp_path / "fine.txt"
    path.write_text("one two three", encoding="utf-8")
    assert loading_warning(load_corpus([path])) == ""


def test_skipped_sources_and_problem_lines_are_said_in_one_warning(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text('{"text": "one two"}\n{not json\n{"text": "three four"}\n', encoding="utf-8")
    missing = tmp_path / "missing.txt"
    corpus = load_corpus([good, missing])
    warning = loading_warning(corpus)
    assert warning.startswith("1 source(s) skipped: missing.txt (")
    assert warning.endswith(". 1 problem line(s) were not used — select a source to see which.")
    details = source_details(corpus.sources[0])
    assert details.splitlines()[:2] == [str(good), "loaded"] and "line 2" in details


def test_the_details_show_at_most_the_first_problem_lines(tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(['{"text": "fine"}'] + ["{broken"] * (ISSUES_SHOWN + 5)), encoding="utf-8")
    details = source_details(load_corpus([path]).sources[0]).splitlines()
    assert details[-1] == "  … and 5 more" and sum(line.startswith("  line") for line in details) == ISSUES_SHOWN


def test_lengths_past_the_99th_percentile_share_the_last_bar():
    lengths = np.array([*range(1, 101), *range(1, 101), 10_000], dtype=np.uint32)
    histogram = length_histogram(lengths)
    assert histogram.upper == 100 and histogram.clipped and len(histogram.counts) == 40
    assert histogram.counts.sum() == 201 and histogram.edges[0] == 1 and histogram.edges[-1] == 100
    assert histogram.counts[-1] == 7  # 98, 99 and 100 twice each, and 10,000 counted as 100


def test_lengths_all_within_the_percentile_are_not_clipped():
    histogram = length_histogram(np.full(10, 7, dtype=np.uint32))
    assert (
        histogram.upper == 7 and not histogram.clipped and histogram.counts.sum() == 10 and len(histogram.counts) == 7
    )


def test_no_documents_make_one_empty_bar():
    histogram = length_histogram(np.zeros(0, dtype=np.uint32))
    assert histogram.upper == 1 and not histogram.clipped and list(histogram.counts) == [0]
