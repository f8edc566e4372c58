"""`mlm-studio train --init-from` as a subprocess: the continuation recipe by default, said at start; a --set
value or a configuration file's own field wins."""

from itertools import islice

import pytest

from mlm_studio.core.config.run_config import RunConfig
from tests.command import mlm_studio
from tests.core.family_folders import make_folder
from tests.core.helpers import config_file


@pytest.fixture(scope="module")
def published(small_corpus, tmp_path_factory):
    """A BERT `transformers` made (3 layers × 48), as a published model's folder."""
    return make_folder("bert", list(islice(small_corpus.iter_documents(), 300)), tmp_path_factory.mktemp("bert"))


def train(*args: str):
    done = mlm_studio("train", *args, "--max-steps", "2", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_continuing_takes_the_recipe_unless_the_user_set_it(published, corpus_file, tmp_path):
    small = ["--corpus", str(corpus_file), "--max_seq_length", "32", "--per_device_train_batch_size", "4"]
    done = train("--init-from", str(published), *small, "--out", str(tmp_path / "default"))
    said = (
        "Continuing an imported model: learning rate 3e-05 with 0 warm-up steps (capped at 10% of the run's 2 steps, "
        "so that the rate reaches its peak), the continuation recipe"
    )
    assert said in done.stderr and "Finished (completed) at step 2" in done.stdout
    training = RunConfig.load(tmp_path / "default" / "config.toml").training
    assert (training.learning_rate, training.warmup_steps) == (3e-5, 0)

    done = train("--init-from", str(published), *small, "--out", str(tmp_path / "set"), "--set",
                 "training.learning_rate=3e-4")  # fmt: skip
    assert (
        "Continuing an imported model: 0 warm-up steps (capped at 10% of the run's 2 steps, so that the rate reaches "
        "its peak), the continuation recipe" in done.stderr
    )
    assert "used as set: training.learning_rate 0.0003 (yours)." in done.stderr and "3e-05" not in done.stderr
    training = RunConfig.load(tmp_path / "set" / "config.toml").training
    assert (training.learning_rate, training.warmup_steps) == (3e-4, 0)

    mine = config_file(tmp_path, learning_rate=5e-3)  # a whole configuration, as the window saves one
    done = train("--init-from", str(published), "--config", str(mine), "--corpus", str(corpus_file), "--out",
                 str(tmp_path / "file"))  # fmt: skip
    assert "Continuing an imported model" not in done.stderr
    training = RunConfig.load(tmp_path / "file" / "config.toml").training
    assert (training.learning_rate, training.warmup_steps) == (5e-3, 2)
