"""Scenario 16: two processes never train in one run folder; a killed process leaves nothing that blocks."""

import os
import shutil
import signal
import subprocess
import sys

import pytest

from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock
from tests.command import mlm_studio
from tests.core.helpers import config_file, small_config


def start(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "mlm_studio", "train", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_line(process, text):
    for line in process.stdout:
        if text in line:
            return line
    raise AssertionError(f"the process ended without printing {text!r}")


@pytest.mark.slow  # a process trains while others are refused
def test_a_second_process_is_refused_with_the_holders_pid_and_a_kill_releases_the_lock(tmp_path, corpus_file):
    cfg = config_file(tmp_path, max_steps=100_000, checkpoint_interval=5, log_interval=1)
    run = tmp_path / "run"
    first = start("--config", str(cfg), "--corpus", str(corpus_file), "--out", str(run))
    try:
        wait_for_line(first, "checkpoint")
        for args in (["--resume", str(run)], ["--config", str(cfg), "--corpus", str(corpus_file), "--out", str(run)]):
            second = mlm_studio("train", *args)  # this process: another one than the holder
            assert second.returncode == 1
            assert f"is being trained by process {first.pid}" in second.stderr, second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # a temporary checkpoint folder as a kill mid-write leaves it
    checkpoints = run / "checkpoints"
    latest = RunDir(run).latest_checkpoint()
    shutil.copytree(latest, checkpoints / f".step-9999999.tmp{first.pid}")
    more = str(int(latest.name.split("-")[1]) + 1)  # one step: a resume with nothing left to train is refused
    resumed = mlm_studio("train", "--resume", run, "--max-steps", more)
    assert resumed.returncode == 0, resumed.stderr
    assert not [p for p in os.listdir(checkpoints) if p.startswith(".")]


def test_a_new_run_never_goes_into_a_folder_holding_files_and_a_refusal_leaves_no_lock(
    tmp_path, small_corpus, small_tokenizer
):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text("my own notes\n", encoding="utf-8")
    config = small_config().with_vocabulary(small_tokenizer.vocab_size, small_tokenizer.pad_id)
    sources = [s.path for s in small_corpus.loaded_sources]
    with pytest.raises(CheckpointError, match=r"already holds metrics\.jsonl; a new run goes into a new or empty"):
        with RunLock(folder):
            RunDir.create(folder, config, small_tokenizer, sources, small_corpus.options)
    assert sorted(p.name for p in folder.iterdir()) == ["metrics.jsonl"]  # no lock left behind
    assert (folder / "metrics.jsonl").read_text(encoding="utf-8") == "my own notes\n"


def test_a_dangling_link_given_as_the_run_folder_is_named(tmp_path):
    link = tmp_path / "run"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(
        CheckpointError, match=r"run is a symbolic link to .*nowhere, which does not exist; .*choose another folder"
    ):
        with RunLock(link):
            pass
