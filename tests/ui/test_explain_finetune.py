"""The Fine-tune panel's Try it tab answers "why?": the label of a text or a pair, a word's tag and a question's
answer explained off the GUI thread, and what the view shows: each word shaded with its score's sign, a pair's or
a question's two texts apart under their names, the caption naming the run and the label or answer."""

import pytest
from PySide6.QtCore import Qt

from mlm_studio.core.evaluation.explain.answer_attributions import AnswerExplainer
from mlm_studio.core.evaluation.explain.task_attributions import TaskExplainer
from mlm_studio.core.finetune.predict import fine_tuned_at
from tests.ui import test_finetune_try_it as try_it

TIMEOUT_MS, answered = try_it.TIMEOUT_MS, try_it.answered
runs, panel = try_it.runs, try_it.panel  # the Try it tab's fixtures: its runs folder and the panel on it


def why(qtbot, view):
    """Click "why?" and wait for the explanation."""
    assert view.why.isVisible()
    with qtbot.waitSignal(view.explanation.explained, timeout=TIMEOUT_MS) as done:
        qtbot.mouseClick(view.why, Qt.MouseButton.LeftButton)
    return done.args[0].attribution


def shown_words(cells):
    return [cell.text for cell in cells]


def test_why_explains_a_texts_label_with_each_words_sign(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "texts")
    assert view.why.isHidden()  # nothing answered yet: nothing to explain
    answered(qtbot, view, "return the error of a list")
    attribution = why(qtbot, view)
    expected = TaskExplainer(fine_tuned_at(runs / "texts")).explain("return the error of a list")
    assert attribution.candidate == expected.candidate and attribution.scores == pytest.approx(expected.scores)
    shown = view.explanation.attribution_view
    assert shown_words(shown.words.cells) == ["return", "the", "error", "of", "a", "list"]
    for cell, score in zip(shown.words.cells, expected.scores):
        assert f"{score:+.3g} logit" in cell.tooltip
    caption = shown.caption.text()
    assert f"Why <b>{expected.candidate}</b>" in caption and "of the text" in caption and "texts / best" in caption
    assert shown.second_words.isHidden() and view.explanation.attention_view.maps.pieces[0] == "[CLS]"


def test_why_shows_a_pairs_two_texts_apart(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "pairs")
    answered(qtbot, view, "the value of a list", "a error path")
    attribution = why(qtbot, view)
    shown = view.explanation.attribution_view
    assert (shown.first_name.text(), shown.second_name.text()) == ("<b>Text</b>", "<b>Second text</b>")
    assert shown_words(shown.words.cells) == ["the", "value", "of", "a", "list"]
    assert shown_words(shown.second_words.cells) == ["a", "error", "path"] and shown.second_words.isVisible()
    explainer = TaskExplainer(fine_tuned_at(runs / "pairs"))
    expected = explainer.explain_pair("the value of a list", "a error path")
    assert attribution.scores == pytest.approx(expected.scores) and "of the pair" in shown.caption.text()
    pieces = view.explanation.attention_view.maps.pieces  # both texts read, as the classifier reads them
    assert pieces.count("[SEP]") == 2 and len(pieces) == len(
        explainer.read_pair("the value of a list", "a error path").ids
    )
    view.pair_edit.setPlainText("")  # half a pair: the tab asks for the second text, and nothing is to be explained
    qtbot.waitUntil(lambda: view.hint.isVisible() and view.why.isHidden(), timeout=TIMEOUT_MS)
    assert view.explanation.isHidden()  # the explanation of the whole pair is put away with its answer


def test_why_explains_a_taggers_tag_of_the_word_chosen(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "texts")
    answered(qtbot, view, "the error value of the file")
    why(qtbot, view)
    assert view.explanation.isVisible()
    panel.show_run(runs / "tags")  # another run: the label explained is not its answer
    assert view.explanation.isHidden()
    answered(qtbot, view, "the error value of the file")
    assert view.word_combo.isVisible() and view.word_combo.count() == 6
    view.word_combo.setCurrentIndex(2)
    attribution = why(qtbot, view)
    expected = fine_tuned_at(runs / "tags").tag("the error value of the file".split())[2]
    assert attribution.mask == 2 and attribution.candidate == expected
    caption = view.explanation.attribution_view.caption.text()
    assert "of word 3 ('value')" in caption
    # a trained tagger: the tag's logit moved by more than a logit, and words carried it, drawn as strongly
    assert attribution.carried() and attribution.scale() == pytest.approx(abs(attribution.gap))
    assert attribution.scale() > 1
    assert f"full colour: {attribution.scale():.3g} logits" in caption and "no word moved" not in caption
    every = view.explanation.every_button  # a fine-tuned answer: Every checkpoint cannot act, and says why
    assert not every.isEnabled() and every.toolTip().startswith("Every checkpoint reads a pre-training run's")


def test_why_explains_an_answer_over_the_question_and_its_context(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "qa")
    context = "the list of a file is long . the port is red ."
    view.question_edit.setText("what is the port ?")
    answered(qtbot, view, context)
    assert view.word_combo.isHidden()
    attribution = why(qtbot, view)
    model = fine_tuned_at(runs / "qa")
    expected = AnswerExplainer(model).explain_answer("what is the port ?", context)
    assert attribution.answer == expected.answer and attribution.scores == pytest.approx(expected.scores)
    shown = view.explanation.attribution_view
    assert (shown.first_name.text(), shown.second_name.text()) == ("<b>Question</b>", "<b>Context</b>")
    assert shown_words(shown.words.cells) == ["what", "is", "the", "port", "?"]
    assert shown_words(shown.second_words.cells) == context.split()
    caption = shown.caption.text()
    assert "start logit at its first token" in caption and "window 1 of 1" in caption and "qa / best" in caption
    signs = [cell.tooltip.split(": ")[1][0] for cell in shown.second_words.cells]
    assert signs == ["+" if score >= 0 else "-" for score, part in zip(expected.scores, expected.parts) if part]


def test_a_new_why_shows_nothing_of_the_run_explained_before(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "qa")
    view.question_edit.setText("what is the port ?")
    answered(qtbot, view, "the port is red .")
    why(qtbot, view)
    panel.show_run(runs / "texts")
    answered(qtbot, view, "return the error of a list")
    explanation = view.explanation
    qtbot.waitUntil(view.why.isVisible, timeout=TIMEOUT_MS)  # the text typed answered, not the one before
    with qtbot.waitSignal(explanation.explained, timeout=TIMEOUT_MS):
        qtbot.mouseClick(view.why, Qt.MouseButton.LeftButton)
        assert explanation.status.text() == "Explaining…"  # until it arrives, nothing of the qa run's answer
        assert explanation.attribution_view.caption.text() == "" and explanation.attribution_view.words.cells == []
        assert explanation.attention_view.maps is None and explanation.attention_view.heat_map.labels == ()
    assert "texts / best" in explanation.attribution_view.caption.text()


def test_another_word_chosen_puts_the_tag_explained_away(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "tags")
    answered(qtbot, view, "the error value of the file")
    view.word_combo.setCurrentIndex(2)
    why(qtbot, view)
    view.word_combo.setCurrentIndex(4)  # word 5 chosen, not explained
    assert view.explanation.isHidden()
    combo = view.explanation.method_combo
    with qtbot.assertNotEmitted(view.explanation.explained, wait=200):  # nothing explains word 3 again
        combo.setCurrentIndex(combo.findData("occlusion"))
    attribution = why(qtbot, view)
    assert attribution.mask == 4 and attribution.method == "occlusion"
    assert "of word 5 ('the')" in view.explanation.attribution_view.caption.text()
