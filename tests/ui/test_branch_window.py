"""*Branch from here…* in the Training panel: the dialog, the branch trained as the command line trains it, the runs
table's tree and a branch overlaid on its parent from the branch step."""

import hashlib
import os
import shutil

import pytest
from PySide6.QtCore import Qt

from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training.branch_record import Branch, branch_of
from mlm_studio.core.training.branching import plan_branch
from mlm_studio.ui.panels.training.panel import TrainingPanel
from mlm_studio.ui.runs_folder import RunsFolder
from mlm_studio.ui.widgets.runs_table import RunsTable
from mlm_studio.ui.workspace import Workspace

TIMEOUT_MS = 120_000


@pytest.fixture
def runs(trained_runs, tmp_path):
    """A runs folder holding a copy of the 40-step `late` run (checkpoints at 36 and 40) and then of `early`."""
    root = tmp_path / "runs"
    for name in ("late", "early"):
        shutil.copytree(trained_runs / name, root / name)
    return root


@pytest.fixture
def panel(qtbot, runs, small_corpus, small_tokenizer):
    workspace = Workspace(runs_root=runs)
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    widget = TrainingPanel(workspace)
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    widget.show()
    widget.refresh_runs()
    yield widget
    widget.controller.stop()
    widget.controller.wait(60_000)


def hashes(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*")
            if p.is_file()}  # fmt: skip


def names(table):
    return [table.item(row, 0).text() for row in range(table.rowCount())]


def test_branch_from_here_trains_the_branch_and_overlays_it_on_its_parent_from_the_branch_step(qtbot, panel, runs):
    late = runs / "late"
    before = hashes(late)
    panel.runs.table.select_run(late)
    assert panel.runs.branch_button.isEnabled()
    qtbot.mouseClick(panel.runs.branch_button, Qt.MouseButton.LeftButton)
    dialog = panel.branch_dialog
    assert [dialog.step.itemText(i) for i in range(dialog.step.count())] == ["36", "40"]
    assert (dialog.skip_from.value(), dialog.skip_to.value()) == (40, 41)  # the latest, one batch after it
    dialog.step.setCurrentIndex(dialog.step.findData(36))
    assert (dialog.skip_from.value(), dialog.skip_from.minimum()) == (36, 36)  # the range follows the step
    dialog.skip.setChecked(True)
    dialog.skip_to.setValue(38)
    dialog.settings.setPlainText("training.learning_rate = 1e-3\nlearning rate = 1")
    qtbot.mouseClick(dialog.branch_button, Qt.MouseButton.LeftButton)
    assert dialog.isVisible() and dialog.problem.text().startswith("Line 2: write section.field = value")
    dialog.settings.setPlainText("training.learning_rate = 1e-3\ntraining.max_steps = 42")
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        qtbot.mouseClick(dialog.branch_button, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible() and hashes(late) == before
    [branch] = [path for path in runs.iterdir() if path.name.endswith("branch-at-36")]
    changes = "training.learning_rate: 0.005 → 0.001; training.max_steps: 40 → 42"
    assert branch_of(RunDir(branch)) == Branch(late.resolve(), 36, range(36, 38), changes)
    assert RunDir(branch).latest_checkpoint().name == "step-0000042"
    assert names(panel.runs.table)[names(panel.runs.table).index("late") + 1] == f"↳ {branch.name}"

    panel.runs.table.select_run(late)
    qtbot.mouseClick(panel.runs.open_button, Qt.MouseButton.LeftButton)
    panel.runs.table.select_run(branch)
    qtbot.mouseClick(panel.runs.overlay_button, Qt.MouseButton.LeftButton)
    overlaid, shown = panel.plots.series[f"overlay:{branch.name}:step:loss"], panel.plots.series["step_loss"]
    assert overlaid.x("step").tolist() == list(range(37, 43))  # its steps continue from the branch step
    tokens = dict(zip(shown.x("step").tolist(), shown.x("tokens").tolist()))
    assert tokens[36] < overlaid.x("tokens")[0] < tokens[38]


def test_the_runs_table_lists_each_branch_under_its_parent_in_either_order(qtbot, runs):
    late = RunDir(runs / "late")
    first = plan_branch(late, 36, None, late.config).create(runs / "first")
    plan_branch(first, 36, (36, 37), first.config).create(runs / "second")
    newest = (runs / "second").stat().st_mtime + 60
    os.utime(runs / "early", (newest, newest))  # the newest run: the branches, newer than it, still under `late`
    table = RunsTable()
    qtbot.addWidget(table)
    table.show_runs(RunsFolder().read(runs))
    assert names(table) == ["early", "late", "↳ first", "   ↳ second"]  # newest first, a branch under its parent
    table.sortByColumn(2, Qt.SortOrder.DescendingOrder)  # by step: late's 40 first, then its branches at 36
    assert names(table) == ["late", "↳ first", "   ↳ second", "early"]
    table.sortByColumn(2, Qt.SortOrder.AscendingOrder)
    assert names(table) == ["early", "late", "↳ first", "   ↳ second"]
    row = names(table).index("   ↳ second")
    assert "Branched from first at step 36, skipping the 1 batch(es) of steps 37–37" in table.item(row, 0).toolTip()
    table.set_live(runs / "second", "running", 37, tokens=10, elapsed=1.0)  # the live row keeps its place
    assert names(table)[-1] == "   ↳ second" and table.item(row, 2).text() == "37"
    table.set_live(None)
    table.sortByColumn(0, Qt.SortOrder.DescendingOrder)
    newer = newest + 60
    os.utime(runs / "late", (newer, newer))  # a new reading in which the parent changed: its branches follow it
    table.show_runs(RunsFolder().read(runs))
    assert names(table) == ["late", "↳ first", "   ↳ second", "early"]
