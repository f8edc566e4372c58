"""The Fine-tune panel's question answering, driven as a user would: the kind chosen shows its document stride and
longest answer, a run on a SQuAD v2.0 file ends with exact match and F1 (answered and unanswerable questions apart)
naming its run, and its wrong answers are shown in their contexts, the gold and the predicted spans marked in two
colours readable in either scheme."""

import html
import re
import subprocess
import sys

import pytest
from PySide6.QtWidgets import QApplication

from mlm_studio.core.finetune.mistakes import AnswerMistake, wrong_answers
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.panels.finetune.answers import AnswerMistakesView
from mlm_studio.ui.theme import SPANS, apply_scheme, readable_on, span_colour
from tests.core.qa_tasks import write_squad
from tests.ui.finetune_driving import fill, run_to_the_end


def marked(text, name):
    colour = span_colour(name)
    return f"background:{colour.name()};color:{readable_on(colour).name()}'>{text}</span>"


def test_a_question_answerer_shows_its_scores_and_its_wrong_answers_in_their_contexts(qtbot, finetune_panel, tmp_path):
    panel = finetune_panel
    form = panel.form
    assert form.qa_row.isHidden()  # classification: no document stride to set
    fill(panel, write_squad(tmp_path / "squad.json", contexts=30, facts=1, impossible=True), kind="qa")
    assert not form.qa_row.isHidden() and (form.doc_stride.value(), form.max_answer_length.value()) == (128, 30)
    form.doc_stride.setValue(16)
    form.max_answer_length.setValue(10)
    run_to_the_end(qtbot, panel)
    assert panel.message_bar.level in ("", "warning"), panel.message_bar.text()
    test, run = panel.test, panel.run_path
    assert [c.text() for c in panel.results.captions] == [f"Run {run.name}: late on squad.json (qa)"] * 3
    summary = panel.results.summary.text()
    assert f"exact match <b>{test.exact_match:.1%}</b>, F1 <b>{test.f1:.1%}</b>" in summary
    assert f"without one: exact {test.no_answer_exact_match:.1%}" in summary
    assert panel.results.tables.isHidden()  # no labels, no confusion matrix
    assert f"test answer F1 {test.f1:.1%} with the best checkpoint" in panel.status_label.text()
    assert panel.plots.plots["validation"].getAxis("left").labelText == "validation answer F1"
    assert "validation_f1" in panel.plots.series  # the curve of the score that chose the best checkpoint
    expected = wrong_answers(run)
    view = panel.results.answers
    assert not view.isHidden() and panel.results.mistakes.isHidden() and panel.results.spans.isHidden()
    assert (
        panel.results.mistakes_label.text()
        == f"{len(expected):,} test questions answered wrongly (not exactly a gold answer)."
    )
    assert view.mistakes == expected and expected
    shown = view.toHtml()
    for mistake in expected:
        assert mistake.question in shown and f"row {mistake.row} (id {mistake.id})" in shown

    # Try it: a question typed about a context, answered by the run shown, its span marked and its score said
    asked = expected[0]
    try_it = panel.try_it
    panel.results.setCurrentWidget(try_it)
    try_it.question_edit.setText(asked.question)
    try_it.text_edit.setPlainText(asked.context)
    best = FineTuned(RunDir(run)).answer(asked.question, asked.context)[0]  # "no answer" among its answers (v2)
    said = (
        f"answer: <b>{html.escape(best['answer'])}</b>, score {best['score']:.1%}"
        if best["answer"]
        else "no answer found in the context"
    )
    qtbot.waitUntil(lambda: said in try_it.status.text(), timeout=30_000)
    assert try_it.status.text().startswith(f"Answered by {run.name} / best in ")
    assert try_it.question_edit.isVisible() and try_it.bars.isHidden() and try_it.chips.isHidden()
    marked = re.findall(r'<span style="[^"]*background-color:[^"]*">([^<]*)</span>', try_it.context.toHtml())
    assert marked == ([html.escape(asked.context[best["start"] : best["end"]])] if best["answer"] else [])

    # Export: how transformers 5 loads it, and, while another process trains the run, that these are its weights so far
    exported = tmp_path / "exported"
    with qtbot.waitSignal(panel.exporter.succeeded, timeout=60_000):
        panel.exporter.export(run, exported)
    assert (
        panel.message_bar.level == "info"
        and "AutoModelForQuestionAnswering and AutoTokenizer" in panel.message_bar.text
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with qtbot.waitSignal(panel.exporter.succeeded, timeout=60_000):
            panel.exporter.export(run, tmp_path / "again")
    finally:
        holder.communicate("")
    assert panel.message_bar.level == "warning"
    assert f"is still being trained by process {holder.pid}" in panel.message_bar.text


def test_gold_and_predicted_spans_are_marked_apart_and_together_in_either_scheme(qtbot):
    view = AnswerMistakesView()
    qtbot.addWidget(view)
    context = "filler " * 40 + "the colour is dark blue today . the size is red"
    start = context.index("dark blue")
    mistake = AnswerMistake(
        7, "q7", "what is the colour ?", context, (("dark blue", start),), ("blue today", start + 5, start + 15)
    )
    for scheme in ("light", "dark"):
        apply_scheme(QApplication.instance(), scheme)
        QApplication.processEvents()
        try:
            view.show_mistakes([mistake])
            html = view.context_html(mistake)
            assert html.startswith("…" + context[start - 160 : start])  # cut 160 characters before the answers
            assert marked("dark ", "gold") in html and marked("blue", "both") in html
            assert marked(" today", "predicted") in html
            assert span_colour("gold").name() == SPANS[scheme]["gold"]
            assert len({SPANS[scheme][name] for name in ("gold", "predicted", "both")}) == 3
            assert re.search(r"gold:.*“dark blue”.*predicted:.*“blue today”", view.toPlainText().replace("\n", " "))
        finally:
            apply_scheme(QApplication.instance(), "light")
            QApplication.processEvents()


@pytest.mark.parametrize("predicted", [("", 0, 0), ("red", 0, 0)])
def test_an_unanswerable_question_or_a_no_answer_is_said_in_words(qtbot, predicted):
    view = AnswerMistakesView()
    qtbot.addWidget(view)
    context = "the size is red"
    guess = (predicted[0], context.index("red"), len(context)) if predicted[0] else predicted
    gold = () if predicted[0] else (("red", context.index("red")),)
    view.show_mistakes([AnswerMistake(1, "q1", "what is the size ?", context, gold, guess)])
    said = view.toPlainText()
    assert ("gold: no answer · predicted: “red”" if predicted[0] else "gold: “red” · predicted: no answer") in said


def test_a_question_answerers_test_scores_fill_the_top_of_their_tab_as_a_table(qtbot):
    from dataclasses import replace

    from PySide6.QtWidgets import QWidget

    from mlm_studio.core.runs.records import TestRecord
    from mlm_studio.ui.panels.finetune.results import ResultsView

    view = ResultsView(QWidget())
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    view.setCurrentWidget(view.scores)
    test = TestRecord(9, tokens_seen=0, elapsed=0.0, epoch=1.0, loss=0.5, accuracy=None, macro_f1=None, best_step=9,
                      labels=(), per_class=(), confusion=(), exact_match=0.5, f1=0.625, has_answer_exact_match=0.25,
                      has_answer_f1=0.5, no_answer_exact_match=0.75)  # fmt: skip
    view.set_subject("Run qa: late on squad.json (qa)")
    view.show_test(test, tagging=False)
    table = view.answer_table
    rows = [[table.item(r, c).text() for c in range(3)] for r in range(table.rowCount())]
    assert rows == [["all", "50.0%", "62.5%"], ["with an answer", "25.0%", "50.0%"], ["without one", "75.0%", "75.0%"]]
    assert table.isVisible() and view.tables.isHidden()
    qtbot.waitUntil(lambda: view.summary.y() < 80)  # laid out: the summary and the table at the top of the tab
    assert view.summary.height() < 3 * view.summary.fontMetrics().lineSpacing()  # not stretched over the tab
    assert table.geometry().top() >= view.summary.geometry().bottom()
    assert table.geometry().bottom() < view.scores.height() // 2
    view.show_test(replace(test, has_answer_f1=None, has_answer_exact_match=None, no_answer_exact_match=None), False)
    assert table.rowCount() == 1
    view.show_test(replace(test, has_answer_f1=float("nan"), has_answer_exact_match=float("nan")), False)
    assert [table.item(r, 0).text() for r in range(table.rowCount())] == ["all", "without one"]  # none answered
    view.clear()
    assert table.isHidden() and table.rowCount() == 0


HOLD_THE_LOCK = """
import sys
from mlm_studio.core.storage.lock import RunLock
with RunLock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""
