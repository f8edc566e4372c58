"""TensorBoard events hold what metrics.jsonl holds, under transformers' tag names, without a step twice."""

import shutil
import subprocess
import sys

import pytest

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from mlm_studio.core.storage.run_folder import RunDir
from mlm_studio.core.storage.tensorboard import EVENTS_FOLDER, TAGS
from tests.core.helpers import config_file


def scalars(run: RunDir) -> dict[str, list[tuple[int, float]]]:
    events = EventAccumulator(str(run.path / EVENTS_FOLDER))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def expected(run: RunDir) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for record in run.read_metrics():
        for field, tag in TAGS.get(record["type"], {}).items():
            if field not in record:  # the detection fields: ELECTRA runs' only
                continue
            out.setdefault(tag, []).append((record["step"], pytest.approx(record[field], rel=1e-6)))
    return out


def test_a_run_killed_and_resumed_has_its_events_once_each_equal_to_its_metrics(tmp_path, corpus_file):
    run = tmp_path / "run"
    command = [sys.executable, "-m", "mlm_studio", "train"]
    cfg = config_file(tmp_path, max_steps=6, checkpoint_interval=3, eval_interval=3, log_interval=1)
    done = subprocess.run(
        [*command, "--config", str(cfg), "--corpus", str(corpus_file), "--out", str(run)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and f"TensorBoard events in {run.resolve() / EVENTS_FOLDER}" in done.stdout
    assert scalars(RunDir(run)) == expected(RunDir(run)) and "eval/accuracy" in scalars(RunDir(run))
    # as if killed after step 3's checkpoint: steps 4–6 are in the events but will be trained again
    shutil.rmtree(run / "checkpoints" / "step-0000006")
    done = subprocess.run(
        [*command, "--resume", str(run), "--max-steps", "8"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    got = scalars(RunDir(run))
    assert got == expected(RunDir(run)) and [s for s, _ in got["train/loss"]] == list(range(1, 9))


def test_events_for_a_run_made_before_are_written_from_its_metrics(tmp_path, trained_run):
    copy = RunDir(shutil.copytree(trained_run.path, tmp_path / "old"))
    shutil.rmtree(copy.path / EVENTS_FOLDER, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "tensorboard", str(copy.path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "tensorboard --logdir" in done.stdout
    assert scalars(copy) == expected(copy)
