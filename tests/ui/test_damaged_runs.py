"""One damaged file in the runs folder never breaks the window: a task.json that is `{}` or of a kind this version
does not know, a search.json whose seeds are "two", a comparison.json that is not a record, a metrics line of the
wrong types; the window builds every panel, lists what it can read and says what it left out, and why."""

import json
import shutil

import pytest

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.recipe.search import SearchPlan
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.main_window import MainWindow
from tests.core.test_finetune import write_task


@pytest.fixture(scope="module")
def damaged_runs(trained_runs, tmp_path_factory):
    """A runs folder: a pre-training run with a damaged metrics line, a fine-tuning run, two copies of it with a
    damaged and a foreign task.json, a search whose seeds are "two" and a comparison whose record is a list."""
    root = tmp_path_factory.mktemp("damaged")
    pre = RunDir(shutil.copytree(trained_runs / "late", root / "late"))
    pre.append_metrics([{"type": "step", "step": 41, "tokens_seen": "many", "elapsed": "long"}])
    task = write_task(root.parent / "damaged-task.csv", rows=24)
    options = FinetuneOptions("classification", task, epochs=1, batch_size=8, device="cpu")
    list(prepare_finetuner(root / "ft", str(pre.path), options).run())
    written = json.loads((root / "ft" / "task.json").read_text())
    for name, task_json in (("ft-empty", {}), ("ft-foreign", {**written, "task": "regression"})):
        shutil.copytree(root / "ft", root / name)
        (root / name / "task.json").write_text(json.dumps(task_json))
    (root / "search").mkdir()
    plan = SearchPlan(str(pre.path), options, (1e-4, 3e-4), 1, 2).identity()
    (root / "search" / "search.json").write_text(json.dumps({**plan, "seeds": "two"}))
    (root / "compare").mkdir()
    (root / "compare" / "comparison.json").write_text("[1, 2]")
    return root


def test_the_window_builds_over_damaged_files_and_says_what_it_left_out(qtbot, damaged_runs, listed):
    window = MainWindow(None, restore=False, runs_root=damaged_runs)
    qtbot.addWidget(window)
    listed(window.workspace)
    runs = window.finetune_panel.runs
    assert [runs.table.item(r, 0).text() for r in range(runs.table.rowCount())] == ["ft"]
    pre_training = window.training_panel.runs.table
    assert "late" in [pre_training.item(r, 0).text() for r in range(pre_training.rowCount())]
    said = runs.label.text()
    assert said.startswith(f"Fine-tuning runs in {damaged_runs}; left out, as they cannot be read: ")
    assert f'ft-empty: {damaged_runs / "ft-empty" / "task.json"} is damaged: its "task" is missing' in said
    foreign = damaged_runs / "ft-foreign" / "task.json"
    assert f"ft-foreign: {foreign} cannot be used: its \"task\" is 'regression'" in said
    search = damaged_runs / "search" / "search.json"
    assert f"search: {search} is damaged: its \"seeds\" must be a whole number from 1 to 100, not 'two'" in said
    comparison = damaged_runs / "compare" / "comparison.json"
    assert f"compare: {comparison} is damaged: it holds a list, not a JSON object" in said
    assert runs.label.toolTip() == said  # said whole where the line is cut
