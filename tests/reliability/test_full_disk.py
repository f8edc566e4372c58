"""Scenario 4, for real: a size-limited filesystem (tmpfs) fills up under the terminal's train and export, and
under the TensorBoard events (full, or read-only). Skipped where a filesystem cannot be mounted (it needs root);
CI runs as root."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlm_studio.core.models.build import build_trained
from mlm_studio.core.runs.history import list_runs
from mlm_studio.core.runs.records import FinishedRecord, WarningRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.tensorboard import EVENTS_FOLDER, EventLog
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.command import mlm_studio
from tests.core.helpers import config_file, small_config
from tests.core.test_finetune import write_task
from tests.reliability.disks import fill


@pytest.fixture
def small_disk(tmp_path, tmpfs):
    """A 96 KiB filesystem: room for a run's small files, not for a checkpoint."""
    return tmpfs(tmp_path / "small-disk", "size=96k")


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


def test_exporting_into_the_working_folder(tmp_path, finished_run, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    done = mlm_studio("export", finished_run, ".")
    assert done.returncode == 0, done.stderr
    assert (here / "model.safetensors").is_file() and (here / "config.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_token_cache_onto_a_full_disk_says_so_and_names_the_cache(small_corpus, small_tokenizer, small_disk):
    from mlm_studio.core.data.corpus import CorpusError
    from mlm_studio.core.data.dataset import tokenize_corpus

    with pytest.raises(CorpusError) as refused:
        tokenize_corpus(small_corpus, small_tokenizer, root=small_disk / "datasets")
    message = str(refused.value)
    assert message.startswith(f"Could not write the token cache {small_disk / 'datasets'}/")
    assert "(No space left on device); free space there, or set MLM_STUDIO_CACHE" in message
    assert list((small_disk / "datasets").iterdir()) == []  # no half-written cache left behind


def test_a_new_run_that_does_not_fit_leaves_no_half_made_run_and_keeps_its_lock(
    small_disk, small_corpus, small_tokenizer
):
    config = small_config().with_vocabulary(small_tokenizer.vocab_size, small_tokenizer.pad_id)
    path, sources = small_disk / "run", [s.path for s in small_corpus.loaded_sources]
    imported = (build_trained(config), {"source": "imported"})  # 149 KiB of weights: more than the disk holds
    with RunLock(path):
        with pytest.raises(OSError, match="No space left on device"):
            RunDir.create(path, config, small_tokenizer, sources, small_corpus.options, imported)
        assert [p.name for p in path.iterdir()] == [".lock"] and list_runs(small_disk) == []
        run = RunDir.create(path, config, small_tokenizer, sources, small_corpus.options)  # without them it fits
        assert sorted(p.name for p in path.iterdir()) == [".lock", "config.toml", "corpus.json", "tokenizer.json"]
        with pytest.raises(CheckpointError, match="is being trained by process"), RunLock(path):
            pass  # the lock the new run's files were moved in under still holds
    assert [r.path for r in list_runs(small_disk)] == [run.path]


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


STEPS = [{"type": "step", "step": n, "loss": 5 - n / 99, "accuracy": n / 99, "learning_rate": 0.001} for n in range(99)]


def test_events_on_a_disk_that_fills_stop_once_and_leave_the_users_file(tmp_path, tmpfs, capfd):
    """The event file and its manifest take a page each; the user's file takes the rest: the events stop at the
    event file's next page."""
    folder = tmpfs(tmp_path / "run" / EVENTS_FOLDER, "size=16k")
    log = EventLog(tmp_path / "run", [])
    filled = fill(folder)
    for record in STEPS:
        log.add(record)  # never raises
    notes = log.take_notes()
    assert len(notes) == 1 and notes[0].startswith("TensorBoard events are no longer written (")
    assert "No space left on device" in notes[0] and "training goes on" in notes[0]
    for record in STEPS:
        log.add(record)
    log.close()
    assert log.take_notes() == [] and (folder / "filler.bin").stat().st_size == filled
    assert "Traceback" not in capfd.readouterr().err


def test_training_beside_a_read_only_events_folder_goes_on_and_says_so_once(
    tmp_path, small_corpus, small_tokenizer, tmpfs, capfd
):
    run = start_run(tmp_path / "run", small_config(max_steps=3, eval_interval=3), small_corpus, small_tokenizer)
    folder = tmpfs(run.path / EVENTS_FOLDER, "size=64k")
    (folder / "mine").mkdir()
    (folder / "mine" / "notes.txt").write_text("the user's")
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    records = list(Trainer(run, *training_blocks(run, small_corpus)).run())
    warnings = [r.message for r in records if isinstance(r, WarningRecord)]
    assert len(warnings) == 1 and warnings[0].startswith("TensorBoard events are not written (")
    assert "Read-only file system" in warnings[0]
    assert isinstance(records[-1], FinishedRecord) and records[-1].reason == "completed" and records[-1].step == 3
    assert [r["step"] for r in run.read_metrics() if r["type"] == "step"] == [1, 2, 3]
    assert (folder / "mine" / "notes.txt").read_text() == "the user's"
    assert "Traceback" not in capfd.readouterr().err


def test_events_on_a_full_disk_name_the_event_file_they_could_not_write(tmp_path, tmpfs):
    folder = tmpfs(tmp_path / "run" / EVENTS_FOLDER, "size=16k")
    fill(folder)
    log = EventLog(tmp_path / "run", STEPS * 10)
    log.close()
    assert "No space left on device" in log.error
    assert f"({folder}/events.out.tfevents." in log.error and ".mlm-studio: No space left" in log.error


def test_tensorboard_onto_a_full_disk_names_the_file_it_could_not_write(finished_run, small_disk):
    run = small_disk / "run"
    run.mkdir()
    for name in ("config.toml", "corpus.json", "metrics.jsonl", "tokenizer.json"):  # a run copied without its lock
        shutil.copy(finished_run / name, run / name)
    before = sorted(p.name for p in run.iterdir())
    _full(small_disk)
    done = mlm_studio("tensorboard", run)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"mlm-studio: No space left on device ({run / '.lock'})\n"
    assert sorted(p.name for p in run.iterdir()) == before  # the lock it made, gone again


def test_a_recipe_search_onto_a_full_disk_names_the_file_it_could_not_write(finished_run, small_disk, tmp_path):
    task = write_task(tmp_path / "task.csv", rows=40)
    search = small_disk / "search"
    grid = ["--lrs", "1e-3,5e-3", "--max-epochs", "1", "--seeds", "1", "--batch-size", "8", "--device", "cpu"]
    filler = _full(small_disk) / "filler"
    done = mlm_studio("finetune", finished_run, "--task", task, "--search", *grid, "--out", search)
    assert (done.returncode, done.stderr) == (1, f"mlm-studio: No space left on device ({search / '.lock'})\n")
    with open(filler, "r+b") as file:
        file.truncate(filler.stat().st_size - 4096)  # room for the lock, not for a run's files
    done = mlm_studio("finetune", finished_run, "--task", task, "--search", *grid, "--out", search)
    named = re.fullmatch(r"mlm-studio: No space left on device \((.+)\)\n", done.stderr)
    assert done.returncode == 1 and named is not None, done.stderr
    inside = Path(named.group(1)).relative_to(search).parts  # a file of one of its runs, by its own name
    assert len(inside) == 2 and not any(part.startswith(".") for part in inside)
    assert list(small_disk.iterdir()) == [filler]  # nothing of the search left
