"""A comparison read back from its folder, as the window lists and reopens it: one item per comparison (its runs not
listed as runs of their own), its table and verdict recomputed from its runs' test records; a run stopped halfway
is not weighed and leaves no verdict; a comparison written before `comparison.json` existed still reads; other
folders are no comparison."""

import json
import re
import shutil
from pathlib import Path

import pytest

from mlm_studio.core.config.sections import MAX_SEED
from mlm_studio.core.data.labelled import TaskError
from mlm_studio.core.finetune.compare import MANIFEST, SCRATCH_LABEL, YOURS, compare, verdict
from mlm_studio.core.finetune.comparisons import comparisons, read_comparison
from mlm_studio.core.finetune.options import OptionError
from mlm_studio.core.finetune.runs import finetune_runs, last_test
from mlm_studio.core.finetune.scores import main_score
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import TestRecord
from tests.core.test_finetune import options, write_task


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return write_task(tmp_path_factory.mktemp("task") / "task.csv", rows=60)


@pytest.fixture(scope="module")
def compared(trained_run, task, tmp_path_factory):
    """A comparison of two seeds run to its end, in a runs folder beside a single run."""
    root = tmp_path_factory.mktemp("runs")
    list(compare(str(trained_run.path), options(task, epochs=1), root / "compare", 2))
    (root / "empty").mkdir()
    return root, trained_run


def test_a_comparison_is_one_item_whose_table_and_verdict_come_from_its_runs_test_records(compared):
    root, trained_run = compared
    assert finetune_runs(root).found == ()  # its runs are the comparison's, not runs of their own
    (found,) = comparisons(root).found
    assert found.path == root / "compare" and found == read_comparison(root / "compare")
    assert json.loads((found.path / MANIFEST).read_text()) == {
        "model": str(trained_run.path), "first_seed": 0, "seeds": 2, "contenders": [YOURS, SCRATCH_LABEL],
    }  # fmt: skip
    assert [(run.contender.label, run.seed, run.path.name) for run in found.runs] == [
        (YOURS, 0, "your-model-seed0"), (SCRATCH_LABEL, 0, "from-scratch-seed0"),
        (YOURS, 1, "your-model-seed1"), (SCRATCH_LABEL, 1, "from-scratch-seed1"),
    ]  # fmt: skip
    assert (found.expected, found.complete, found.state) == (4, True, "complete")
    assert found.model == trained_run.path.name and found.task == "classification · task.csv"
    scores = {
        label: [main_score(last_test(found.path / f"{folder}-seed{seed}")) for seed in (0, 1)]
        for label, folder in ((YOURS, "your-model"), (SCRATCH_LABEL, "from-scratch"))
    }
    assert {o.contender.label: o.score for o in found.outcomes} == scores
    assert found.score_name == "macro-F1"
    assert found.verdict == verdict(found.outcomes, "macro-F1") and found.verdict.startswith("Pre-training ")
    assert found.short_verdict in ("pre-training helped", "pre-training did not help")


def test_a_comparison_from_before_its_record_is_read_from_its_run_folders(compared, tmp_path):
    root, _ = compared
    shutil.copytree(root / "compare", tmp_path / "old")
    (tmp_path / "old" / MANIFEST).unlink()
    old = read_comparison(tmp_path / "old")
    assert (old.expected, old.state) == (4, "complete")  # two seeds of your model and the one from scratch


def test_a_run_stopped_halfway_is_not_weighed(trained_run, task, tmp_path):
    control = TrainingControl()
    for said in compare(str(trained_run.path), options(task, epochs=20), tmp_path / "stopped", 3, control):
        if said.record.kind == "step":
            control.stop()
    found = read_comparison(tmp_path / "stopped")
    (run,) = found.runs
    assert (run.contender.label, run.state, run.test is not None, run.counts) == (YOURS, "stopped", True, False)
    assert found.outcomes == [] and found.state == "0 of 6 runs finished" and not found.complete
    assert found.verdict == (
        "No verdict until all 6 runs have finished: 0 have. Not weighed, as they did not finish: your model, seed 0."
    )
    assert found.short_verdict == "no verdict yet"


def test_other_folders_are_no_comparison(compared):
    root, trained_run = compared
    assert read_comparison(root / "empty") is None
    assert read_comparison(trained_run.path) is None  # a run
    assert read_comparison(root / "compare" / "your-model-seed0") is None


def test_a_damaged_record_in_a_comparison_is_said_and_its_folder_left_out(compared, tmp_path):
    """A run whose task.json is damaged is left out of its comparison, which then gives no verdict and says why; a
    comparison.json that is damaged leaves its comparison out of the list, said."""
    root, _ = compared
    kept = Path(shutil.copytree(root / "compare", tmp_path / "runs" / "compare"))
    (kept / "your-model-seed1" / "task.json").write_text("{}")
    found = read_comparison(kept)
    assert [run.path.name for run in found.runs] == ["your-model-seed0", "from-scratch-seed0", "from-scratch-seed1"]
    damaged = f'{kept / "your-model-seed1" / "task.json"} is damaged: its "task" is missing'
    assert [(x.path.name, x.reason.split(" (")[0]) for x in found.left_out] == [("your-model-seed1", damaged)]
    assert (found.complete, found.short_verdict) == (False, "no verdict yet")
    assert found.verdict.endswith(f"Left out, as they cannot be read: your-model-seed1: {damaged} (it must be one of "
                                  "classification, tokens, qa).")  # fmt: skip
    other = Path(shutil.copytree(root / "compare", tmp_path / "runs" / "other"))
    asked = json.loads((other / MANIFEST).read_text())
    (other / MANIFEST).write_text(json.dumps({**asked, "seeds": "two"}))
    listed = comparisons(tmp_path / "runs")
    assert listed.found == (found,)
    said = f"{other / MANIFEST} is damaged: its \"seeds\" must be a whole number from 1 to 100, not 'two'"
    assert [(x.path, x.reason) for x in listed.left_out] == [(other, said)]


def _contents(folder):
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("asked", ["learning rate", "task file", "model", "epochs", "weights"])
def test_a_comparison_run_again_for_another_question_is_refused_and_nothing_written(compared, task, tmp_path, asked):
    root, trained_run = compared
    folder = Path(shutil.copytree(root / "compare", tmp_path / "compare"))
    before = _contents(folder)
    spec, values, task_file = str(trained_run.path), {"epochs": 1}, task
    if asked == "learning rate":
        values["learning_rate"] = 1e-3
    elif asked == "epochs":
        values["epochs"] = 2
    elif asked == "task file":
        task_file = shutil.copy(task, tmp_path / "other.csv")
    elif asked == "model":
        spec = str(shutil.copytree(trained_run.path, tmp_path / "another-model"))
    else:  # the same path, other weights put there since its runs were made
        spec, folder = str(shutil.copytree(trained_run.path, tmp_path / "model")), tmp_path / "compare-model"
        list(compare(spec, options(task_file, **values), folder, 1))
        before = _contents(folder)
        earlier, latest = sorted((tmp_path / "model" / "checkpoints").iterdir())[-2:]
        (latest / "model.safetensors").write_bytes((earlier / "model.safetensors").read_bytes())  # other weights
    with pytest.raises(TaskError) as refused:
        list(compare(spec, options(task_file, **values), folder, 1 if asked == "weights" else 2))  # its seeds
    said = str(refused.value)
    assert said.startswith(f"{folder} holds a comparison of something else (your-model-seed0: ")
    expected = {"learning rate": "learning_rate 0.005 there, 0.001 asked", "epochs": "epochs 1 there, 2 asked",
                "task file": "files {", "model": "model '",
                "weights": "changed since these runs were made"}[asked]  # fmt: skip
    assert expected in said and said.endswith("or the same model, task and recipe to continue it")
    assert _contents(folder) == before
    if asked == "weights":
        assert "(your-model-seed0: the weights of '" in said and latest.name in said  # a long path cut in the middle
        return
    said_again = list(compare(str(trained_run.path), options(task, epochs=1), folder, 2))  # the same: continued
    assert sum(isinstance(s.record, TestRecord) for s in said_again) == 4  # the runs there, their test scores


def test_a_run_folder_of_a_comparison_that_is_a_link_is_refused(compared, task, tmp_path):
    trained_run = compared[1]
    folder, outside = tmp_path / "compare", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "your-model-seed0").symlink_to(outside, target_is_directory=True)
    with pytest.raises(TaskError, match="your-model-seed0 is a symbolic link; a comparison writes its runs only into"):
        list(compare(str(trained_run.path), options(task, epochs=1), folder, 1))
    assert list(outside.iterdir()) == []


def test_a_comparison_into_a_folder_of_other_files_or_for_other_seeds_is_refused_and_nothing_written(
    compared, task, tmp_path
):
    root, trained_run = compared
    spec = str(trained_run.path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    with pytest.raises(
        TaskError, match=r"mine already holds notes\.txt and no comparison; a comparison goes into a new"
    ):
        list(compare(spec, options(task, epochs=1), mine, 1))
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    folder = Path(shutil.copytree(root / "compare", tmp_path / "compare"))
    before = _contents(folder)
    for seed, seeds, differ in [(5, 2, "first_seed 0 there, 5 asked"), (0, 3, "seeds 2 there, 3 asked")]:
        with pytest.raises(TaskError) as refused:
            list(compare(spec, options(task, epochs=1, seed=seed), folder, seeds))
        assert str(refused.value) == (
            f"{folder} holds a comparison of other seeds ({differ}); nothing was changed. Give the same --seed and "
            "--seeds to continue it, or another --out to start a new one"
        )
        assert _contents(folder) == before


def test_a_comparison_made_at_the_recipes_learning_rate_is_not_continued_at_another(compared, task, tmp_path):
    """Runs made with the learning rate left to the recipe (recorded as null) answer no other rate."""
    trained_run, folder = compared[1], tmp_path / "compare"
    list(compare(str(trained_run.path), options(task, epochs=1, learning_rate=None), folder, 1))
    before = _contents(folder)
    for asked, said in ((1e-3, "learning_rate the default there, 0.001 asked"), (None, None)):
        if said is None:  # the same question again: continued, its runs' scores read back
            again = list(compare(str(trained_run.path), options(task, epochs=1, learning_rate=asked), folder, 1))
            assert sum(isinstance(s.record, TestRecord) for s in again) == 2
            continue
        with pytest.raises(TaskError) as refused:
            list(compare(str(trained_run.path), options(task, epochs=1, learning_rate=asked), folder, 1))
        assert said in str(refused.value)
        assert _contents(folder) == before


def test_seeds_past_the_largest_seed_are_refused_before_anything_is_trained(trained_run, task, tmp_path):
    with pytest.raises(OptionError, match=re.escape(f"seeds must be at most 1 from seed {MAX_SEED:,}, not 2")):
        list(compare(str(trained_run.path), options(task, seed=MAX_SEED), tmp_path / "compare", 2))
    assert not (tmp_path / "compare").exists()
