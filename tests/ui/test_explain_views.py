"""The Playground explains a candidate when asked: the sentence shaded by each word's attribution (both schemes,
the numbers on hover) and every layer's and head's attention, computed off the GUI thread."""

from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QPushButton

from mlm_studio.core.data.masking import MaskKind
from mlm_studio.core.evaluation.diagnosis import Answer
from mlm_studio.core.evaluation.explain.attention import AttentionMaps
from mlm_studio.core.evaluation.explain.attributions import Attribution, Explainer
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.panels.evaluation.explained_samples import MASKING_DID, where_answered
from mlm_studio.ui.panels.playground.panel import EXPLAINED_IS_GONE, PlaygroundPanel
from mlm_studio.ui.theme import apply_scheme
from mlm_studio.ui.widgets.attention_view import AttentionView
from mlm_studio.ui.widgets.attribution_view import OPPOSES, SUPPORTS, AttributionView, diverging
from mlm_studio.ui.widgets.explanation import Question
from mlm_studio.ui.workspace import Workspace

TIMEOUT_MS = 60_000
TEXT = "Return the [MASK] of the [MASK]."


@pytest.fixture
def panel(qtbot, trained_runs, listed):
    widget = PlaygroundPanel(Workspace(runs_root=trained_runs))
    qtbot.addWidget(widget)
    widget.resize(1100, 800)
    widget.show()
    listed(widget.workspace)
    combo = widget.views[0].model_combo
    combo.setCurrentIndex(next(i for i in range(combo.count()) if combo.itemText(i) == "late"))
    with qtbot.waitSignal(widget.predicted, timeout=TIMEOUT_MS):
        widget.text_edit.setText(TEXT)
    return widget


def why_buttons(view):
    return [b for b in view.body.findChildren(QPushButton) if b.text() == "why?"]


def test_why_explains_that_candidate_at_that_mask(qtbot, panel, trained_runs):
    view = panel.views[0]
    assert len(why_buttons(view)) == sum(len(buttons) for buttons in view.buttons)
    candidate = view.buttons[1][2]  # the second mask's third candidate
    expected_id = FillMask.from_path(trained_runs / "late", int8=True).predict(TEXT)[1][2].token_id
    with qtbot.waitSignal(panel.explanation.explained, timeout=TIMEOUT_MS) as done:
        qtbot.mouseClick(why_buttons(view)[len(view.buttons[0]) + 2], Qt.MouseButton.LeftButton)
    explanation = done.args[0]
    attribution = explanation.attribution
    assert (attribution.mask, attribution.candidate_id, attribution.method) == (1, expected_id, "ig")
    assert candidate.isVisible()
    exact = Explainer.of(FillMask.from_path(trained_runs / "late")).explain(TEXT, expected_id, mask=1)
    assert attribution.scores == pytest.approx(exact.scores, abs=1e-6)
    words = panel.explanation.attribution_view.words
    assert [cell.text for cell in words.cells] == list(attribution.words)
    assert all(f"{score:+.3g} logit" in cell.tooltip for cell, score in zip(words.cells, attribution.scores))
    assert "[MASK] 2" in panel.explanation.attribution_view.caption.text()
    maps = panel.explanation.attention_view.maps
    assert maps.maps.shape[:2] == (1, 2) and maps.pieces[0] == "[CLS]"


def test_each_why_is_a_button_that_looks_like_one_right_beside_its_candidate_s_share(panel):
    view = panel.views[0]
    grid = view.grid
    for why in why_buttons(view):
        assert not why.isFlat() and not why.icon().isNull()
        row = grid.getItemPosition(grid.indexOf(why))[0]
        share = grid.itemAtPosition(row, 2).widget()
        assert share.text().endswith("%")
        assert 0 <= why.geometry().left() - share.geometry().right() <= 2 * grid.horizontalSpacing() + 8
        assert abs(why.geometry().center().y() - share.geometry().center().y()) <= 2


def test_another_method_explains_the_same_question_again(qtbot, panel):
    with qtbot.waitSignal(panel.explanation.explained, timeout=TIMEOUT_MS):
        qtbot.mouseClick(why_buttons(panel.views[0])[0], Qt.MouseButton.LeftButton)
    combo = panel.explanation.method_combo
    with qtbot.waitSignal(panel.explanation.explained, timeout=TIMEOUT_MS) as done:
        combo.setCurrentIndex(combo.findData("occlusion"))
    assert done.args[0].attribution.method == "occlusion"
    assert "probability units" in panel.explanation.attribution_view.caption.text()


def test_an_explanation_that_fails_says_why(qtbot, panel, trained_runs):
    explanation = panel.explanation
    with qtbot.waitSignal(explanation.explained, timeout=TIMEOUT_MS):
        qtbot.mouseClick(why_buttons(panel.views[0])[0], Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(explanation.formed, timeout=TIMEOUT_MS):
        qtbot.mouseClick(explanation.every_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(explanation.failed, timeout=TIMEOUT_MS) as failed:
        explanation.ask(Question(str(trained_runs / "late"), 0, 5, text="No mask any more."))
    assert "no [MASK]" in failed.args[0] and "no [MASK]" in explanation.status.text()
    # nothing of the explanation before stays beside the error
    assert explanation.attribution_view.caption.text() == "" and explanation.attribution_view.words.cells == []
    assert explanation.attention_view.maps is None and explanation.attention_view.heat_map.labels == ()
    assert explanation.attention_view.layer_combo.count() == 0 and explanation.forming_view.rows == []


def test_why_on_candidates_of_an_edited_text_explains_the_text_they_came_from(qtbot, panel):
    """Between an edit and the next predictions, the candidates shown are still the old text's: why? explains
    them there, not at whichever mask of the new text has their number."""
    view = panel.views[0]
    first = view.prediction.masks[0][0]
    panel.text_edit.setText("The [MASK] said: " + TEXT)  # the predictions wait for the typing to pause
    with qtbot.waitSignal(panel.explanation.explained, timeout=TIMEOUT_MS) as done:
        qtbot.mouseClick(why_buttons(view)[0], Qt.MouseButton.LeftButton)
    attribution = done.args[0].attribution
    assert attribution.text == TEXT and attribution.candidate_id == first.token_id
    assert attribution.words[:2] == ("Return", "the")
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        pass  # the new text's predictions arrive: the candidates explained are gone, and so is their explanation
    assert panel.explanation.question is None and panel.explanation.attribution_view.words.cells == []
    assert panel.explanation.status.text() == EXPLAINED_IS_GONE


def test_another_model_chosen_puts_the_playgrounds_explanation_away(qtbot, panel):
    with qtbot.waitSignal(panel.explanation.explained, timeout=TIMEOUT_MS):
        qtbot.mouseClick(why_buttons(panel.views[0])[0], Qt.MouseButton.LeftButton)
    combo = panel.views[0].model_combo
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        combo.setCurrentIndex(next(i for i in range(combo.count()) if combo.itemText(i) == "early"))
    assert panel.explanation.question is None and panel.explanation.attribution_view.caption.text() == ""
    assert panel.explanation.status.text() == EXPLAINED_IS_GONE
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.top_k_spin.setValue(3)  # the same model and sentence: an explanation asked now stays
    with qtbot.waitSignal(panel.explanation.explained, timeout=TIMEOUT_MS):
        qtbot.mouseClick(why_buttons(panel.views[0])[0], Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.top_k_spin.setValue(4)
    assert panel.explanation.question is not None and panel.explanation.attribution_view.words.cells


def test_a_barely_trained_models_explanation_is_pale_and_says_no_word_carried_it(qtbot, panel):
    """The `late` run (40 steps) predicts the commonest words anywhere: its logit barely moves, and the words are
    drawn pale beside a sentence that says so, whichever method."""
    combo = panel.explanation.method_combo
    for method in ("ig", "occlusion"):
        combo.setCurrentIndex(combo.findData(method))
        with qtbot.waitSignal(panel.explanation.explained, timeout=TIMEOUT_MS) as done:
            qtbot.mouseClick(why_buttons(panel.views[0])[0], Qt.MouseButton.LeftButton)
        attribution, shown = done.args[0].attribution, panel.explanation.attribution_view
        assert not attribution.carried()
        assert f"no word moved this prediction by more than {attribution.largest():.3g}" in shown.caption.text()
        base = shown.palette().color(shown.palette().ColorRole.Base)
        assert all(_channel_gap(cell.background, base) < 0.1 for cell in shown.words.cells)


def _channel_gap(colour, base):
    return max(abs(x - y) for x, y in zip(colour.getRgbF()[:3], base.getRgbF()[:3]))


def _attribution(scores):
    words = tuple(f"w{n}" for n in range(len(scores)))
    spans = tuple((3 * n, 3 * n + 2) for n in range(len(scores)))
    return Attribution("ig", "logit", " ".join(words), words, spans, tuple(scores), 0, "x", 7, 0.5)


def test_a_caption_says_when_the_words_miss_the_logits_change(qtbot):
    view = AttributionView()
    qtbot.addWidget(view)
    close = replace(_attribution([0.5, 0.49]), steps=32, baseline="pad", total=0.995, gap=1.0)
    view.show_attribution(close)
    assert "the words sum to +0.995 of the logit's +1 change" in view.caption.text()
    assert "full colour: 1 logit" in view.caption.text() and "no word moved" not in view.caption.text()
    assert "missing" not in view.caption.text()
    view.show_attribution(replace(close, total=0.978))
    assert "missing it by 2.2%</b> (more steps" in view.caption.text()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_shades_diverge_in_either_scheme(qtbot, scheme):
    app = QApplication.instance()
    apply_scheme(app, scheme)
    try:
        view = AttributionView()
        qtbot.addWidget(view)
        view.show_attribution(_attribution([2.0, -1.0, 0.0]))
        base = view.palette().color(view.palette().ColorRole.Base)
        supports, opposes, neutral = (cell.background for cell in view.words.cells)
        assert neutral == diverging(0.0, base) and neutral.name() == base.name()
        assert _closer(supports, QColor(SUPPORTS), base) and _closer(opposes, QColor(OPPOSES), base)
        assert view.words.cells[1].tooltip == "w1: -1 logit (-100% of full colour, 1 logit)"
    finally:
        apply_scheme(app, "light")


def _closer(colour, target, base):
    distance = lambda a, b: sum((x - y) ** 2 for x, y in zip(a.getRgbF()[:3], b.getRgbF()[:3]))  # noqa: E731
    return distance(colour, target) < distance(base, target)


def test_the_attention_view_shows_a_head_the_mean_or_the_rollout(qtbot):
    rng = np.random.default_rng(0)
    raw = rng.random((2, 3, 4, 4)).astype(np.float32)
    maps = AttentionMaps(("[CLS]", "a", "b", "[SEP]"), raw / raw.sum(-1, keepdims=True))
    view = AttentionView()
    qtbot.addWidget(view)
    view.resize(700, 400)
    view.show()
    view.show_maps(maps)
    np.testing.assert_allclose(view.shown(), maps.maps[0].mean(0))
    grid = view.grid
    qtbot.mouseClick(grid, Qt.MouseButton.LeftButton, pos=QPoint(2 * 44 + 5, 44 + 5))  # layer 2, head 3
    np.testing.assert_allclose(view.shown(), maps.maps[1, 2])
    view.layer_combo.setCurrentIndex(view.layer_combo.findData("rollout"))
    np.testing.assert_allclose(view.shown(), maps.rollout())
    assert not view.head_combo.isEnabled()
    heat = view.heat_map
    assert heat.cell_at(QPoint(heat._margin() + 1, heat._margin() + heat._cell() + 1)) == (1, 0)


def test_clicking_an_answer_in_the_masked_samples_explains_it(qtbot, evaluation_panel, trained_runs):
    panel = evaluation_panel
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(str(trained_runs / "late")))
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.evaluate_button, Qt.MouseButton.LeftButton)
    samples = panel.samples_view
    sample = samples.samples[0]
    wrong = next((a for a in sample.answers if not a.correct), sample.answers[0])
    view = samples.views[0]
    explanation = panel.explained_samples.explanation
    with qtbot.assertNotEmitted(explanation.explained, wait=50):  # a token without an answer asks nothing
        qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=view.cell_rect(0).center())
    with qtbot.waitSignal(explanation.explained, timeout=TIMEOUT_MS) as done:
        qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=view.cell_rect(wrong.position).center())
    attribution = done.args[0].attribution
    assert attribution.candidate_id == wrong.top[0]
    assert attribution.probability == pytest.approx(wrong.probabilities[0], abs=1e-5)
    expected = Explainer(panel.results.subject.model, panel.results.subject.tokenizer).explain_pieces(
        sample.shown, wrong.position
    )
    assert attribution.scores == pytest.approx(expected.scores, abs=1e-6)
    assert explanation.attention_view.maps.maps.shape[-1] == len(explanation.attention_view.maps.pieces)
    caption = explanation.attribution_view.caption.text()
    assert f"at position {wrong.position}, {MASKING_DID[MaskKind(wrong.kind)].split(' ')[0]}" in caption
    assert "[MASK]" not in caption or wrong.kind == MaskKind.MASK
    with qtbot.waitSignal(explanation.formed, timeout=TIMEOUT_MS) as formed:  # the answer as it formed
        qtbot.mouseClick(explanation.every_button, Qt.MouseButton.LeftButton)
    steps = [int(c.name.split("-")[1]) for c in RunDir(trained_runs / "late").checkpoints()]
    assert [f.step for f in formed.args[0]] == steps and len(explanation.forming_view.rows) == len(steps)
    last = formed.args[0][-1].attribution  # the latest checkpoint: the weights the samples were scored with
    assert last.candidate_id == attribution.candidate_id and last.scores == pytest.approx(attribution.scores, abs=1e-6)


def test_another_model_chosen_puts_the_explained_answer_away(qtbot, evaluation_panel, trained_runs):
    panel = evaluation_panel
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(str(trained_runs / "late")))
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.evaluate_button, Qt.MouseButton.LeftButton)
    explanation = panel.explained_samples.explanation
    view, answer = panel.samples_view.views[0], panel.samples_view.samples[0].answers[0]
    with qtbot.waitSignal(explanation.explained, timeout=TIMEOUT_MS):
        qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=view.cell_rect(answer.position).center())
    with qtbot.waitSignal(explanation.formed, timeout=TIMEOUT_MS):
        qtbot.mouseClick(explanation.every_button, Qt.MouseButton.LeftButton)
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(str(trained_runs / "early")))
    assert "cleared — press Evaluate for early" in panel.subject_label.text()
    assert not explanation.every_button.isEnabled() and explanation.question is None
    assert explanation.attribution_view.caption.text() == "" and explanation.attribution_view.words.cells == []
    assert explanation.attention_view.maps is None and explanation.forming_view.rows == []
    assert explanation.status.text().startswith("Click a coloured token")


@pytest.mark.parametrize(
    ("kind", "said"),
    [(MaskKind.MASK, "at position 17, masked"), (MaskKind.RANDOM, "at position 17, randomly replaced by cat"),
     (MaskKind.KEPT, "at position 17, kept as it was")],
)  # fmt: skip
def test_an_answer_is_placed_by_its_position_and_what_masking_did_there(kind, said):
    assert where_answered(Answer(17, 5, kind, (5,), (0.5,)), "cat") == said


def test_every_checkpoint_shows_the_attribution_as_it_formed(qtbot, panel, trained_runs):
    explanation = panel.explanation
    assert not explanation.every_button.isEnabled()  # nothing asked yet, and its tooltip says so
    assert explanation.every_button.toolTip().startswith("Click “why?” beside a prediction first")
    with qtbot.waitSignal(explanation.explained, timeout=TIMEOUT_MS) as done:
        qtbot.mouseClick(why_buttons(panel.views[0])[0], Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(explanation.formed, timeout=TIMEOUT_MS) as formed:
        qtbot.mouseClick(explanation.every_button, Qt.MouseButton.LeftButton)
    steps = [int(c.name.split("-")[1]) for c in RunDir(trained_runs / "late").checkpoints()]
    assert [f.step for f in formed.args[0]] == steps
    assert len(explanation.forming_view.rows) == len(steps)
    assert explanation.tabs.currentWidget() is explanation.forming_view
    last = formed.args[0][-1].attribution
    assert last.candidate_id == done.args[0].attribution.candidate_id
    assert last.scores == pytest.approx(done.args[0].attribution.scores, abs=1e-6)
    caption = explanation.forming_view.caption.text()  # which candidate, by which method, on which one scale
    assert caption.startswith(f"Why <b>{last.candidate}</b> at [MASK] 1, at each checkpoint: integrated gradients")
    assert "every row on one scale, full colour: 1 logit" in caption
    assert "At no checkpoint did a word move this prediction by more than" in caption  # 40 steps learn no context


def test_why_in_iterative_mode_explains_the_context_the_candidate_came_from(qtbot, panel):
    """A mask filled after another was predicted with that one holding its first candidate: that is what why?
    explains, so the probability explained is the one shown."""
    panel.exact_check.setChecked(True)
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.mode_combo.setCurrentIndex(panel.mode_combo.findData(True))
    view = panel.views[0]
    contexts = view.prediction.contexts
    later = next(number for number, context in enumerate(contexts) if context.filled_before)
    earlier = contexts[later].filled_before[0]
    shown = view.prediction.masks[later][0]
    with qtbot.waitSignal(panel.explanation.explained, timeout=TIMEOUT_MS) as done:
        qtbot.mouseClick(why_buttons(view)[sum(len(b) for b in view.buttons[:later])], Qt.MouseButton.LeftButton)
    attribution = done.args[0].attribution
    assert attribution.candidate_id == shown.token_id
    assert attribution.probability == pytest.approx(shown.score, abs=1e-5)
    assert f"({shown.score:.1%})" in panel.explanation.attribution_view.caption.text()
    assert attribution.words.count("[MASK]") == len(contexts) - len(contexts[later].filled_before)  # filled ones read
    caption = panel.explanation.attribution_view.caption.text()
    assert f"at [MASK] {later + 1}, after filling [MASK] {earlier + 1} as" in caption
    assert panel.explanation.every_button.isEnabled()  # the same context at each checkpoint of the run
