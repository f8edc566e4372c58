import json
import shutil

from mlm_studio.core.runs.history import RunsListing, pretraining_summary, summarize
from mlm_studio.core.runs.run_folder import TASK, RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError


def runs_of(trained_run, root, names):
    for name in names:
        shutil.copytree(trained_run.path, root / name)
    return root


def test_a_listing_reads_again_only_the_runs_whose_files_changed(tmp_path, trained_run):
    root = runs_of(trained_run, tmp_path / "runs", ["a", "b", "c"])
    listing = RunsListing(pretraining_summary)
    first = listing.refresh(root)
    assert sorted(run.path.name for run in first.found) == ["a", "b", "c"] and listing.reads == 3
    assert listing.refresh(root) == first and listing.reads == 3  # nothing changed: nothing read

    RunDir(root / "b").append_metrics([{"type": "failed", "step": 30, "message": "loss became NaN"}])
    again = listing.refresh(root)
    assert listing.reads == 4
    assert {run.path.name: run.state for run in again.found} == {"a": "completed", "b": "failed", "c": "completed"}
    assert next(run for run in again.found if run.path.name == "b") == summarize(RunDir(root / "b"))

    latest = RunDir(root / "c").latest_checkpoint()
    shutil.copytree(latest, latest.parent / "step-0000031")  # a checkpoint written: its folder is another
    assert next(run for run in listing.refresh(root).found if run.path.name == "c").checkpoint_step == 31
    assert listing.reads == 5


def test_runs_added_removed_or_of_another_kind_are_listed_as_the_folder_holds_them(tmp_path, trained_run):
    root = runs_of(trained_run, tmp_path / "runs", ["a", "b"])
    listing = RunsListing(pretraining_summary)
    listing.refresh(root)
    shutil.rmtree(root / "a")
    runs_of(trained_run, root, ["new", "newest"])
    (root / "new" / TASK).write_text(json.dumps({"kind": "text"}))  # a fine-tuning run: not this listing's kind
    (root / "not-a-run").mkdir()
    assert {run.path.name for run in listing.refresh(root).found} == {"b", "newest"}
    assert listing.reads == 4  # b was kept; new and newest were read
    assert listing.refresh(tmp_path / "missing").found == ()


def test_a_run_that_cannot_be_read_is_left_out_with_why(tmp_path, trained_run):
    root = runs_of(trained_run, tmp_path / "runs", ["fine", "damaged"])

    def read(run):
        if run.name == "damaged":
            raise CheckpointError("task.json is damaged")
        return run.name

    listed = RunsListing(read).refresh(root)
    assert listed.found == ("fine",)
    assert [left.said() for left in listed.left_out] == ["damaged: task.json is damaged"]
