"""The Fine-tune panel's Try it tab, used as a user would: a run chosen, a text typed, and what the tab shows: each
label's probability as a bar (a second text for a pair classifier), a tagger's entities as chips with each word's
tag on hover, what a long text left unread; another run chosen, no run, and a run with no weights yet."""

import shutil

import pytest
from PySide6.QtGui import QColor

from mlm_studio.core.finetune.predict import fine_tuned_at
from mlm_studio.ui.panels.finetune.results import CHIP_COLOURS
from mlm_studio.ui.panels.finetune.try_it import NO_RUN, PIECES_DIFFER, TYPE_THE_PAIR
from mlm_studio.ui.theme import contrast, readable_on

TIMEOUT_MS = 30_000


@pytest.fixture
def runs(try_it_runs):
    return try_it_runs


@pytest.fixture
def panel(qtbot, runs):
    from mlm_studio.ui.panels.finetune.panel import FinetunePanel
    from mlm_studio.ui.workspace import Workspace

    widget = FinetunePanel(Workspace(runs_root=runs))
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    widget.results.setCurrentWidget(widget.try_it)
    return widget


def answered(qtbot, view, text, pair=""):
    """Type `text` (and `pair`) and wait for the answer to be shown."""
    with qtbot.waitSignal(view.runner.succeeded, timeout=TIMEOUT_MS):
        view.text_edit.setPlainText(text)
        view.pair_edit.setPlainText(pair)


def bars(view):
    """(label, bar value, share) of each row of bars."""
    grid, rows = view.grid, []
    for row in range(grid.rowCount()):
        items = [grid.itemAtPosition(row, column) for column in range(3)]
        if all(items):
            name, bar, share = (item.widget() for item in items)
            rows.append((name.toolTip(), bar.value(), share.text()))
    return rows


def test_typing_a_text_shows_each_labels_probability_as_a_bar(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "texts")
    assert view.caption.text().startswith("Run texts: late on task.csv (classification)")
    assert view.hint.text() == "Type a text above: each label's probability appears here."
    with qtbot.waitSignal(view.runner.succeeded, timeout=TIMEOUT_MS):
        qtbot.keyClicks(view.text_edit, "return the value of a list")
    assert view.status.text().startswith("Answered by texts / best in ")
    expected = fine_tuned_at(runs / "texts").label_text("return the value of a list").scores
    assert bars(view) == [(a["label"], round(a["score"] * 1000), f"{a['score']:.1%}") for a in expected]
    assert view.pair_edit.isHidden() and view.question_edit.isHidden()  # a classifier of single texts
    assert view.hint.isHidden() and view.chips.isHidden() and view.read_note.isHidden()
    answered(qtbot, view, " ".join(["the value of a list"] * 100))
    limit = fine_tuned_at(runs / "texts").limit
    assert view.read_note.isVisible() and view.read_note.text().startswith(
        f"Cut: the model reads {limit} tokens: it read the first "
    )


def test_a_pair_classifier_takes_a_second_text(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "pairs")
    answered(qtbot, view, "the error of", "a list")
    assert view.pair_edit.isVisible()
    expected = fine_tuned_at(runs / "pairs").label_text("the error of", "a list").scores
    assert [row[0] for row in bars(view)] == [a["label"] for a in expected]
    assert [row[1] for row in bars(view)] == [round(a["score"] * 1000) for a in expected]


def test_a_pair_classifier_asks_for_the_second_text_rather_than_read_half_a_pair(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "pairs")
    answered(qtbot, view, "the error of", "a list")
    view.pair_edit.setPlainText("  ")
    view.try_now()
    assert view.hint.isVisible() and view.hint.text() == TYPE_THE_PAIR
    assert view.bars.isHidden() and view.status.isHidden()
    answered(qtbot, view, "the error of", "a list")  # typed again: answered again
    assert view.bars.isVisible()


def test_a_question_longer_than_the_model_reads_says_how_much_it_read(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "qa")
    context = "and the path of the type . the list of a file is long . the port is return ."
    question = "what is the port ? " + " ".join(["the list of a file"] * 20)
    view.question_edit.setText(question)
    answered(qtbot, view, context)
    read = fine_tuned_at(runs / "qa").answer_text(question, context).question
    assert not read.whole and view.read_note.isVisible() and view.read_note.text() == f"Cut: {read.describe()}."
    with qtbot.waitSignal(view.runner.succeeded, timeout=TIMEOUT_MS):
        view.question_edit.setText("what is the port ?")
    assert view.read_note.isHidden() and "answer" in view.status.text()


def test_a_tagger_shows_its_entities_as_chips_and_each_words_tag_on_hover(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "tags")
    text = "the file of a  error value, to the path"
    answered(qtbot, view, text)
    tagged = fine_tuned_at(runs / "tags").tag_text(text)
    chips = [cell for cell in view.chips.cells if cell.background is not None]
    entities = tagged.entities  # whole words grouped as the pipeline's "first" groups them: predict's too
    assert [c.text for c in chips] == [f"{text[e['start'] : e['end']]} · {e['entity_group']}" for e in entities]
    assert len(chips) >= 2  # four epochs find the arguments and the exceptions
    shown = "".join(cell.text.split(" · ")[0] for cell in view.chips.cells)
    assert shown.replace(" ", "") == text.replace(" ", "")  # the whole text, in order, as chips and plain words
    for word in tagged.words:  # every word's tag and score is in the tooltip of the chip that holds it
        line = f"{word['word']}: {word['entity']} {word['score']:.1%}"
        line += f" ({PIECES_DIFFER})" if word["pieces_differ"] else ""
        assert sum(line in cell.tooltip.splitlines() for cell in view.chips.cells) == 1, line
    assert view.bars.isHidden() and view.pair_edit.isHidden()
    # the chips' text is near-black or white, whichever reads on the chip: 4.5:1 at least in either scheme
    assert all(contrast(readable_on(QColor(c)), QColor(c)) >= 4.5 for c in CHIP_COLOURS)


def test_another_run_shown_answers_the_same_text_and_no_run_says_how_to_get_one(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "texts")
    answered(qtbot, view, "the file of error value")
    assert view.bars.isVisible()
    panel.show_run(runs / "tags")  # as the Runs tab does when another run is chosen
    assert view.caption.text().startswith("Run tags:")
    qtbot.waitUntil(lambda: view.status.text().startswith("Answered by tags / best"), timeout=TIMEOUT_MS)
    assert view.bars.isHidden() and view.chips.isVisible()
    assert view.text_edit.toPlainText() == "the file of error value"  # what was typed stays
    panel._show_nothing()  # a comparison reopened: no single run
    assert view.hint.text() == NO_RUN and view.status.text() == "" and view.chips.isHidden()
    assert not view.text_edit.isEnabled() and view.caption.isHidden()


def test_a_run_with_no_weights_yet_says_so_and_answers_once_it_has_them(qtbot, panel, runs, tmp_path):
    view = panel.try_it
    bare = shutil.copytree(runs / "bare", tmp_path / "bare")
    panel.show_run(bare)
    view.text_edit.setPlainText("return the value")
    view.try_now()
    assert (
        view.hint.text() == "Run bare has no weights yet; fine-tune it first: its answers appear here once it has some."
    )
    assert view.bars.isHidden() and view.status.text() == ""
    assert view.pair_edit.isHidden()  # its training file's header says single texts, weights or not
    shutil.copytree(runs / "texts" / "best", bare / "best")
    view.refresh()  # as the panel does at each checkpoint of the run it trains
    qtbot.waitUntil(lambda: view.status.text().startswith("Answered by bare / best"), timeout=TIMEOUT_MS)
    assert len(bars(view)) == 3


def test_a_text_cleared_while_it_is_answered_never_shows_the_late_answer(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "texts")
    view.text_edit.setPlainText("return the value")
    view.try_now()  # answering in the background
    view.text_edit.clear()
    view.try_now()
    qtbot.waitUntil(lambda: not view.runner.running, timeout=TIMEOUT_MS)
    assert view.hint.text() == "Type a text above: each label's probability appears here."
    assert view.bars.isHidden() and view.status.text() == ""


def test_a_run_named_like_markup_is_shown_by_its_name(qtbot, panel, runs, tmp_path):
    named = shutil.copytree(runs / "texts", tmp_path / "<h1>X&amp;Y")
    view = panel.try_it
    panel.show_run(named)
    assert view.caption.text().startswith("Run <h1>X&amp;Y: ") and view.caption.textFormat().name == "PlainText"
    with qtbot.waitSignal(view.runner.succeeded, timeout=TIMEOUT_MS):
        view.text_edit.setPlainText("return the value")
    assert view.status.text().startswith("Answered by &lt;h1&gt;X&amp;amp;Y / best in ")  # escaped: read as named


def test_an_answer_deep_in_a_long_context_is_scrolled_into_view(qtbot, panel, runs):
    view = panel.try_it
    panel.show_run(runs / "qa")
    filler = "a line of words that says nothing much .\n" * 150
    context = filler + "and the path of the type . the port is return .\n" + filler
    view.question_edit.setText("what is the port ?")
    answered(qtbot, view, context)
    best = fine_tuned_at(runs / "qa").answer_text("what is the port ?", context).answers[0]
    assert view.context.textCursor().position() == best["start"]
    shown = view.context.viewport().rect()
    assert shown.contains(view.context.cursorRect().center())
