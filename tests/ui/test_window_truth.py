"""The window never shows what is not true, driven as a user would across panels: runs of each kind are offered
only where they work, looking at a run changes no other panel's choice, and each panel names what it shows."""

import shutil

import pytest

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.history import FINETUNING, PRETRAINING, run_kind
from mlm_studio.ui.main_window import MainWindow

TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def mixed_runs(trained_runs, tmp_path_factory):
    """A runs folder holding the two pre-training runs and one short fine-tuning run of `late`."""
    root = tmp_path_factory.mktemp("mixed")
    for name in ("early", "late"):
        shutil.copytree(trained_runs / name, root / name)
    task = root.parent / "topics.csv"
    rows = [row for i in range(12) for row in ((f"the value of list {i} is returned", "returns"),
                                                (f"an error {i} is raised", "errors"))]  # fmt: skip
    task.write_text("text,label\n" + "\n".join(f"{t},{label}" for t, label in rows) + "\n", encoding="utf-8")
    options = FinetuneOptions("classification", task, epochs=1, batch_size=8, device="cpu")
    list(prepare_finetuner(root / "finetune-topics", str(root / "late"), options).run())
    return root


@pytest.fixture
def window(qtbot, mixed_runs):
    widget = MainWindow(None, restore=False, runs_root=mixed_runs)
    qtbot.addWidget(widget)
    widget.resize(1280, 720)
    widget.show()
    return widget


def combo_paths(combo) -> list[str]:
    return [combo.itemData(i) for i in range(combo.count())]


def test_the_kinds_of_run_are_told_apart(mixed_runs):
    assert run_kind(mixed_runs / "late") == PRETRAINING
    assert run_kind(mixed_runs / "finetune-topics") == FINETUNING


def test_a_fine_tuning_run_is_offered_only_where_it_works(window, mixed_runs):
    """It has no masked-LM head: not in the Training panel's runs (Open, Resume and Export would fail), not a model of
    the Playground or Evaluation, not a starting model; it is listed in the Fine-tune panel's Runs tab."""
    tuned = str(mixed_runs / "finetune-topics")
    table = window.training_panel.runs.table
    assert sorted(table.item(r, 0).text() for r in range(table.rowCount())) == ["early", "late"]
    for combo in (
        window.playground_panel.views[0].model_combo,
        window.playground_panel.views[1].model_combo,
        window.evaluation_panel.model_combo,
        window.finetune_panel.form.model_combo,
    ):
        assert tuned not in combo_paths(combo)
        assert combo.count() >= 2
    assert window.evaluation_panel.model_combo.currentData() != tuned  # a fresh session's first model
    listed = window.finetune_panel.runs.table
    assert [listed.item(r, 0).text() for r in range(listed.rowCount())] == ["finetune-topics"]


def test_opening_a_fine_tuning_run_shows_it_in_the_fine_tune_panel(qtbot, window, mixed_runs):
    window.open_run(mixed_runs / "finetune-topics")
    assert window.stack.currentWidget() is window.finetune_panel
    assert window.finetune_panel.run_path == mixed_runs / "finetune-topics"
    assert window.workspace.shown_run is None and window.workspace.run is None
    qtbot.waitUntil(lambda: not window.finetune_panel.mistakes_task.running, timeout=TIMEOUT_MS)


def test_opening_a_run_only_looks_at_it(window, mixed_runs):
    """The status bar names the current run (none yet); the opened run's curves are shown; every other panel keeps
    its own choice."""
    playground, evaluation = window.playground_panel, window.evaluation_panel
    before = (playground.views[0].model_combo.currentData(), evaluation.model_combo.currentData())
    window.open_run(mixed_runs / "early")
    assert window.stack.currentWidget() is window.training_panel
    assert window.training_panel.plots.series["step_loss"].size == 4
    assert window.status.run_label.text() == "Current run: none"
    assert (playground.views[0].model_combo.currentData(), evaluation.model_combo.currentData()) == before


def test_another_runs_folder_is_every_panels_folder(window, mixed_runs, tmp_path, listed):
    """The folder chosen in the Training panel's Runs tab is the one every panel lists and writes into."""
    shutil.copytree(mixed_runs / "early", tmp_path / "only-early")
    window.workspace.set_runs_root(tmp_path)
    listed(window.workspace)
    table = window.training_panel.runs.table
    assert [table.item(r, 0).text() for r in range(table.rowCount())] == ["only-early"]
    assert combo_paths(window.evaluation_panel.model_combo)[:1] == [str(tmp_path / "only-early")]
    assert str(tmp_path / "only-early") in combo_paths(window.playground_panel.views[0].model_combo)
    assert window.finetune_panel.runs.table.rowCount() == 0
    assert window.finetune_panel.runs_root == tmp_path


def test_an_elided_label_cuts_between_words_never_inside_a_number(qtbot):
    """ "validation loss 7.703" cut short reads "validation loss…", never "validation loss 7.70…"."""
    from mlm_studio.ui.widgets.elided_label import ElidedLabel

    label = ElidedLabel("stopped at step 98; validation loss 7.703 at step 75")
    qtbot.addWidget(label)
    label.show()
    metrics = label.fontMetrics()
    for end in ("stopped at step 98; validation loss 7.70", "stopped at step 98; validation lo", "stopped at st"):
        label.resize(metrics.horizontalAdvance(end + "…") + 2, 20)
        shown = label.shown_text()
        assert shown.endswith("…") and label.toolTip() == label.text()
        kept = shown.removesuffix("…")
        assert label.text().startswith(kept) and label.text()[len(kept)] in " ;", shown
    label.resize(metrics.horizontalAdvance(label.text()) + 10, 20)
    assert label.shown_text() == label.text()


def test_a_panel_that_fails_to_build_says_so_in_the_window(qtbot, tmp_path, monkeypatch):
    """A bug in building a panel ends the loading message with the error said as a bug, never an endless
    "Loading…"."""
    from mlm_studio.ui.panels.finetune import panel

    def broken(*args, **kwargs):
        raise RuntimeError("the fine-tune panel broke")

    monkeypatch.setattr(panel.FinetunePanel, "__init__", broken)
    window = MainWindow(None, restore=False, runs_root=tmp_path, deferred=True)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: "could not build" in window.loading.text(), timeout=TIMEOUT_MS)
    said = window.loading.text()
    assert said.startswith("MLM Studio could not build its window: RuntimeError: the fine-tune panel broke. This is")
    assert not window.ready


def test_the_fine_tune_chooser_follows_the_current_run_until_the_user_picks(window, mixed_runs):
    form = window.finetune_panel.form
    window.workspace.set_run(mixed_runs / "early")
    assert form.model_combo.currentData() == str(mixed_runs / "early")
    window.workspace.set_run(mixed_runs / "late")
    assert form.model_combo.currentText() == "Current run: late"
    form.model_combo.setCurrentIndex(form.model_combo.findData(str(mixed_runs / "early")))
    form.model_combo.activated.emit(form.model_combo.currentIndex())  # the user's pick
    window.workspace.set_run(mixed_runs / "late")
    assert form.model_combo.currentData() == str(mixed_runs / "early")


def restarted_on_late(qtbot, mixed_runs, settings_path):
    """A window whose current run was `late` when it closed, opened again with its remembered settings."""
    from PySide6.QtCore import QSettings

    settings = QSettings(str(settings_path), QSettings.Format.IniFormat)
    first = MainWindow(settings, runs_root=mixed_runs)
    qtbot.addWidget(first)
    qtbot.waitUntil(lambda: first.workspace.corpus is not None, timeout=TIMEOUT_MS)
    first.workspace.set_run(mixed_runs / "late")
    first.close()
    again = MainWindow(settings, runs_root=mixed_runs)
    qtbot.addWidget(again)
    return again


def test_the_current_run_is_remembered_across_a_restart(qtbot, mixed_runs, tmp_path):
    again = restarted_on_late(qtbot, mixed_runs, tmp_path / "settings.ini")
    assert again.workspace.run == mixed_runs / "late" and again.status.run_label.text() == "Current run: late"
    assert again.playground_panel.views[0].model_combo.currentText() == "Current run: late"
    qtbot.waitUntil(lambda: again.workspace.corpus is not None, timeout=TIMEOUT_MS)


def test_after_a_restart_the_training_panel_shows_the_current_run_the_status_bar_names(qtbot, mixed_runs, tmp_path):
    again = restarted_on_late(qtbot, mixed_runs, tmp_path / "settings.ini")
    training = again.training_panel
    assert again.status.run_label.text() == "Current run: late"
    assert again.workspace.shown_run == mixed_runs / "late"
    assert "late" in training.status_label.text() and "No run" not in training.status_label.text()
    assert "step_loss" in training.plots.series  # its curves, not empty plots
    hints = " ".join(hint.toPlainText() for hint in training.plots.hints.values())
    assert "next run" not in hints and "No run" not in hints
    qtbot.waitUntil(lambda: again.workspace.corpus is not None, timeout=TIMEOUT_MS)


def test_the_live_row_counts_its_tokens_and_time_with_its_step(window, mixed_runs):
    table = window.training_panel.runs.table
    table.set_live(mixed_runs / "late", "running", 44, tokens=123_456, elapsed=65.0)
    row = next(r for r in range(table.rowCount()) if table.item(r, 0).text() == "late")
    assert [table.item(row, c).text() for c in (1, 2, 6, 7)] == ["running", "44", "123 k", "1m05s"]


def test_an_idle_fine_tune_panel_shows_no_empty_progress_bar(window):
    window.show_panel(window.finetune_panel)
    assert not window.finetune_panel.progress_bar.isVisible()
