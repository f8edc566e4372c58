"""The Fine-tune panel's recipe search: started from the form, its table and chosen recipe on the Recipe tab, bound
to the model and task it searched (the view says so when the form names others); *Use in the form* puts the recipe
in the form and *Train it* fine-tunes the searched model on the searched task with it, as the search's runs trained,
to the validation score the search measured; listed in the Runs tab, a search reopens in a new window and one that
did not finish resumes there, its run stopped halfway drawn whole."""

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from mlm_studio.core.finetune.recipe.result import read_search
from mlm_studio.core.runs.control import IDLE
from mlm_studio.core.runs.run_folder import RunDir
from tests.core.test_finetune import write_task
from tests.ui.finetune_driving import TIMEOUT_MS, cells, fill

# two learning rates over a three-epoch schedule, the better one with a second seed: with the first, 0.02 takes off
# at epoch 2; with the second it never leaves the majority class
GRID = ((1e-2, 2e-2), 3, 2)


@pytest.fixture
def searched(finetune_panel, trained_run, qtbot, tmp_path):
    panel = finetune_panel
    panel.form.add_folder(str(trained_run.path))
    task = write_task(tmp_path / "task.csv", rows=100)
    with task.open("a", encoding="utf-8") as file:
        file.write(",errors\n")  # a row without its text: each run of the search notes it left it out
    fill(panel, task)
    panel.search_grid = GRID
    panel._update_plan()
    assert panel.search_button.toolTip().startswith("Fine-tune with each learning rate of 0.01, 0.02, up to 3 epochs")
    assert " 3 runs, " in panel.search_button.toolTip()
    panel.results.setCurrentWidget(panel.recipe)  # where Search recipe is
    assert panel.search_button.isVisible() and panel.recipe.verdict.text().startswith("Search recipe fine-tunes")
    notes = []  # what the message bar said while the search ran
    show = panel.message_bar.show_message
    panel.message_bar.show_message = lambda text, level="error": (notes.append(text), show(text, level))
    qtbot.mouseClick(panel.search_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    panel.search_notes = notes
    return panel, task


def test_search_recipe_sits_beside_start_and_the_panel_stays_narrow(finetune_panel):
    panel = finetune_panel
    panel.layout().activate()
    start, search = panel.start_button.geometry(), panel.search_button.geometry()
    assert search.top() == start.top() and 0 < search.left() - start.right() <= 12  # the next button on its line
    assert search.bottom() < panel.progress_bar.geometry().top()  # the bar and the status line on a line below
    assert panel.minimumSizeHint().width() <= 637  # as narrow as without it: the window's minimum stays 825 px


def test_after_a_search_the_message_bar_says_the_search_s_notes_not_its_last_run_s(searched):
    """A run's note is said, by whom, while that run trains; once the search ends, the panel speaks for the search:
    the notes of its runs, each once, under the search's name."""
    panel, _ = searched
    (root,) = [p for p in (panel.runs_root).iterdir() if p.name.endswith("search")]
    note = "task.csv: rows left out: 1 problem lines, first: line 102: an empty text"
    assert f"[lr 0.02, seed 1, run 3 of 3] {note}" in panel.search_notes  # the last run's, while it trained
    assert panel.message_bar.text == f"The recipe search {root.name}: its runs noted {note}"
    assert panel.status_label.text().startswith(f"Recipe search {root.name}: complete")


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
    assert [row[0] for row in rows] == ["0.01", "0.02"]
    headers = [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())]
    assert headers == ["learning rate", "best epochs", "validation macro-F1", "± sd", "test macro-F1",
                       "per seed (validation / test)"]  # fmt: skip
    table = view.table  # every column as wide as what it holds (a narrow window scrolls rather than cuts one)
    assert all(table.columnWidth(c) >= table.sizeHintForColumn(c) > 0 for c in range(len(headers)))
    chosen = found.chosen
    assert chosen.learning_rate == 2e-2 and [view.table.item(1, c).font().bold() for c in (0, 5)] == [True, True]
    assert rows[1][1:4] == ["2, majority", f"{chosen.mean:.1%}", f"± {chosen.spread:.1%}"]  # seed 1: no best epoch
    assert rows[1][5].endswith("seed 1: 20.5% / 20.5% (majority)") and rows[0][3] == "–"  # one seed ran 0.01
    assert "seed 0 best at epoch 2, seed 1 never beat the majority class" in view.verdict.text()
    assert view.train_button.isEnabled() and view.use_button.isEnabled() and view.stale.isHidden()
    panel.form.task_edit.setText(str(task.parent / "another.csv"))
    assert not view.stale.isHidden() and f"this search was of {found.model_name} on classification" in view.stale.text()
    panel.form.task_edit.setText(str(task))
    assert view.stale.isHidden()
    view.use_button.click()
    assert (panel.form.learning_rate.value(), panel.form.epochs.value()) == (0.02, 3)  # the schedule's epochs


def test_train_it_trains_the_chosen_recipe_as_the_search_did_to_the_validation_score_it_measured(
    searched, qtbot, tmp_path
):
    """The searched model and task, whatever the form says now; the learning rate over the search's schedule,
    stopped early with its best weights kept, the first seed: it validates as the search's run of that seed."""
    panel, task = searched
    found = panel.recipe.shown
    chosen = found.chosen
    panel.form.task_edit.setText(str(write_task(tmp_path / "other.csv", rows=30, seed=3)))
    panel.form.learning_rate.setValue(0.1)
    before = set(panel.runs_root.iterdir())
    qtbot.mouseClick(panel.recipe.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    (run,) = set(panel.runs_root.iterdir()) - before
    config, task_spec = RunDir(run).config.training, RunDir(run).task
    assert (config.learning_rate, config.epochs, config.seed, task_spec.patience) == (0.02, 3, 0, 2)
    assert task_spec.train == task.resolve() and panel.test is not None
    best = max(r["macro_f1"] for r in RunDir(run).read_metrics() if r["type"] == "validation")
    assert abs(best - found.trial(chosen.learning_rate, 0).validation) <= 0.01


def test_a_search_is_listed_reopened_in_a_new_panel_and_resumed_when_unfinished_its_curves_drawn_whole(
    searched, qtbot, listed
):
    from mlm_studio.core.finetune.recipe.search import plan_of, search
    from mlm_studio.core.finetune.recipe.trials import trial_folder
    from mlm_studio.core.runs.control import TrainingControl
    from mlm_studio.ui.panels.finetune.panel import FinetunePanel
    from mlm_studio.ui.workspace import Workspace

    panel, _ = searched
    (root,) = [p for p in panel.runs_root.iterdir() if p.name.endswith("search")]
    found = read_search(root)
    unfinished = root.with_name(root.name.replace("search", "unfinished-search"))
    shutil.copytree(root, unfinished)
    last = found.trials[-1]  # the better candidate's second seed: trained again, and stopped after its first epoch
    shutil.rmtree(trial_folder(unfinished, last.learning_rate, last.seed))
    control = TrainingControl()
    for tried in search(plan_of(read_search(unfinished)), unfinished, control):
        if tried.run == 3 and tried.record.kind == "validation":
            control.stop()
    reopened = FinetunePanel(Workspace(runs_root=panel.runs_root))  # the window after a restart
    qtbot.addWidget(reopened)
    listed(reopened.workspace)
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
    resumed_run = RunDir(trial_folder(unfinished, last.learning_rate, last.seed))
    records = resumed_run.read_metrics()
    (_, resumed_at) = [r["step"] for r in records if r["type"] == "started"]
    recorded = [r["step"] for r in records if r["type"] == "step"]
    assert recorded[0] < resumed_at < recorded[-1]  # it was resumed halfway: its curve is drawn from its first step
    assert list(reopened.plots.series["step_loss"].x("step")) == recorded
