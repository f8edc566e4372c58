"""Scenario 3: SIGKILL at random moments while training and checkpointing, again and again. After every
kill the latest listed checkpoint loads whole, no half-written folder is taken for a checkpoint, and the run
resumes and finishes."""

import os
import random
import signal
import subprocess
import sys

import pytest

from mlm_studio.core.models.bert import BertForMaskedLM
from mlm_studio.core.models.encoder import decay_groups
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import load_optimizer, load_weights, read_state
from tests.command import mlm_studio
from tests.core.helpers import config_file

KILLS = 6
TOTAL_STEPS = 10_000


def train_process(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "mlm_studio", "train", *map(str, args)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )


def check_latest_checkpoint(run: RunDir) -> int:
    """The latest listed checkpoint loads completely; returns its step."""
    latest = run.latest_checkpoint()
    assert latest is not None
    state = read_state(latest)
    model = BertForMaskedLM(run.config.model)
    load_weights(latest, model)
    import torch

    load_optimizer(latest, torch.optim.AdamW(decay_groups(model, 0.01)))
    assert int(latest.name.split("-")[1]) == state["step"]
    for path in run.checkpoints():
        assert (path / "model.safetensors").is_file() and (path / "optimizer.safetensors").is_file()
    run.read_metrics()
    return state["step"]


@pytest.mark.slow
def test_repeated_sigkill_never_leaves_a_broken_latest_checkpoint(tmp_path, corpus_file):
    cfg = config_file(tmp_path, max_steps=TOTAL_STEPS, checkpoint_interval=1, eval_interval=7, keep_checkpoints=2)
    run_path = tmp_path / "run"
    chance = random.Random(7)
    steps_seen = []
    for kill in range(KILLS):
        if kill == 0:
            process = train_process("--config", cfg, "--corpus", corpus_file, "--out", run_path)
        else:
            process = train_process("--resume", run_path)
        # Kill right after a randomly chosen line: after a "step" line the checkpoint of that step is being
        # written; after a "checkpoint" line the next step is running.
        wanted, kind = chance.randint(2, 6), chance.choice(("step ", "checkpoint "))
        seen = 0
        for line in process.stderr:
            seen += line.startswith(kind)
            if seen >= wanted:
                break
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
        steps_seen.append(check_latest_checkpoint(RunDir(run_path)))
    assert steps_seen == sorted(steps_seen) and steps_seen[-1] > steps_seen[0]

    finish = mlm_studio("train", "--resume", run_path, "--max-steps", steps_seen[-1] + 3)
    assert finish.returncode == 0, finish.stderr
    assert f"steps {steps_seen[-1]} → {steps_seen[-1] + 3}" in finish.stdout
    run = RunDir(run_path)
    assert check_latest_checkpoint(run) == steps_seen[-1] + 3
    metric_steps = [r["step"] for r in run.read_metrics() if r["type"] == "step"]
    assert metric_steps == list(range(1, steps_seen[-1] + 4))
