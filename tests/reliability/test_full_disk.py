"""Scenario 4, for real: a size-limited filesystem (tmpfs) fills up under the terminal's train and export.
Skipped where a filesystem cannot be mounted (it needs root); CI runs as root."""

import subprocess
import sys

import pytest

from tests.core.helpers import config_file


@pytest.fixture
def small_disk(tmp_path):
    """A 96 KiB filesystem: room for a run's small files, not for a checkpoint."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a size-limited filesystem here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def mlm_studio(*args):
    return subprocess.run([sys.executable, "-m", "mlm_studio", *args], capture_output=True, text=True, timeout=300)


def test_training_onto_a_full_disk_fails_with_the_reason_not_a_traceback(tmp_path, corpus_file, small_disk):
    cfg = config_file(tmp_path, checkpoint_interval=2)
    done = mlm_studio("train", "--config", str(cfg), "--corpus", str(corpus_file), "--out", str(small_disk / "run"))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "Could not write the checkpoint of step 2 (No space left on device)" in done.stderr
    assert not [p for p in (small_disk / "run" / "checkpoints").iterdir()]  # no half checkpoint left behind


def test_exporting_onto_a_full_disk_fails_with_the_reason_and_leaves_nothing(tmp_path, finished_run, small_disk):
    done = mlm_studio("export", str(finished_run), str(small_disk / "model"))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "No space left on device" in done.stderr
    assert list(small_disk.iterdir()) == []


def test_exporting_into_the_working_folder(tmp_path, finished_run):
    here = tmp_path / "here"
    here.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "export", str(finished_run), "."],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=here,
    )
    assert done.returncode == 0, done.stderr
    assert (here / "model.safetensors").is_file() and (here / "config.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _full(disk):
    """`disk` filled to the last byte."""
    with open(disk / "filler", "wb", buffering=0) as filler:
        with pytest.raises(OSError, match="No space left on device"):
            while True:
                filler.write(b"\0" * 4096)
    return disk


@pytest.mark.parametrize(
    "args",
    [
        ("evaluate", "{run}", "--json"),
        ("predict", "{run}", "the [MASK] of the [MASK]", "--json"),
        ("evaluate", "{run}"),
    ],
)
def test_results_printed_onto_a_full_disk_fail_with_the_reason_not_a_traceback(finished_run, small_disk, args):
    """`mlm-studio evaluate RUN --json > /full/disk/result.json`."""
    with open(_full(small_disk) / "result.json", "w") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "mlm_studio", *(a.format(run=finished_run) for a in args)],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert done.returncode == 1
    assert done.stderr == "mlm-studio: could not write the output (No space left on device)\n"
