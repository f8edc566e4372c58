"""Shared engine fixtures: the built-in corpus and a small tokenizer trained on it (once per session)."""

import pytest

from mlm_studio.core.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.corpus import load_corpus
from mlm_studio.core.tokenizer import TokenizerConfig, train_tokenizer


@pytest.fixture(scope="session")
def builtin_corpus():
    return load_corpus([ensure_builtin_corpus()])


@pytest.fixture(scope="session")
def tokenizer(builtin_corpus):
    return train_tokenizer(builtin_corpus.iter_documents(), TokenizerConfig(vocab_size=4000), builtin_corpus.documents)


@pytest.fixture(scope="session")
def small_corpus(builtin_corpus, tmp_path_factory):
    """The first 400 documents of the built-in corpus as a file of its own."""
    from itertools import islice

    path = tmp_path_factory.mktemp("small") / "small.txt"
    path.write_text("\n\n".join(islice(builtin_corpus.iter_documents(), 400)), encoding="utf-8")
    return load_corpus([path])


@pytest.fixture(scope="session")
def small_tokenizer(small_corpus):
    return train_tokenizer(small_corpus.iter_documents(), TokenizerConfig(vocab_size=400), small_corpus.documents)
