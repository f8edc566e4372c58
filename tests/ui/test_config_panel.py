from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from mlm_studio.core.config.presets import preset
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.ui.panels.config.fields import field_names
from mlm_studio.ui.panels.config.panel import INVALID, ConfigPanel
from mlm_studio.ui.workspace import Workspace


@pytest.fixture
def panel(qtbot):
    widget = ConfigPanel(Workspace())
    qtbot.addWidget(widget)
    widget.resize(1100, 760)
    widget.show()
    return widget


def type_into(qtbot, editor, text):
    editor.selectAll()
    qtbot.keyClicks(editor, text)


def test_every_engine_field_has_an_editor_with_a_tooltip(panel):
    assert field_names() <= set(panel.editors)
    assert all(editor.toolTip() for editor in panel.editors.values())


def test_hidden_size_not_divisible_by_heads_is_flagged_and_not_applied(qtbot, panel):
    before = panel.workspace.config
    with qtbot.waitSignal(panel.validity_changed) as blocker:
        type_into(qtbot, panel.editors[("model", "num_attention_heads")], "3")
    assert blocker.args[0] == "Hidden size (128) must be a multiple of Attention heads (3)"
    assert panel.error_label.isVisible() and panel.error_label.text() == blocker.args[0] + "."
    assert INVALID in panel.editors[("model", "num_attention_heads")].styleSheet()
    assert INVALID in panel.editors[("model", "hidden_size")].styleSheet()
    assert INVALID not in panel.editors[("training", "learning_rate")].styleSheet()
    assert panel.workspace.config == before
    type_into(qtbot, panel.editors[("model", "num_attention_heads")], "8")
    assert panel.error == "" and not panel.error_label.isVisible()
    assert panel.workspace.config.model.num_attention_heads == 8
    assert panel.preset_combo.currentData() == "custom"


SHARES = [("masking", "mask_fraction"), ("masking", "random_fraction"), ("masking", "keep_fraction")]


@pytest.mark.parametrize(
    ("field", "text", "message", "outlined"),
    [
        (("training", "learning_rate"), "fast", "Learning rate must be a number, not 'fast'", []),
        (("training", "learning_rate"), "2", "Learning rate must be between 0 and 1, not 2.0", []),
        (("training", "time_budget"), "soon", "Time budget: 'soon' is not a duration", []),
        (
            ("data", "max_seq_len"),
            "1024",
            "Sequence length (1024) must not exceed Max positions (512)",
            [("model", "max_position_embeddings")],
        ),
        (("masking", "mask_fraction"), "0.9", "[MASK] share, Random share and Kept share must sum to 1", SHARES),
        (("masking", "mask_fraction"), "1.5", "[MASK] share must be between 0.0 and 1.0, not 1.5", []),
        (("masking", "keep_fraction"), "-0.1", "Kept share must be between 0.0 and 1.0, not -0.1", []),
        (("masking", "rate"), "1.5", "Masking rate must be between 0 and 1 (exclusive), not 1.5", []),
    ],
)
def test_invalid_values_mark_their_fields_in_the_forms_words(qtbot, panel, field, text, message, outlined):
    type_into(qtbot, panel.editors[field], text)
    assert panel.error.startswith(message)
    marked = {key for key, editor in panel.editors.items() if INVALID in editor.styleSheet()}
    assert marked == {field, *outlined}


def test_presets_fill_the_model_and_the_summary_follows(qtbot, panel):
    panel.preset_combo.setCurrentIndex(panel.preset_combo.findData("base"))
    assert panel.editors[("model", "hidden_size")].value() == 768
    assert panel.editors[("model", "num_hidden_layers")].value() == 12
    assert panel.workspace.config.model == preset("base").model.__class__(
        **{**preset("base").model.__dict__, "vocab_size": panel.workspace.config.model.vocab_size}
    )
    params = panel.workspace.config.model.parameter_count() / 1e6
    assert f"{params:,.2f} M" in panel.summary.text() and "MiB" in panel.summary.text()


def test_precision_choices_follow_the_device(qtbot, panel):
    panel.set_devices(["cuda:0", "cpu"])
    device = panel.editors[("training", "device")]
    precision = panel.editors[("training", "precision")]
    fp16 = precision.findData("fp16")
    device.setCurrentIndex(device.findData("cpu"))
    assert not precision.model().item(fp16).isEnabled()
    device.setCurrentIndex(device.findData("cuda:0"))
    assert precision.model().item(fp16).isEnabled()
    precision.setCurrentIndex(fp16)
    device.setCurrentIndex(device.findData("cpu"))
    assert precision.currentData() == "fp32"


def test_save_and_load_toml_through_the_dialogs(qtbot, panel, tmp_path, monkeypatch):
    type_into(qtbot, panel.editors[("training", "learning_rate")], "0.0003")
    target = tmp_path / "mine.toml"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    qtbot.mouseClick(panel.save_button, Qt.MouseButton.LeftButton)
    assert RunConfig.load(target).training.learning_rate == 0.0003
    type_into(qtbot, panel.editors[("training", "learning_rate")], "0.001")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(target), ""))
    qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)
    assert panel.editors[("training", "learning_rate")].text() == "0.0003"
    assert panel.workspace.config.training.learning_rate == 0.0003


def test_a_broken_toml_is_refused_with_its_reason(qtbot, panel, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\nhidden_size = 'wide'\n")
    before = panel.workspace.config
    panel.load_path(str(bad))
    assert panel.message_bar.level == "error" and "model.hidden_size must be int, not str" in panel.message_bar.text
    assert panel.workspace.config == before


def test_the_masking_panel_and_the_form_share_one_configuration(qtbot, panel):
    from mlm_studio.ui.panels.masking.panel import MaskingPanel

    masking = MaskingPanel(panel.workspace)
    qtbot.addWidget(masking)
    masking.form.rate_spin.setValue(0.3)
    assert panel.editors[("masking", "rate")].text() == "0.3"
    type_into(qtbot, panel.editors[("data", "max_seq_len")], "64")
    assert masking.form.length_spin.value() == 64


def test_a_time_budget_is_typed_as_people_write_durations(qtbot, panel):
    editor = panel.editors[("training", "time_budget")]
    assert editor.text() == "0"
    type_into(qtbot, editor, "6m")
    assert panel.workspace.config.training.time_budget == 360.0 and not panel.error
    type_into(qtbot, editor, "soon")
    assert panel.error.startswith("Time budget: ") and INVALID in editor.styleSheet()
    assert panel.workspace.config.training.time_budget == 360.0  # the last valid value stays
    type_into(qtbot, editor, "1h30m")
    assert panel.workspace.config.training.time_budget == 5400.0
    panel.show_config(panel.workspace.config)
    assert editor.text() == "1h30m"


def test_a_preset_keeps_the_time_budget_device_and_seed_the_user_typed(qtbot, panel):
    type_into(qtbot, panel.editors[("training", "time_budget")], "6m")
    type_into(qtbot, panel.editors[("training", "seed")], "7")
    panel.preset_combo.setCurrentIndex(panel.preset_combo.findData("small"))
    training = panel.workspace.config.training
    assert (training.time_budget, training.seed) == (360.0, 7)
    assert panel.workspace.config.model.hidden_size == 512
    assert panel.editors[("training", "time_budget")].text() == "6m00s"


def test_the_summary_never_shows_figures_of_another_configuration(qtbot, panel):
    type_into(qtbot, panel.editors[("model", "num_hidden_layers")], "8")
    assert f"{panel.workspace.config.model.parameter_count() / 1e6:,.2f} M" in panel.summary.text()
    type_into(qtbot, panel.editors[("model", "num_attention_heads")], "3")
    assert "M</b> parameters" not in panel.summary.text() and "MiB" not in panel.summary.text()
    type_into(qtbot, panel.editors[("model", "num_attention_heads")], "4")
    assert f"{panel.workspace.config.model.parameter_count() / 1e6:,.2f} M" in panel.summary.text()


def test_the_family_shows_its_own_fields_and_leaves_no_foreign_values(qtbot, panel, tmp_path):
    family = panel.editors[("model", "family")]
    titles = [family.itemText(i) for i in range(family.count())]
    assert titles == ["BERT", "RoBERTa", "DistilBERT", "ModernBERT", "ELECTRA"]
    modern_only = [("model", n) for n in ("local_attention", "global_attn_every_n_layers", "global_rope_theta")]
    bert_only = [("model", n) for n in ("type_vocab_size", "position_embedding_type", "pre_layer_norm")]
    assert family.currentData() == "modernbert"  # the default preset, modern
    family.setCurrentIndex(family.findData("bert"))
    assert panel.workspace.config.model.family == "bert" and panel.error == ""
    assert all(panel.editors[k].isVisible() for k in bert_only)
    assert not any(panel.editors[k].isVisible() for k in modern_only)

    family.setCurrentIndex(family.findData("modernbert"))
    assert panel.workspace.config.model.family == "modernbert" and panel.error == ""
    assert all(panel.editors[k].isVisible() for k in modern_only) and not any(
        panel.editors[k].isVisible() for k in bert_only
    )
    assert panel.preset_combo.currentData() == "custom"
    type_into(qtbot, panel.editors[("model", "local_attention")], "32")
    assert panel.workspace.config.model.local_attention == 32

    family.setCurrentIndex(family.findData("distilbert"))  # ModernBERT's window is not carried into DistilBERT
    assert panel.workspace.config.model.family == "distilbert" and panel.workspace.config.model.options == ()
    assert not hasattr(panel.workspace.config.model, "local_attention")
    assert not panel.editors[("model", "type_vocab_size")].isVisible()
    panel.grab().save(str(tmp_path / "distilbert.png"))

    panel.preset_combo.setCurrentIndex(panel.preset_combo.findData("modern"))
    vocab = panel.workspace.config.model.vocab_size
    assert panel.workspace.config.model == replace(preset("modern").model, vocab_size=vocab)
    assert "parameters" in panel.summary.text()


def test_save_adds_the_toml_suffix_and_never_overwrites_a_file_not_named(panel, tmp_path):
    panel.save_path(str(tmp_path / "mine"))
    assert RunConfig.load(tmp_path / "mine.toml") == panel.read_config()
    assert not (tmp_path / "mine").exists() and panel.message_bar.level == "info"
    (tmp_path / "kept.toml").write_text("mine", encoding="utf-8")
    panel.save_path(str(tmp_path / "kept"))
    assert (tmp_path / "kept.toml").read_text(encoding="utf-8") == "mine"
    assert panel.message_bar.level == "error" and "kept.toml exists" in panel.message_bar.text


def test_a_refused_import_leaves_once_the_user_edits(qtbot, panel, tmp_path):
    (tmp_path / "config.json").write_text("{not json", encoding="utf-8")
    with qtbot.waitSignal(panel.import_runner.finished, timeout=60_000):
        panel.import_folder(str(tmp_path))
    assert panel.message_bar.level == "error"
    type_into(qtbot, panel.editors[("training", "learning_rate")], "0.001")
    assert panel.message_bar.level == "" and not panel.message_bar.isVisible()


def test_the_groups_reflow_when_their_own_sizes_changed_while_hidden(qtbot):
    """On a real screen a panel first laid out while another was shown gets its fields' final sizes later: the
    columns are chosen again when it is shown, not only at the next resize (a larger font, given while the panel
    is hidden, stands for that growth)."""
    from PySide6.QtWidgets import QApplication

    widget = ConfigPanel(Workspace())
    qtbot.addWidget(widget)
    widget.resize(1100, 760)
    widget.show()
    groups = widget.groups
    assert groups.columns == 3
    widget.hide()
    font = widget.font()
    font.setPointSizeF(font.pointSizeF() * 1.6)
    for box in groups.boxes.values():
        box.setFont(font)
    QApplication.processEvents()
    widget.show()
    QApplication.processEvents()
    assert groups.columns < 3
    assert groups.widget().minimumSizeHint().width() <= groups.viewport().width()


def test_a_warm_up_as_long_as_the_run_is_said(qtbot, panel):
    """60 steps with the preset's 100 warm-up steps: the rate would never reach the one configured."""
    type_into(qtbot, panel.editors[("training", "max_steps")], "60")
    assert "warm-up 100 ≥ 60 steps: the learning rate never reaches its peak" in panel.summary.text()
    type_into(qtbot, panel.editors[("training", "max_steps")], "600")
    assert "warm-up" not in panel.summary.text()
