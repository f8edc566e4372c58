"""What the main window's status bar says, without a window: the corpus in numbers, the current run and what its
trainer is doing, the memory the process holds."""

import sys

import pytest

from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.ui.widgets.status_lines import NO_CORPUS, corpus_line, memory_line, resident_memory_bytes, run_line


def test_a_corpus_is_said_in_documents_and_words_with_their_thousands(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("\n\n".join(["one two three"] * 1200), encoding="utf-8")
    assert corpus_line(load_corpus([path])) == "Corpus: 1,200 documents, 3,600 words"
    assert corpus_line(None) == NO_CORPUS


def test_the_run_is_named_with_what_its_trainer_does_unless_idle():
    assert run_line(None) == "Current run: none"
    assert run_line("20260101-120000") == "Current run: 20260101-120000"
    assert run_line("20260101-120000", "paused") == "Current run: 20260101-120000 (paused)"


def test_memory_is_said_in_mebibytes_and_not_at_all_when_unknown():
    assert memory_line(3 * 2**20 + 2**19) == "Memory: 4 MiB"  # rounded half to even: 3.5 reads as 4
    assert memory_line(1536 * 2**20) == "Memory: 1,536 MiB"
    assert memory_line(0) == ""


@pytest.mark.skipif(sys.platform == "win32", reason="Windows does not tell the resident memory cheaply: 0")
def test_this_process_holds_some_memory_and_more_once_it_holds_more():
    before = resident_memory_bytes()
    held = bytearray(64 * 2**20)
    held[::4096] = b"x" * len(held[::4096])  # every page written: resident, not only reserved
    assert before > 2**20 and resident_memory_bytes() >= before + 48 * 2**20
