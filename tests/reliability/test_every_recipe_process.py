"""The faults that need a real process, for every recipe: a second process on a run being trained, Ctrl-C, a kill -9,
a damaged latest checkpoint. Pre-training and fine-tuning go through the same commands' paths and the same loop,
and after each fault the run resumes to exactly the scores of a run that met none."""

import signal
import subprocess
import sys

import pytest

from mlm_studio.core.runs.run_folder import RunDir
from tests.command import mlm_studio
from tests.core.helpers import config_file, two_label_task

RECIPES = ["pre-training", "fine-tuning"]
pytestmark = pytest.mark.slow  # processes are the subject
FINE_TUNING = "--kind classification --epochs 1 --eval-every 5 --patience 100 --batch-size 8 --lr 5e-3 --device cpu"


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, corpus_file):
    folder = tmp_path_factory.mktemp("pretrained")
    done = mlm_studio(
        "train", "--config", config_file(folder, max_steps=4), "--corpus", corpus_file, "--out", folder / "run"
    )
    assert done.returncode == 0, done.stderr
    return folder / "run"


@pytest.fixture(scope="module")
def task_file(tmp_path_factory):
    """600 labelled sentences: 480 to train on, 60 steps of 8 an epoch."""
    return two_label_task(tmp_path_factory.mktemp("task") / "task.csv", 600)


@pytest.fixture(scope="module")
def commands(tmp_path_factory, corpus_file, pretrained, task_file):
    """For a recipe: the command's arguments that start a new run in a folder (a checkpoint every 5 steps, three
    kept), and those that resume it."""
    folder = tmp_path_factory.mktemp("configs")
    config = config_file(folder, max_steps=60, checkpoint_interval=5, eval_interval=20, log_interval=1,
                         keep_checkpoints=3)  # fmt: skip
    started = {
        "pre-training": lambda out: ["train", "--config", config, "--corpus", corpus_file, "--out", out],
        "fine-tuning": lambda out: ["finetune", pretrained, "--task", task_file, "--out", out, *FINE_TUNING.split()],
    }
    resumed = {"pre-training": ["train", "--resume"], "fine-tuning": ["finetune", "--device", "cpu", "--resume"]}
    return lambda recipe, out: [str(a) for a in started[recipe](out)], lambda recipe, run: [*resumed[recipe], str(run)]


def in_a_process(args):
    return subprocess.Popen(
        [sys.executable, "-m", "mlm_studio", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def checkpoints_said(process, count):
    """Read the process's words until it has said `count` checkpoints written; what it said."""
    said, seen = [], 0
    for line in process.stdout:
        said.append(line)
        seen += line.startswith("Checkpoint written")
        if seen == count:
            return said
    raise AssertionError(f"the process ended before {count} checkpoints: {''.join(said)}")


def scores(run):
    """Each evaluation's loss on the held-out examples (validation, and fine-tuning's test) by step: computed from
    the weights alone, so equal only where the weights are. (A logged training loss averages the steps since the last
    record or restart, so a resumed run's first one covers fewer steps.)"""
    held_out = ("eval", "validation", "test")
    return {(r["type"], r["step"]): r["loss"] for r in RunDir(run).read_metrics() if r["type"] in held_out}


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_second_process_ctrl_c_and_kill_9_leave_a_run_that_resumes_to_the_scores_of_one_never_interrupted(
    recipe, commands, tmp_path
):
    start, resume = commands
    reference = mlm_studio(*start(recipe, tmp_path / "reference"))
    assert reference.returncode == 0, reference.stderr
    run = tmp_path / "run"

    first = in_a_process(start(recipe, run))
    try:
        checkpoints_said(first, 1)
        second = mlm_studio(*resume(recipe, run))  # this test's process: another one than the trainer
        assert second.returncode == 1
        assert f"is being trained by process {first.pid}" in second.stderr, second.stderr
        first.send_signal(signal.SIGINT)
        said = first.communicate(timeout=60)[0]
    finally:
        first.kill()
    assert first.returncode == 130, said  # 128 + SIGINT, as a shell reports an interrupted command
    assert "Finished (stopped)" in said, said

    again = in_a_process(resume(recipe, run))
    checkpoints_said(again, 2)
    again.send_signal(signal.SIGKILL)
    again.wait()
    again.stdout.close()

    finished = mlm_studio(*resume(recipe, run))
    assert finished.returncode == 0, finished.stderr
    assert "Finished (completed)" in finished.stdout + finished.stderr
    expected, got = scores(tmp_path / "reference"), scores(run)
    assert len(expected) >= 3 and got.keys() >= expected.keys()  # a stop tests its best weights besides
    assert {key: got[key] for key in expected} == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("recipe", RECIPES)
def test_a_damaged_latest_checkpoint_is_named_nothing_is_written_and_moved_aside_the_run_resumes_before_it(
    recipe, commands, tmp_path
):
    """Pre-training keeps three checkpoints here: the refusal names the one before the damaged one, and the run
    resumes from it once the damaged one is moved aside. Fine-tuning keeps one besides its best weights: the refusal
    says that the run cannot continue and how to run it again."""
    start, resume = commands
    run = tmp_path / "run"
    first = in_a_process(start(recipe, run))
    checkpoints_said(first, 3)
    first.send_signal(signal.SIGKILL)
    first.wait()
    first.stdout.close()
    kept = RunDir(run).checkpoints()
    (kept[-1] / "model.safetensors").write_bytes(b"not a checkpoint")
    metrics = (run / "metrics.jsonl").read_bytes()

    refused = mlm_studio(*resume(recipe, run))
    assert refused.returncode == 1
    assert f"{kept[-1].name}: model.safetensors cannot be read" in refused.stderr, refused.stderr
    assert (run / "metrics.jsonl").read_bytes() == metrics  # nothing written, nothing of the user's removed
    if recipe == "fine-tuning":
        assert len(kept) == 1
        assert "so its run cannot continue: start a new run with the same settings" in refused.stderr
        return
    assert f"to use {kept[-2].name}, the one before it" in refused.stderr
    kept[-1].rename(tmp_path / kept[-1].name)  # as the refusal advises
    resumed = mlm_studio(*resume(recipe, run))
    assert resumed.returncode == 0, resumed.stderr
    assert f"steps {int(kept[-2].name.split('-')[1]):,} → " in resumed.stdout + resumed.stderr
