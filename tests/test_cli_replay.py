"""`mlm-studio replay`: a run trained by the command line replayed step by step, its loss the one the trainer
measured; what cannot be replayed said in one sentence."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from mlm_studio.core.storage.step_file import STEPS_FILE, read_steps
from tests.command import mlm_studio
from tests.core.helpers import config_file


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, corpus_file):
    folder = tmp_path_factory.mktemp("replay")
    config = config_file(folder, max_steps=6, checkpoint_interval=2, keep_checkpoints=5, log_interval=3)
    done = mlm_studio("train", "--config", config, "--corpus", corpus_file, "--out", folder / "run")
    assert done.returncode == 0, done.stderr
    return folder / "run"


def test_the_json_replay_is_the_step_the_trainer_measured(run_dir):
    done = mlm_studio("replay", run_dir, "--step", "5", "--json")
    assert done.returncode == 0, done.stderr
    replay = json.loads(done.stdout)
    measured = read_steps(run_dir, "run").at(5)[0]  # step 5 was not logged (log_interval 3): steps.tsv has it
    assert (replay["checkpoint"], replay["checkpoint_step"], replay["exact"]) == ("step-0000004", 4, True)
    assert replay["loss"] == pytest.approx(measured, rel=1e-4) and replay["measured_loss"] == measured
    sums = [s["loss_sum"] for s in replay["sequences"]]
    assert sums == sorted(sums, reverse=True) and len(sums) == 8
    masked = [t for s in replay["sequences"] for t in s["tokens"] if t["kind"] != "untouched"]
    assert len(masked) == replay["masked_tokens"] and all(len(t["candidates"]) == 5 for t in masked)
    assert sum(t["loss"] for t in masked) == pytest.approx(replay["loss"] * replay["masked_tokens"], rel=1e-5)


def test_the_text_names_the_checkpoint_and_the_worst_sequences_first(run_dir):
    done = mlm_studio("replay", run_dir, "--step", "4", "--sequences", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Step 4, scored with step-0000002, 1 step(s) older than the weights step 4 read."
    assert lines[1].startswith("Loss ") and "; the trainer measured " in lines[1]
    assert lines[2] == "The 2 sequences that carried most of it:"
    shares = [float(line.split(": ")[1].split("%")[0]) for line in lines if line[:2] in ("1.", "2.")]
    assert len(shares) == 2 and shares[0] >= shares[1] > 0
    assert "[" in lines[4] and "the model's candidates" in lines[5]


@pytest.mark.parametrize(
    ("step", "said"),
    [
        ("7", "mlm-studio: step 7 is not a step of run, which has trained 6 step(s); give a step from 1 to 6\n"),
        ("0", "mlm-studio: step 0 is not a step of run, which has trained 6 step(s); give a step from 1 to 6\n"),
    ],
)
def test_a_step_beyond_the_run_is_refused_in_a_sentence(run_dir, step, said):
    done = mlm_studio("replay", run_dir, "--step", step)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", said)


def test_a_folder_that_is_not_a_run_is_refused(tmp_path):
    done = mlm_studio("replay", tmp_path, "--step", "1")
    assert (
        done.returncode == 1 and done.stderr == f"mlm-studio: {tmp_path} is not a run folder (it has no config.toml)\n"
    )


def test_a_damaged_steps_file_is_warned_of_and_the_replay_goes_on(run_dir, tmp_path):
    run = shutil.copytree(run_dir, tmp_path / "run")
    (run / STEPS_FILE).write_text("step\tloss\tgrad_norm\n1\t5.0\t1.0\nbroken line\n", encoding="utf-8")
    done = mlm_studio("replay", run, "--step", "3", "--json")
    assert done.returncode == 0
    assert done.stderr == (
        "mlm-studio: warning: run run: steps.tsv is damaged at line 3 (not a step, a loss and a gradient norm); "
        "move it aside and the run's next steps begin a new one\n"
    )
    assert json.loads(done.stdout)["measured_loss"] is None


def test_the_installed_command_replays(run_dir):
    done = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "replay", str(run_dir), "--step", "3", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["exact"] is True
