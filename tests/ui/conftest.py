"""Shared UI fixtures: a workspace that already holds the built-in corpus and a tokenizer."""

import pytest

from mlm_studio.core.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.corpus import load_corpus
from mlm_studio.core.tokenizer import TokenizerConfig, train_tokenizer


@pytest.fixture(scope="session")
def builtin_corpus():
    return load_corpus([ensure_builtin_corpus()])


@pytest.fixture(scope="session")
def small_tokenizer(builtin_corpus):
    return train_tokenizer(builtin_corpus.iter_documents(), TokenizerConfig(vocab_size=3000), builtin_corpus.documents)


@pytest.fixture(autouse=True)
def no_task_outlives_its_test():
    """Each test starts with no background task running and leaves none behind."""
    from mlm_studio.ui.tasks import stop_all_tasks

    yield
    assert stop_all_tasks(), "a background task did not stop"
