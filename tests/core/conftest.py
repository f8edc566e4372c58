"""Engine fixtures: a tokenizer trained on the built-in corpus, a short trained run and a tagger fine-tuned from it
(once per session)."""

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


@pytest.fixture(scope="session")
def exported_tagger(trained_run, tmp_path_factory):
    """A tagger fine-tuned from `trained_run` on names of several pieces, and its export folder: four epochs, so
    entities are found but not yet all of them right (groups of every shape come out, and words whose later
    pieces the model tags apart from their first)."""
    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.predict import fine_tuned_at
    from mlm_studio.core.finetune.setup import prepare_finetuner
    from mlm_studio.core.interop.export import export_model
    from tests.core.test_finetune_tokens import write_piece_tagging

    folder = tmp_path_factory.mktemp("tagger")
    task = write_piece_tagging(folder / "tags.jsonl")
    options = FinetuneOptions("tokens", task, learning_rate=5e-3, epochs=4, batch_size=8, device="cpu")
    list(prepare_finetuner(folder / "ft", str(trained_run.path), options).run())
    return fine_tuned_at(folder / "ft"), export_model(folder / "ft", folder / "export")


@pytest.fixture
def torch_threads():
    """Tests that change PyTorch's thread count give it back."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
