"""Engine fixtures: a tokenizer trained on the built-in corpus (once per session)."""

import pytest

from mlm_studio.core.tokenizer import TokenizerConfig, train_tokenizer


@pytest.fixture(scope="session")
def tokenizer(builtin_corpus):
    return train_tokenizer(builtin_corpus.iter_documents(), TokenizerConfig(vocab_size=4000), builtin_corpus.documents)
