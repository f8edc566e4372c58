"""File → Export and File → Import through the window: export a run, import it, continue pre-training it."""

import json
import shutil

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox

from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.models.hf_folder import is_hf_folder
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.main_window import MainWindow
from tests.core.helpers import with_training

TIMEOUT_MS = 120_000


@pytest.fixture
def window(qtbot, tmp_path, small_corpus, small_tokenizer, trained_runs):
    shutil.copytree(trained_runs / "late", tmp_path / "runs" / "late")  # new runs land beside it, not in the fixture
    window = MainWindow(None, restore=False, runs_root=tmp_path / "runs")
    qtbot.addWidget(window)
    window.workspace.set_corpus(small_corpus)
    window.workspace.set_tokenizer(small_tokenizer)
    window.show()
    yield window
    window.training_panel.controller.stop()
    window.training_panel.controller.wait(60_000)


def choose_folder(monkeypatch, folder):
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(folder))


def select_run(panel, name):
    for row in range(panel.runs.table.rowCount()):
        if panel.runs.table.item(row, 0).text() == name:
            panel.runs.table.selectRow(row)


def test_export_import_and_continue_pre_training_from_the_menus(qtbot, window, tmp_path, trained_runs, monkeypatch):
    training, config_panel = window.training_panel, window.config_panel
    select_run(training, "late")
    assert training.runs.export_button.isEnabled()
    out = tmp_path / "exported"
    choose_folder(monkeypatch, out)
    with qtbot.waitSignal(training.exporter.succeeded, timeout=TIMEOUT_MS):
        window.export_action.trigger()
    assert "Exported to" in training.message_bar.text and is_hf_folder(out)
    text = "Return the [MASK] of the list."
    assert FillMask.from_path(out).predict(text) == FillMask.from_path(trained_runs / "late").predict(text)

    with qtbot.waitSignal(config_panel.import_runner.finished, timeout=TIMEOUT_MS):
        window.import_action.trigger()
    imported = window.workspace.initial_model
    assert imported is not None and imported.folder == out
    assert window.stack.currentWidget() is config_panel
    assert config_panel.import_frame.isVisible() and "exported" in config_panel.import_note.text()
    assert not config_panel.editors[("model", "hidden_size")].isEnabled() and config_panel.preset_combo.isHidden()
    assert config_panel.editors[("training", "learning_rate")].isEnabled()
    assert window.workspace.config.model == RunDir(trained_runs / "late").config.model
    assert window.workspace.tokenizer is imported.tokenizer
    combo = window.playground_panel.views[0].model_combo
    assert combo.findData(str(out)) >= 0 and combo.itemText(combo.findData(str(out))) == "Hugging Face: exported"

    window.workspace.set_config(
        with_training(window.workspace.config, max_steps=3, eval_interval=3, checkpoint_interval=3)
    )
    with qtbot.waitSignal(training.run_finished, timeout=TIMEOUT_MS):
        training.start_button.click()
    run = RunDir(window.workspace.run)
    assert "continued" in run.name and run.initial_weights is not None
    assert json.loads((run.initial_weights / "origin.json").read_text())["source"] == str(out)
    assert run.latest_checkpoint().name == "step-0000003"
    late = FillMask.from_path(trained_runs / "late").model.state_dict()["bert.encoder.layer.0.output.dense.weight"]
    continued = FillMask.from_path(run.path).model.state_dict()["bert.encoder.layer.0.output.dense.weight"]
    assert (continued - late).abs().max() < 0.05 and not torch.equal(continued, late)  # it went on from there

    qtbot.mouseClick(config_panel.forget_button, Qt.MouseButton.LeftButton)
    assert window.workspace.initial_model is None and not config_panel.import_frame.isVisible()
    assert config_panel.editors[("model", "hidden_size")].isEnabled() and not config_panel.preset_combo.isHidden()


def test_a_hostile_or_broken_folder_is_refused_and_nothing_changes(qtbot, window, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert", "hidden_size": 32')
    before = window.workspace.config
    panel = window.config_panel
    with qtbot.waitSignal(panel.import_runner.finished, timeout=TIMEOUT_MS):
        panel.import_folder(str(folder))
    assert panel.message_bar.level == "error" and "config.json" in panel.message_bar.text
    assert window.workspace.initial_model is None and window.workspace.config == before
    assert panel.import_button.isEnabled() and not panel.import_frame.isVisible()


def test_export_into_a_folder_of_other_files_is_refused(qtbot, window, tmp_path, trained_runs):
    (tmp_path / "mine.txt").write_text("keep me")
    panel = window.training_panel
    with qtbot.waitSignal(panel.exporter.finished, timeout=TIMEOUT_MS):
        panel.export_run(trained_runs / "late", tmp_path)
    assert panel.message_bar.level == "error" and "not part of an export" in panel.message_bar.text
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_replacing_an_export_from_the_menu_asks_and_never_replaces_an_edited_card(
    qtbot, window, tmp_path, trained_runs, monkeypatch
):
    from mlm_studio.core.interop.export import export_model

    out = export_model(trained_runs / "late", tmp_path / "exported")
    card = out / "README.md"
    card.write_text("my own model card\n")
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *args: asked.append(args[2]) or QMessageBox.StandardButton.Yes)
    choose_folder(monkeypatch, out)
    training = window.training_panel
    select_run(training, "late")
    window.export_action.trigger()  # refused before any question or background work
    assert asked == [] and training.message_bar.level == "error"
    assert f"{card} changed since MLM Studio wrote it" in training.message_bar.text
    assert card.read_text() == "my own model card\n"
    card.unlink()
    with qtbot.waitSignal(training.exporter.succeeded, timeout=TIMEOUT_MS):
        window.export_action.trigger()
    assert asked == [f"{out} holds an exported model. Replace it?"] and "MLM Studio" in card.read_text()


def test_a_new_tokenizer_ends_the_import(qtbot, window, tmp_path, trained_runs, small_tokenizer):
    from mlm_studio.core.interop.export import export_model
    from mlm_studio.core.models.hf_folder import import_model

    imported = import_model(export_model(trained_runs / "late", tmp_path / "out"))
    window.workspace.set_initial_model(imported)
    assert window.workspace.initial_model is imported
    window.workspace.set_tokenizer(small_tokenizer)
    assert window.workspace.initial_model is None and window.config_panel.editors[("model", "hidden_size")].isEnabled()


def test_opening_a_run_from_elsewhere_keeps_the_runs_folder(qtbot, window, trained_runs):
    before = window.training_panel.runs_root
    window.open_run(trained_runs / "late")
    assert window.workspace.shown_run == trained_runs / "late" and window.workspace.run is None
    assert window.training_panel.plots.series["step_loss"].size == 40
    assert window.training_panel.runs_root == before


@pytest.mark.parametrize("family", ["roberta", "modernbert"])
def test_a_family_imports_continues_compares_and_exports_in_the_window(
    qtbot, window, tmp_path, small_corpus, monkeypatch, family
):
    """File → Import a folder `transformers` made, see its mask token in the masking preview, train it further,
    ask the imported and the continued model side by side in the playground, File → Export it again."""
    from itertools import islice

    import transformers

    from tests.core.family_folders import make_folder

    folder = make_folder(family, list(islice(small_corpus.iter_documents(), 400)), tmp_path / f"tiny-{family}")
    config_panel, training, playground = window.config_panel, window.training_panel, window.playground_panel
    choose_folder(monkeypatch, folder)
    with qtbot.waitSignal(config_panel.import_runner.finished, timeout=TIMEOUT_MS):
        window.import_action.trigger()
    imported = window.workspace.initial_model
    mask = imported.tokenizer.specials.mask
    assert imported.config.family == family and window.workspace.config.model.family == family
    family_editor = config_panel.editors[("model", "family")]
    assert family_editor.currentData() == family and not family_editor.isEnabled()
    assert mask in config_panel.message_bar.text

    masking = window.masking_panel
    window.stack.setCurrentWidget(masking)

    def masked_with(token: str) -> bool:
        return masking.preview is not None and any(t.shown == token for s in masking.preview.samples for t in s)

    qtbot.waitUntil(lambda: masked_with(mask), timeout=TIMEOUT_MS)  # the imported tokenizer's own mask token
    assert mask == "[MASK]" or not masked_with("[MASK]")

    window.workspace.set_config(with_training(window.workspace.config, max_steps=3, eval_interval=3,
                                              checkpoint_interval=3, batch_size=4))  # fmt: skip
    with qtbot.waitSignal(training.run_finished, timeout=TIMEOUT_MS):
        training.start_button.click()
    run = RunDir(window.workspace.run)
    assert run.latest_checkpoint().name == "step-0000003" and run.config.model.family == family
    assert playground.views[0].model_combo.currentData() == str(run.path)  # it follows the continued model

    window.stack.setCurrentWidget(playground)
    playground.text_edit.setText("Return the [MASK] of the list.")
    first, second = playground.views
    first.model_combo.setCurrentIndex(first.model_combo.findData(str(folder)))
    playground.compare_check.setChecked(True)
    second.model_combo.setCurrentIndex(second.model_combo.findData(str(run.path)))
    playground.predict_now()
    qtbot.waitUntil(lambda: folder.name in first.title() and run.name in second.title(), timeout=TIMEOUT_MS)
    assert len(first.buttons) == len(second.buttons) == 1 and len(first.buttons[0]) == 5
    assert all("Ġ" not in b.text() and "▁" not in b.text() for b in first.buttons[0])  # pieces as written
    window.grab().save(str(tmp_path / f"playground-{family}.png"))
    first.buttons[0][0].click()
    assert "[MASK]" not in playground.text_edit.text()

    out = tmp_path / "exported"
    choose_folder(monkeypatch, out)
    select_run(training, run.name)
    with qtbot.waitSignal(training.exporter.succeeded, timeout=TIMEOUT_MS):
        window.export_action.trigger()
    theirs = transformers.AutoModelForMaskedLM.from_pretrained(out)
    assert type(theirs).__name__.lower() == f"{family}formaskedlm"
