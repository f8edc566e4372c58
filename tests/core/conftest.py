"""Engine fixtures: a tokenizer trained on the built-in corpus (once per session)."""

import pytest
import torch

from mlm_studio.core.config.sections import TokenizerConfig
from mlm_studio.core.data.tokenizer import train_tokenizer


@pytest.fixture(scope="session")
def tokenizer(builtin_corpus):
    return train_tokenizer(builtin_corpus.iter_documents(), TokenizerConfig(vocab_size=4000), builtin_corpus.documents)


@pytest.fixture
def torch_threads():
    """Tests that change PyTorch's thread count give it back."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
