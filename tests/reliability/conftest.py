"""Fault-injection fixtures: a finished small run to damage, and a payload that proves code never ran."""

import shutil
from pathlib import Path

import pytest

from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config


class Payload:
    """Unpickling this creates `marker`: the side effect a hostile file would have."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory, small_corpus, small_tokenizer):
    """A run of 8 steps with checkpoints at 4 and 8 (copy it before damaging it)."""
    run = start_run(
        tmp_path_factory.mktemp("finished") / "run",
        small_config(max_steps=8, checkpoint_interval=4, learning_rate=5e-3),
        small_corpus,
        small_tokenizer,
    )
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run.path


@pytest.fixture
def run_copy(finished_run, tmp_path):
    return Path(shutil.copytree(finished_run, tmp_path / "run"))
