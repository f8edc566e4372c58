import hashlib
import subprocess
import sys

import pytest

from mlm_studio.core.data import builtin_corpus
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus, iter_builtin_documents
from mlm_studio.core.data.corpus import ReadOptions, load_corpus


def test_built_once_then_cached(monkeypatch):
    path = ensure_builtin_corpus()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    def must_not_rebuild(*args, **kwargs):
        raise AssertionError("the cached corpus was rebuilt")

    monkeypatch.setattr(builtin_corpus, "iter_builtin_documents", must_not_rebuild)
    assert ensure_builtin_corpus() == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.mark.slow  # the built-in corpus built again
def test_deterministic_and_identical_to_the_cache():
    cached = ensure_builtin_corpus().read_text(encoding="utf-8")
    assert cached == "".join(doc + "\n\n" for doc in iter_builtin_documents())


def test_is_prose_of_useful_size_and_reads_the_same_in_both_modes():
    path = ensure_builtin_corpus()
    paragraphs = load_corpus([path])
    lines = load_corpus([path], ReadOptions(text_unit="line"))
    assert list(paragraphs.iter_documents()) == list(lines.iter_documents())
    assert paragraphs.documents > 5_000 and paragraphs.words > 150_000
    assert all(length >= builtin_corpus.MIN_WORDS for length in paragraphs.doc_words)
    docs = list(paragraphs.iter_documents())
    assert not any(doc.startswith(">>>") for doc in docs)


@pytest.mark.slow  # the built-in corpus built in a fresh interpreter
def test_builds_without_importing_the_modules_it_reads(tmp_path):
    script = (
        "import sys\n"
        "from mlm_studio.core.data.builtin_corpus import iter_builtin_documents\n"
        "before = set(sys.modules)\n"
        "n = sum(1 for _ in iter_builtin_documents())\n"
        "new = sorted(set(sys.modules) - before)\n"
        "assert 'tkinter' not in new and 'turtle' not in new and 'antigravity' not in new, new\n"
        "assert len(new) < 10, new\n"
        "print(n)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 5_000
