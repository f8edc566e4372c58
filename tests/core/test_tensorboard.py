"""TensorBoard events hold what metrics.jsonl holds, under transformers' tag names, without a step twice."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from mlm_studio.core.runs.records import StartedRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.tensorboard import EVENTS_FOLDER, TAGS, EventLog, write_events
from mlm_studio.core.storage.owned import MANIFEST
from tests.command import mlm_studio
from tests.core.helpers import config_file


def scalars(run: RunDir | Path) -> dict[str, list[tuple[int, float]]]:
    """The scalars of a run's events folder, or of one event file."""
    events = EventAccumulator(str(run.path / EVENTS_FOLDER if isinstance(run, RunDir) else run))
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
    cfg = config_file(tmp_path, max_steps=6, checkpoint_interval=3, eval_interval=3, log_interval=1)
    done = mlm_studio("train", "--config", cfg, "--corpus", corpus_file, "--out", run)
    assert done.returncode == 0 and f"TensorBoard events in {run.resolve() / EVENTS_FOLDER}" in done.stdout
    assert scalars(RunDir(run)) == expected(RunDir(run)) and "eval/accuracy" in scalars(RunDir(run))
    # as if killed after step 3's checkpoint: steps 4–6 are in the events but will be trained again
    shutil.rmtree(run / "checkpoints" / "step-0000006")
    users = foreign_events(run / EVENTS_FOLDER / "baseline").parent
    (run / EVENTS_FOLDER / "notes.txt").write_text("compare with the baseline")
    before = contents(users)
    done = mlm_studio("train", "--resume", run, "--max-steps", 8)
    assert done.returncode == 0, done.stderr
    got = scalars(RunDir(run))
    assert got == expected(RunDir(run)) and [s for s, _ in got["train/loss"]] == list(range(1, 9))
    assert contents(users) == before and (run / EVENTS_FOLDER / "notes.txt").is_file()


def test_events_for_a_run_made_before_are_written_from_its_metrics(tmp_path, trained_run):
    copy = RunDir(shutil.copytree(trained_run.path, tmp_path / "old"))
    shutil.rmtree(copy.path / EVENTS_FOLDER, ignore_errors=True)
    done = mlm_studio("tensorboard", copy.path)
    assert done.returncode == 0 and "tensorboard --logdir" in done.stdout
    assert scalars(copy) == expected(copy)


def foreign_events(folder: Path) -> Path:
    """An event file another program wrote into `folder` (torch's SummaryWriter, one scalar)."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(folder)) as writer:
        writer.add_scalar("baseline/loss", 1.5, 1)
    [path] = [p for p in folder.iterdir() if "tfevents" in p.name and not p.name.endswith(".mlm-studio")]
    return path


def contents(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def ours(folder: Path) -> list[str]:
    return sorted(json.loads((folder / MANIFEST).read_text())["files"])


def test_writing_events_again_removes_only_the_event_files_mlm_studio_wrote(tmp_path, trained_run):
    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    folder = run.path / EVENTS_FOLDER
    earlier = ours(folder)
    beside = foreign_events(folder)
    foreign_events(folder / "baseline")
    (folder / "baseline" / "notes.txt").write_text("my baseline")
    kept = {name: data for name, data in contents(folder).items() if name not in (*earlier, MANIFEST)}
    done = mlm_studio("tensorboard", run.path)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert f"Note: left in place: {beside} was not written by MLM Studio; TensorBoard shows their events" in done.stdout
    assert {name: data for name, data in contents(folder).items() if name in kept} == kept and len(kept) == 3
    [new] = ours(folder)
    assert new not in earlier and not any((folder / name).exists() for name in earlier)
    assert scalars(folder / new) == expected(run)


def test_a_step_tensorboard_cannot_hold_is_refused_and_the_earlier_events_stay(tmp_path, trained_run):
    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    last = [r for r in run.read_metrics() if r["type"] == "step"][-1]
    run.append_metrics([{**last, "step": 2**64}])
    before = contents(run.path / EVENTS_FOLDER)
    done = mlm_studio("tensorboard", run.path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr == (
        "mlm-studio: TensorBoard events are not written (a step record in metrics.jsonl has the step "
        f"{2**64}, which TensorBoard cannot hold (whole numbers below 2^63 only)); the earlier events were left as "
        "they were\n"
    )
    assert contents(run.path / EVENTS_FOLDER) == before


def test_events_of_a_writer_that_never_closed_are_replaced_at_the_next_start(tmp_path, trained_run):
    """A killed writer leaves its file longer than the manifest recorded: appended to, by it, so still its own."""
    records = trained_run.read_metrics()
    first = EventLog(tmp_path, records[:5])
    for record in records[5:]:
        first.add(record)  # never closed, as when killed
    grown = (tmp_path / EVENTS_FOLDER / first.name).stat().st_size
    assert grown > json.loads((tmp_path / EVENTS_FOLDER / MANIFEST).read_text())["files"][first.name]["size"]
    second = EventLog(tmp_path, records)
    second.close()
    assert ours(tmp_path / EVENTS_FOLDER) == [second.name] and second.take_notes() == []
    assert sorted(p.name for p in (tmp_path / EVENTS_FOLDER).iterdir()) == sorted([MANIFEST, second.name])
    assert scalars(tmp_path / EVENTS_FOLDER) == expected(trained_run)


def test_events_are_not_rewritten_while_another_process_trains_the_run(tmp_path, trained_run):
    from mlm_studio.core.storage.lock import RunLock

    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    before = contents(run.path / EVENTS_FOLDER)
    command = [sys.executable, "-m", "mlm_studio", "tensorboard", str(run.path)]
    with RunLock(run.path):  # this process trains it; the command runs in another
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "is being trained by process" in done.stderr and "Traceback" not in done.stderr
    assert contents(run.path / EVENTS_FOLDER) == before


def test_a_linked_events_folder_is_refused_and_its_target_left_untouched(tmp_path, trained_run):
    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    shutil.rmtree(run.path / EVENTS_FOLDER)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("mine")
    (run.path / EVENTS_FOLDER).symlink_to(elsewhere, target_is_directory=True)
    done = mlm_studio("tensorboard", run.path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{run.path / EVENTS_FOLDER} is a symbolic link" in done.stderr and "never through a link" in done.stderr
    assert contents(elsewhere) == {"notes.txt": b"mine"}
    log = EventLog(run.path, run.read_metrics())  # while training: said once, training goes on
    [note] = log.take_notes()
    assert "is a symbolic link" in note and "training goes on" in note and note.count(str(run.path)) == 1
    assert contents(elsewhere) == {"notes.txt": b"mine"}
    assert log.writing == ""  # what the start of training announces: no folder, the warning saying why
    started = StartedRecord(0, str(run.path), 8, 0.0, "cpu", "fp32", 1, 32, 100, 10, log.writing, events_refused=True)
    assert started.describe().endswith("; no TensorBoard events (the warning that follows says why)")
    assert "tensorboard" not in started.describe().replace("TensorBoard", "")


def test_an_earlier_event_file_made_a_link_is_kept_and_named_once(tmp_path, trained_run):
    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    folder = run.path / EVENTS_FOLDER
    [earlier] = ours(folder)
    target = tmp_path / "elsewhere.tfevents"
    target.write_bytes(b"the user's own")
    (folder / earlier).unlink()
    (folder / earlier).symlink_to(target)
    _, notes = write_events(run.path, run.read_metrics())
    [note] = notes
    assert note.count(str(folder / earlier)) == 1 and "symbolic link" in note
    assert target.read_bytes() == b"the user's own" and (folder / earlier).is_symlink()


def test_a_run_refused_among_several_is_said_and_the_others_are_still_written(tmp_path, trained_run, capsys):
    from mlm_studio.cli import main

    first, last = (RunDir(shutil.copytree(trained_run.path, tmp_path / name)) for name in ("first", "last"))
    for run in (first, last):
        shutil.rmtree(run.path / EVENTS_FOLDER)
    assert main(["tensorboard", str(first.path), str(tmp_path / "gone"), str(last.path)]) == 1
    out, err = capsys.readouterr()
    assert err == f"mlm-studio: {tmp_path / 'gone'} does not exist\n"
    assert out.count("TensorBoard events of") == 2 and ours(last.path / EVENTS_FOLDER)
