"""Engine fixtures: a tokenizer trained on the built-in corpus and a short trained run (once per session)."""

import pytest
import torch

from mlm_studio.core.config.sections import TokenizerConfig
from mlm_studio.core.data.tokenizer import train_tokenizer


@pytest.fixture(scope="session")
def tokenizer(builtin_corpus):
    return train_tokenizer(builtin_corpus.iter_documents(), TokenizerConfig(vocab_size=4000), builtin_corpus.documents)


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, small_corpus, small_tokenizer):
    """30 steps on the small corpus, with checkpoints and evaluations."""
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer
    from tests.core.helpers import small_config

    run = start_run(
        tmp_path_factory.mktemp("runs") / "run",
        small_config(max_steps=30, learning_rate=5e-3),
        small_corpus,
        small_tokenizer,
    )
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run


@pytest.fixture
def torch_threads():
    """Tests that change PyTorch's thread count give it back."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
