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


@pytest.fixture(scope="session")
def small_corpus(builtin_corpus, tmp_path_factory):
    """The first 400 documents of the built-in corpus as a file of its own."""
    from itertools import islice

    from mlm_studio.core.corpus import load_corpus

    path = tmp_path_factory.mktemp("small") / "small.txt"
    path.write_text("\n\n".join(islice(builtin_corpus.iter_documents(), 400)), encoding="utf-8")
    return load_corpus([path])


@pytest.fixture(scope="session")
def tiny_tokenizer(small_corpus):
    return train_tokenizer(small_corpus.iter_documents(), TokenizerConfig(vocab_size=400), small_corpus.documents)


@pytest.fixture(scope="session")
def trained_runs(small_corpus, tiny_tokenizer, tmp_path_factory):
    """A folder with two short runs trained on the small corpus."""
    from mlm_studio.core.runs import start_run, training_blocks
    from mlm_studio.core.trainer import Trainer
    from tests.core.helpers import small_config

    root = tmp_path_factory.mktemp("runs")
    for name, steps in (("early", 4), ("late", 40)):
        run = start_run(root / name, small_config(max_steps=steps, learning_rate=5e-3), small_corpus, tiny_tokenizer)
        list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return root
