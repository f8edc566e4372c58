"""The whole journey with nothing of one's own, driven as a user would in the window: the built-in corpus it opens
on, a tokenizer and a short pre-training, fine-tuning on a built-in example task, then Try it; and the Fine-tune
form and the task probe's file remembered across a restart."""

import pytest
from PySide6.QtCore import QSettings

from mlm_studio.core.data.builtin_tasks import builtin_task
from mlm_studio.core.finetune.predict import fine_tuned_at
from mlm_studio.core.runs.control import IDLE
from mlm_studio.ui.main_window import MainWindow
from mlm_studio.ui.panels.corpus.report import BUILTIN_LABEL
from tests.core.helpers import small_config
from tests.ui.finetune_driving import run_to_the_end

TIMEOUT_MS = 180_000


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def launch(qtbot, settings, runs_root):
    window = MainWindow(settings, runs_root=runs_root)
    qtbot.addWidget(window)
    window.resize(1280, 720)
    window.show()
    qtbot.waitUntil(lambda: window.workspace.corpus is not None, timeout=TIMEOUT_MS)
    return window


def example_chosen(qtbot, form, name):
    form.use_example(name)
    qtbot.waitUntil(lambda: not form.examples.running, timeout=TIMEOUT_MS)


def test_from_the_built_in_corpus_to_try_it_on_a_built_in_example(qtbot, settings, tmp_path):
    window = launch(qtbot, settings, tmp_path / "runs")
    assert window.corpus_panel.table.item(0, 0).text() == BUILTIN_LABEL
    tokenizer = window.corpus_panel.tokenizer_section
    tokenizer.vocab_spin.setValue(1000)
    tokenizer.train_button.click()
    qtbot.waitUntil(lambda: window.workspace.tokenizer is not None, timeout=TIMEOUT_MS)
    window.workspace.set_config(small_config(max_steps=6, eval_interval=6, checkpoint_interval=6))
    training = window.training_panel
    training.start_button.click()
    qtbot.waitUntil(lambda: window.workspace.run is not None and training.controller.state == IDLE, timeout=TIMEOUT_MS)
    pretrained = window.workspace.run

    panel = window.finetune_panel
    window.show_panel(panel)
    form = panel.form
    assert form.model_combo.currentData() == str(pretrained)  # the run just trained
    assert "per pair with a second text column" in form.kind_combo.itemText(0)
    menu = [action.text() for action in form.example_button.menu().actions()]
    assert [text.split(":")[0] for text in menu] == ["Classification", "Pairs of texts", "Tagging (tokens)",
                                                     "Question answering"]  # fmt: skip
    example_chosen(qtbot, form, "classification")
    example = builtin_task("classification")
    assert form.task_edit.text() == str(example.train) and form.kind_combo.currentData() == "classification"
    form.epochs.setValue(0.1)
    form.learning_rate.setValue(5e-3)
    run_to_the_end(qtbot, panel)
    assert panel.message_bar.level in ("", "warning"), panel.message_bar.text  # a few sentences are cut at 64 tokens
    run = panel.run_path
    assert "macro-F1" in panel.results.summary.text()
    tested = sum(int(cell) for row in range(panel.results.confusion.rowCount())
                 for cell in (panel.results.confusion.item(row, c).text()
                              for c in range(panel.results.confusion.columnCount())))  # fmt: skip
    assert tested == example.files[2].read_text(encoding="utf-8").count("\n")  # the example's own test file

    view = panel.try_it
    panel.results.setCurrentWidget(view)
    with qtbot.waitSignal(view.runner.succeeded, timeout=TIMEOUT_MS):
        qtbot.keyClicks(view.text_edit, "The event loop runs the coroutine until it is done.")
    assert view.status.text().startswith(f"Answered by {run.name} / ")
    expected = fine_tuned_at(run).label_text("The event loop runs the coroutine until it is done.").scores
    assert {a["label"] for a in expected} == {"asyncio", "email", "http", "importlib", "logging", "unittest", "xml"}


def test_the_fine_tune_form_and_the_probe_file_are_remembered_across_a_restart(qtbot, settings, tmp_path):
    window = launch(qtbot, settings, tmp_path / "runs")
    form = window.finetune_panel.form
    example_chosen(qtbot, form, "qa")
    form.epochs.setValue(2.5)
    form.batch_size.setValue(24)
    form.doc_stride.setValue(64)
    probe = window.evaluation_panel.task_view
    probe.use_example()
    qtbot.waitUntil(lambda: not probe.examples.running, timeout=TIMEOUT_MS)
    assert probe.path_edit.text() == str(builtin_task("classification").train)
    window.close()

    again = launch(qtbot, settings, tmp_path / "runs")
    form = again.finetune_panel.form
    assert form.task_edit.text() == str(builtin_task("qa").train) and form.kind_combo.currentData() == "qa"
    assert (form.epochs.value(), form.batch_size.value(), form.doc_stride.value()) == (2.5, 24, 64)
    assert again.evaluation_panel.task_view.request()[:3] == (str(builtin_task("classification").train), "text",
                                                              "label")  # fmt: skip
    options = form.options()
    assert (options.validation, options.test) == builtin_task("qa").files[1:]  # the example's own split comes back


def test_a_damaged_remembered_form_leaves_the_defaults(qtbot, settings, tmp_path):
    settings.setValue("finetune/form", '{"epochs": "many", "batch_size": 1e9, "kind": 3, "task": ["x"]}')
    settings.setValue("evaluation/task", "[not json")
    window = launch(qtbot, settings, tmp_path / "runs")
    form = window.finetune_panel.form
    assert (form.epochs.value(), form.batch_size.value(), form.kind_combo.currentData(), form.task_edit.text()) == (
        10.0, 16, "classification", "")  # fmt: skip
    assert window.evaluation_panel.task_view.path_edit.text() == ""
