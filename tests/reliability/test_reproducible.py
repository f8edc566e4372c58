"""Scenario 15: the same command run twice, in two processes, trains the same model, byte for byte; a run
without --out lands in the folder the window lists."""

import subprocess
import sys

import pytest

from mlm_studio.core.runs.history import list_runs
from tests.command import mlm_studio as in_this_process


def in_a_process_of_its_own(*args):
    return subprocess.run([sys.executable, "-m", "mlm_studio", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # two fresh interpreters train
def test_two_identical_commands_train_identical_tokenizers_and_weights(tmp_path, corpus_file):
    runs = []
    for name in ("first", "second"):
        out = tmp_path / name
        args = ("--preset", "tiny", "--corpus", str(corpus_file), "--max-steps", "6", "--out", str(out))
        done = in_a_process_of_its_own("train", *args)
        assert done.returncode == 0, done.stderr
        runs.append(out)
    first, second = runs
    assert (first / "tokenizer.json").read_bytes() == (second / "tokenizer.json").read_bytes()
    weights = "checkpoints/step-0000006/model.safetensors"
    assert (first / weights).read_bytes() == (second / weights).read_bytes()
    assert (first / "checkpoints/step-0000006/optimizer.safetensors").read_bytes() == (
        second / "checkpoints/step-0000006/optimizer.safetensors"
    ).read_bytes()


def test_a_terminal_run_without_out_is_listed_in_the_window_runs_folder(tmp_path, corpus_file):
    env = {"MLM_STUDIO_RUNS": str(tmp_path / "runs")}
    done = in_this_process("train", "--preset", "tiny", "--corpus", corpus_file, "--max-steps", "2", env=env)
    assert done.returncode == 0, done.stderr
    [run] = list_runs(tmp_path / "runs")
    assert str(run.path.resolve()) in done.stdout  # the command says where it wrote
