"""`mlm-studio train --branch RUN --from-step K [--skip-batches A:B] [--set …]`: a branch made, trained, resumed and
exported from the terminal, and every refusal a sentence."""

import pytest

from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training.branch_record import Branch, branch_of
from tests.command import mlm_studio
from tests.core.helpers import config_file


@pytest.fixture(scope="module")
def parent(tmp_path_factory, corpus_file):
    """8 steps from the command line, a checkpoint every 4."""
    folder = tmp_path_factory.mktemp("cli-branch")
    run = folder / "parent"
    done = mlm_studio("train", "--config", config_file(folder), "--corpus", corpus_file, "--out", run)
    assert done.returncode == 0, done.stderr
    return run


def test_a_branch_trains_from_the_step_given_and_resumes_and_exports_as_any_run(parent, tmp_path):
    branch = tmp_path / "branch"
    done = mlm_studio(
        "train", "--branch", parent, "--from-step", 4, "--skip-batches", "4:6", "--learning-rate", "0.0004",
        "--set", "training.warmup_steps=0", "--out", branch,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = "branch: branched from parent at step 4, skipping the 2 batch(es) of steps 5–6, with training.learning_rate"
    assert said in done.stderr and "steps 4 → 8" in done.stdout and "Finished (completed) at step 8" in done.stdout
    assert "Corpus:" not in done.stderr  # the parent's corpus, not read anew
    changes = "training.learning_rate: 0.001 → 0.0004; training.warmup_steps: 2 → 0"
    assert branch_of(RunDir(branch)) == Branch(parent.resolve(), 4, range(4, 6), changes)
    resumed = mlm_studio("train", "--resume", branch, "--max-steps", 10)
    assert resumed.returncode == 0, resumed.stderr
    assert "steps 8 → 10" in resumed.stdout and RunDir(branch).latest_checkpoint().name == "step-0000010"
    exported = mlm_studio("export", branch, tmp_path / "hf")
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "hf" / "model.safetensors").is_file()


@pytest.mark.parametrize(
    ("options", "code", "sentence"),
    [
        (["--from-step", 5], 1, "cannot branch from parent at step 5: no checkpoint of that step; it has checkpoints "
         "at steps 4, 8"),
        (["--from-step", 4, "--skip-batches", "6:5"], 1, "it is reversed: give A:B with A below B"),
        (["--from-step", 4, "--skip-batches", "six"], 2, "argument --skip-batches: 'six' is not A:B"),
        (["--from-step", 4, "--corpus", "x.txt"], 1, "leave out --corpus"),
        ([], 1, "--branch needs --from-step"),
    ],
)  # fmt: skip
def test_a_branch_that_cannot_be_is_one_sentence_and_writes_nothing(parent, tmp_path, options, code, sentence):
    done = mlm_studio("train", "--branch", parent, *options, "--out", tmp_path / "branch")
    assert done.returncode == code and sentence in done.stderr, done.stderr
    assert not (tmp_path / "branch").exists()


def test_from_step_without_branch_is_refused(tmp_path):
    done = mlm_studio("train", "--from-step", 4, "--out", tmp_path / "run")
    assert done.returncode == 1 and "--from-step and --skip-batches go with --branch RUN_DIR" in done.stderr
