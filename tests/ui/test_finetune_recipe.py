"""The Fine-tune panel's recipe search: started from the form, its table and chosen recipe on the Recipe tab, bound
to the model and task it searched (the view says so when the form names others); *Use in the form* puts the recipe
in the form and *Train it* fine-tunes the searched model on the searched task with it; listed in the Runs tab, a
search reopens in a new window and one that did not finish resumes there."""

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from mlm_studio.core.finetune.recipe.result import read_search
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.trainer_thread import IDLE
from tests.core.test_finetune import write_task
from tests.ui.finetune_driving import TIMEOUT_MS, cells, fill

GRID = ((1e-3, 5e-3), 2, 2)  # two learning rates, two epochs at most, the better one with a second seed


@pytest.fixture
def searched(finetune_panel, qtbot, tmp_path):
    panel = finetune_panel
    task = write_task(tmp_path / "task.csv", rows=60)
    fill(panel, task)
    panel.search_grid = GRID
    panel._update_plan()
    assert panel.search_button.toolTip().startswith("Fine-tune with each learning rate of 0.001, 0.005, up to 2 epochs")
    assert " 3 runs, " in panel.search_button.toolTip()
    panel.results.setCurrentWidget(panel.recipe)  # where Search recipe is
    assert panel.search_button.isVisible() and panel.recipe.verdict.text().startswith("Search recipe fine-tunes")
    qtbot.mouseClick(panel.search_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    return panel, task


def test_a_search_from_the_form_shows_its_table_and_chosen_recipe_bound_to_its_model_and_task(searched):
    panel, task = searched
    view = panel.recipe
    assert panel.results.currentWidget() is view
    (root,) = [p for p in (panel.runs_root).iterdir() if p.name.endswith("search")]
    found = read_search(root)
    assert found.complete and found.model == str(Path(panel.form.model_combo.currentData()))
    assert found.model_name == Path(found.model).name  # the run's name, as the Runs tab names the model
    assert view.title.text() == f"Recipe search {root.name}: complete — {found.model_name} on classification · task.csv"
    assert view.verdict.text() == found.verdict and view.verdict.text().startswith("Chosen recipe: learning rate ")
    rows = cells(view.table)
    assert [row[0] for row in rows] == ["0.001", "0.005"]
    assert [view.table.horizontalHeaderItem(c).text() for c in (2, 4)] == ["validation macro-F1", "test macro-F1"]
    chosen = found.chosen
    bold = [row for row in range(2) if view.table.item(row, 0).font().bold()]
    assert bold == [[0.001, 0.005].index(chosen.learning_rate)]
    assert rows[bold[0]][1:3] == [str(chosen.epochs), f"{chosen.mean:.1%}"]
    spreads = [view.table.item(row, 3).text() for row in range(2)]
    assert spreads[bold[0]].startswith("± ") and spreads[1 - bold[0]] == "–"  # the better half ran a second seed
    assert view.train_button.isEnabled() and view.use_button.isEnabled() and view.stale.isHidden()
    panel.form.task_edit.setText(str(task.parent / "another.csv"))
    assert not view.stale.isHidden() and f"this search was of {found.model_name} on classification" in view.stale.text()
    panel.form.task_edit.setText(str(task))
    assert view.stale.isHidden()
    view.use_button.click()
    assert (panel.form.learning_rate.value(), panel.form.epochs.value()) == (chosen.learning_rate, chosen.epochs)


def test_train_it_fine_tunes_the_searched_model_and_task_with_the_chosen_recipe(searched, qtbot, tmp_path):
    panel, task = searched
    chosen = panel.recipe.shown.chosen
    panel.form.task_edit.setText(str(write_task(tmp_path / "other.csv", rows=30, seed=3)))
    panel.form.learning_rate.setValue(0.1)
    before = set(panel.runs_root.iterdir())
    qtbot.mouseClick(panel.recipe.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    (run,) = set(panel.runs_root.iterdir()) - before
    config, task_spec = RunDir(run).config.training, RunDir(run).task
    assert (config.learning_rate, config.epochs) == (chosen.learning_rate, chosen.epochs)
    assert task_spec.train == task.resolve() and panel.test is not None


def test_a_search_is_listed_reopened_in_a_new_panel_and_resumed_when_unfinished(searched, qtbot):
    from mlm_studio.core.finetune.recipe.trials import trial_folder
    from mlm_studio.ui.panels.finetune.panel import FinetunePanel
    from mlm_studio.ui.workspace import Workspace

    panel, _ = searched
    (root,) = [p for p in panel.runs_root.iterdir() if p.name.endswith("search")]
    found = read_search(root)
    unfinished = root.with_name(root.name.replace("search", "unfinished-search"))
    shutil.copytree(root, unfinished)
    last = found.trials[-1]  # the better candidate's second seed
    shutil.rmtree(trial_folder(unfinished, last.learning_rate, last.seed))
    reopened = FinetunePanel(Workspace(runs_root=panel.runs_root))  # the window after a restart
    qtbot.addWidget(reopened)
    rows = {row[0]: row for row in cells(reopened.runs.table)}
    assert list(rows).index(unfinished.name) < list(rows).index(root.name)  # newest first
    assert rows[root.name][1].startswith("recipe search: complete, chose lr ")
    assert rows[unfinished.name][1] == "recipe search: 2 of 3 runs finished"
    assert rows[root.name][2] == found.model_name and rows[root.name][4] == f"{found.chosen.mean:.1%} macro-F1"
    reopened.runs.select(root)
    assert reopened.results.currentWidget() is reopened.recipe and reopened.recipe.shown.path == root
    assert reopened.status_label.text() == f"Recipe search {root.name}: complete"
    assert not reopened.runs.resume_button.isEnabled()  # nothing left to run
    assert all(c.text().startswith(f"No single run: recipe search {root.name}") for c in reopened.results.captions)
    assert reopened.curves.currentWidget() is reopened.hint and reopened.hint.text() == ""  # nothing contradicts it
    reopened.runs.select(unfinished)
    assert reopened.recipe.shown.path == unfinished and "No recipe chosen" in reopened.recipe.verdict.text()
    said = f"Recipe search {unfinished.name}: 2 of 3 runs finished; Resume on the Runs tab continues it"
    assert reopened.status_label.text() == said
    assert (reopened.progress_bar.value(), reopened.progress_bar.maximum()) == (2, 3)
    assert reopened.runs.resume_button.isEnabled()
    reopened.runs.resume_button.click()
    qtbot.waitUntil(lambda: reopened.controller.state == IDLE, timeout=TIMEOUT_MS)
    resumed = read_search(unfinished)
    assert resumed.complete and reopened.recipe.shown.complete
    assert [(t.learning_rate, t.seed) for t in resumed.trials] == [(t.learning_rate, t.seed) for t in found.trials]
    assert reopened.recipe.verdict.text() == resumed.verdict
    assert reopened.status_label.text() == f"Recipe search {unfinished.name}: complete"
    assert (reopened.progress_bar.value(), reopened.progress_bar.maximum()) == (3, 3)
    assert reopened.results.currentWidget() is reopened.recipe
