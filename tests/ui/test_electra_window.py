"""ELECTRA through the window: choose the objective, train, watch the detection plot, see the generator's
replacements in the masking preview, and the discriminator's view of a sentence in the playground."""

import pytest

from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.main_window import MainWindow
from tests.core.helpers import small_config, with_training

TIMEOUT_MS = 120_000


@pytest.fixture
def window(qtbot, tmp_path, small_corpus, small_tokenizer):
    window = MainWindow(None, restore=False, runs_root=tmp_path / "runs")
    qtbot.addWidget(window)
    window.workspace.set_corpus(small_corpus)
    window.workspace.set_tokenizer(small_tokenizer)
    window.workspace.set_config(small_config())
    window.show()
    yield window
    window.training_panel.controller.stop()
    window.training_panel.controller.wait(60_000)


def test_an_electra_run_is_configured_trained_plotted_previewed_and_played_with(qtbot, window):
    config_panel = window.config_panel
    objective, family = config_panel.editors[("training", "objective")], config_panel.editors[("model", "family")]
    form = family.parentWidget().layout()
    generator_size = config_panel.editors[("training", "generator_size")]
    assert not form.isRowVisible(generator_size)
    objective.setCurrentIndex(objective.findData("electra"))  # as a click on the combo does
    assert family.currentData() == "electra" and form.isRowVisible(generator_size)
    assert form.isRowVisible(config_panel.editors[("model", "embedding_size")])
    config = window.workspace.config
    assert config.training.objective == "electra" and config.model.family == "electra"
    assert config.model.hidden_size == small_config().model.hidden_size  # the same size, as an ELECTRA

    window.workspace.set_config(with_training(config, max_steps=4, eval_interval=4, checkpoint_interval=4))
    training = window.training_panel
    with qtbot.waitSignal(training.run_finished, timeout=TIMEOUT_MS):
        training.start_button.click()
    run = RunDir(window.workspace.run)
    assert run.latest_checkpoint().name == "step-0000004"
    plots = training.plots
    plots.redraw(everything=True)
    assert len(plots.view.ci.items) == 7  # the detection plot joined the six
    assert {"eval_detection_auc", "step_detection_accuracy"} <= set(plots.series)

    masking = window.masking_panel
    assert masking.form.generator_check.isEnabled()
    masking.form.generator_check.setChecked(True)

    def generated():  # a preview asked for before the check may still arrive first: wait for the one after it
        preview = masking.preview
        return [t for sample in preview.samples for t in sample if t.generated is not None] if preview else []

    qtbot.waitUntil(lambda: bool(generated()), timeout=TIMEOUT_MS)
    assert all(t.kind for t in generated())  # the selected tokens, and only those
    replaced = [cell for view in masking.samples.views for cell in view.cells if "→" in cell.text]
    assert replaced and "discriminator must flag it" in replaced[0].tooltip

    playground = window.playground_panel
    view = playground.views[0]
    assert view.model_combo.currentData() == str(run.path)

    def shown(text):  # this text's prediction, not an earlier text's arriving late
        return view.prediction is not None and view.prediction.text == text

    playground.text_edit.setText("return a sorted list of the keys")  # no [MASK]: the detector alone
    qtbot.waitUntil(lambda: shown("return a sorted list of the keys"), timeout=TIMEOUT_MS)
    expected = FillMask.from_path(run.path).replaced("return a sorted list of the keys")
    assert [cell.text for cell in view.detector.cells] == [piece for piece, _ in expected]
    assert view.detector.cells[0].text == "return" and not view.detector.isHidden()
    assert [c.tooltip for c in view.detector.cells] == [
        f"{piece}: replaced with probability {p:.1%}" for piece, p in expected
    ]
    playground.text_edit.setText("return a [MASK] list")  # fill-mask through the generator
    qtbot.waitUntil(lambda: shown("return a [MASK] list"), timeout=TIMEOUT_MS)
    assert view.buttons and len(view.buttons[0]) == 5 and not view.detector.isHidden()
