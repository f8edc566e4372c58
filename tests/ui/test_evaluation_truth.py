"""The Evaluation panel never shows what is not true: results leave (or say whose they are) when another model,
checkpoint or comparison is chosen; messages speak of the model shown and name what is missing; the model
compared is side by side in the samples too; a model is never its own comparison; the curves can be told apart;
and a model picked by hand stays picked (that showing a result keeps the window responsive is timed
alone: tests/ui/alone/test_evaluate_gui_time.py)."""

import shutil
import threading
from dataclasses import replace

import pytest
from PySide6.QtCore import Qt

from mlm_studio.core.evaluation.diagnosis import Diagnosis, Share
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.panels.evaluation.panel import EvaluationPanel
from mlm_studio.ui.widgets.diagnosis_views import FailuresView
from mlm_studio.ui.widgets.model_choice import NO_MODEL
from mlm_studio.ui.widgets.token_view import TokenView
from mlm_studio.ui.workspace import Workspace
from tests.core.test_diagnostics import _labelled

TIMEOUT_MS = 120_000


@pytest.fixture
def panel(evaluation_panel):
    return evaluation_panel


def choose(combo, data):
    """Choose an entry as the user does (the entry must be offered)."""
    index = combo.findData(data)
    assert index >= 0, f"{data} is not offered"
    combo.setCurrentIndex(index)


def evaluate(qtbot, panel):
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.evaluate_button, Qt.MouseButton.LeftButton)


def test_another_model_or_checkpoint_clears_every_tab_and_the_line_above_says_whose_results_left(
    qtbot, panel, trained_runs
):
    choose(panel.model_combo, str(trained_runs / "late"))
    evaluate(qtbot, panel)
    title = panel.results.subject.title
    assert panel.subject_label.text() == f"Shown: {title}." and panel.samples_view.views
    failures = panel.failures_view
    assert failures.frequency_table.rowCount() > 0 and "masked positions" in failures.summary.text()

    choose(panel.model_combo, str(trained_runs / "early"))  # another model: nothing of `late` stays under its name
    assert panel.subject_label.text() == f"Results of {title} cleared — press Evaluate for early, latest checkpoint."
    assert panel.samples_view.views == [] and panel.samples_view.hint.isVisible()
    assert failures.summary.text() == "" and failures.frequency_table.rowCount() == 0
    assert failures.kind_table.rowCount() == failures.confusion_table.rowCount() == 0
    assert failures.calibration.getPlotItem().listDataItems() == []
    assert panel.message_bar.text == "" and panel.results.subject is None
    assert not panel.task_view.probe_button.isEnabled()  # nothing evaluated: nothing to probe

    choose(panel.model_combo, str(trained_runs / "late"))
    evaluate(qtbot, panel)
    panel.checkpoint_combo.setCurrentIndex(1)  # the latest checkpoint by its name: the same model, its results stay
    assert panel.results.subject.title == title and panel.samples_view.views
    panel.checkpoint_combo.setCurrentIndex(2)  # another checkpoint of the same run
    step = panel.checkpoint_combo.currentText()
    assert panel.subject_label.text() == f"Results of {title} cleared — press Evaluate for late, {step}."
    assert panel.samples_view.views == [] and panel.failures_view.summary.text() == ""


def test_the_comparison_changed_drops_the_compared_model_and_keeps_the_evaluated_one(qtbot, panel, trained_runs):
    run = RunDir(trained_runs / "late")
    choose(panel.model_combo, str(run.path))
    choose(panel.compare_combo, str(run.checkpoints()[0]))
    evaluate(qtbot, panel)
    assert panel.subject_label.text() == f"Shown: {panel.results.subject.title} beside {panel.results.other.title}."
    choose(panel.compare_combo, str(trained_runs / "early"))  # another model compared: the one before leaves
    assert panel.results.other is None and panel.failures_view.kind_table.columnCount() == 3
    assert panel.samples_view.compared_views == [] and panel.samples_view.views
    assert panel.subject_label.text() == (
        f"Shown: {panel.results.subject.title} alone — press Evaluate to compare it with early."
    )


def test_an_error_about_one_model_leaves_when_another_is_chosen(qtbot, trained_runs, small_corpus, tmp_path, listed):
    root = tmp_path / "runs"
    shutil.copytree(trained_runs / "late", root / "broken")
    shutil.copytree(trained_runs / "early", root / "early")
    (RunDir(root / "broken").latest_checkpoint() / "model.safetensors").write_bytes(b"not weights")
    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_runs_root(root)
    panel = EvaluationPanel(workspace)
    qtbot.addWidget(panel)
    panel.show()
    listed(workspace)
    choose(panel.model_combo, str(root / "broken"))
    with qtbot.waitSignal(panel.evaluator.finished, timeout=TIMEOUT_MS):
        panel.evaluate()
    assert panel.message_bar.level == "error"
    workspace.runs_updated()  # a run wrote a checkpoint: the lists are read again, the same model is chosen
    qtbot.waitUntil(lambda: not workspace.reading_runs)
    assert panel.message_bar.level == "error" and panel.message_bar.isVisible()
    choose(panel.model_combo, str(root / "early"))
    assert panel.message_bar.text == "" and not panel.message_bar.isVisible()
    assert panel.subject_label.text() == "Nothing evaluated yet: press Evaluate to score early, latest checkpoint."


def test_a_probe_done_for_the_model_before_is_never_shown_for_the_one_chosen_since(
    qtbot, panel, trained_runs, tmp_path, monkeypatch
):
    """The probe ends, its result on its way to the window, and another model is chosen before it arrives: it is
    not shown (no rows, no word), nor is its end said."""
    from mlm_studio.ui.panels.evaluation import work

    choose(panel.model_combo, str(trained_runs / "late"))
    evaluate(qtbot, panel)
    done, probe_task = threading.Event(), work.probe_task

    def probed(*args, **options):
        result = probe_task(*args, **options)
        done.set()
        return result

    monkeypatch.setattr(work, "probe_task", probed)
    panel.task_view.path_edit.setText(str(_labelled(tmp_path / "topics.csv")))
    panel.probe()
    assert done.wait(TIMEOUT_MS / 1000)  # the window has not yet taken the result: its thread is this test's
    choose(panel.model_combo, str(trained_runs / "early"))
    with qtbot.assertNotEmitted(panel.probed), qtbot.waitSignal(panel.prober.finished, timeout=TIMEOUT_MS):
        pass
    assert panel.results.task_results == [] and panel.task_view.table.rowCount() == 0
    assert panel.message_bar.text == "" and panel.cancel_button.isHidden() and panel.evaluate_button.isEnabled()


def test_the_masked_samples_show_the_compared_model_beside_the_evaluated_one(qtbot, panel, trained_runs):
    run = RunDir(trained_runs / "late")
    choose(panel.model_combo, str(run.path))
    choose(panel.compare_combo, str(run.checkpoints()[0]))
    evaluate(qtbot, panel)
    samples = panel.samples_view
    assert len(samples.compared_views) == len(samples.views) == len(panel.results.diagnosis.samples)
    coloured = [c for view in samples.compared_views for c in view.cells if c.background is not None]
    assert len(coloured) == sum(len(s.answers) for s in panel.results.other_diagnosis.samples) > 0
    assert samples.caption.isVisible() and panel.results.other.title in samples.caption.text()
    assert "on the same held-out blocks" in samples.caption.text()  # two checkpoints of one run share them
    samples.filter_combo.setCurrentIndex(samples.filter_combo.findData("wrong"))
    assert len(samples.compared_views) == len(samples.views)
    assert "masked samples" in panel.compare_combo.purpose  # the tooltip names the views that compare
    choose(panel.compare_combo, None)
    assert samples.compared_views == [] and samples.caption.isHidden() and samples.views


def test_a_model_is_never_offered_as_its_own_comparison(qtbot, panel, trained_runs):
    run = RunDir(trained_runs / "late")
    latest, earlier = run.checkpoints()[-1], run.checkpoints()[0]
    choose(panel.model_combo, str(run.path))
    offered = [panel.compare_combo.itemData(i) for i in range(panel.compare_combo.count())]
    assert str(latest) not in offered and str(earlier) in offered  # "latest checkpoint" is the latest one
    assert str(run.path) not in offered and str(trained_runs / "early") in offered
    choose(panel.checkpoint_combo, int(earlier.name.split("-")[1]))
    offered = [panel.compare_combo.itemData(i) for i in range(panel.compare_combo.count())]
    assert str(earlier) not in offered and str(latest) in offered


def test_messages_name_what_is_missing(qtbot, panel, trained_runs):
    """The corpus is loaded, no model evaluated: the messages ask for the model only; then the other way round."""
    panel.tabs.setCurrentWidget(panel.context_view)
    panel.context_view.show_button.click()
    assert panel.message_bar.text == "Evaluate a model first: its vectors place the word's contexts."
    panel.tabs.setCurrentWidget(panel.search_view)
    panel.search_view.embed_button.click()
    assert panel.search_view.message_bar.text == "Evaluate a model first: search reads the corpus with its vectors."
    choose(panel.model_combo, str(trained_runs / "late"))
    evaluate(qtbot, panel)
    panel.workspace.set_corpus(None)
    panel.search_view.embed_button.click()
    assert panel.search_view.message_bar.text == "Load a corpus on the Corpus panel first: search finds its documents."
    panel.tabs.setCurrentWidget(panel.context_view)
    panel.context_view.show_button.click()
    assert panel.message_bar.text == "Load a corpus on the Corpus panel first: the word's contexts are its sentences."


def test_search_lists_a_repeated_text_once_tells_cosines_apart_and_forgets_them_with_the_model(
    qtbot, panel, trained_runs, small_corpus
):
    documents = list(small_corpus.iter_documents())
    repeated = next(d for d in documents if documents.count(d) > 1 and len(d) > 30)
    choose(panel.model_combo, str(trained_runs / "late"))
    evaluate(qtbot, panel)
    view = panel.search_view
    with qtbot.waitSignal(view.embedded, timeout=TIMEOUT_MS):
        view.embed_button.click()
    view.query_edit.setText(repeated)
    view.k_spin.setValue(20)
    with qtbot.waitSignal(view.searched, timeout=TIMEOUT_MS):
        qtbot.keyClick(view.query_edit, Qt.Key.Key_Return)
    texts = [view.table.item(r, 2).text() for r in range(view.table.rowCount())]
    assert len(texts) == 20 and len(set(texts)) == 20  # no paragraph twice
    assert texts[0] == f"×{documents.count(repeated)}  {' '.join(repeated.split())}"
    shown = [view.table.item(r, 1).text() for r in range(20)]
    scores = [hit.score for hit in view.hits]
    assert len(set(shown)) == len(set(scores))  # two cosines that differ read differently
    assert view.message_bar.text.startswith("The 20 distinct documents nearest")

    choose(panel.model_combo, str(trained_runs / "early"))  # the documents found were the other model's
    assert view.table.rowCount() == 0 and view.message_bar.text == "" and view.index is None


def series_looks(plot):
    items = plot.getPlotItem().listDataItems()
    return [i.opts["pen"].color().name() for i in items], [i.opts["symbol"] for i in items]


def share_diagnosis(accuracies: dict[str, float]) -> Diagnosis:
    shares = tuple(Share(name, 10, value) for name, value in accuracies.items())
    return Diagnosis(1.0, 0.0, 0.0, 10, 0.0, ((0.5, 0.5, 10),), shares, shares, (), ())


def test_curves_over_checkpoints_differ_in_colour_and_marker_and_lines_on_top_of_each_other_are_named(qtbot):
    view = FailuresView()
    qtbot.addWidget(view)
    groups = ["0–9", "10–99", "100–999", "1,000–9,999", "10,000+"]
    steps = [4, 8, 12]
    diagnoses = [
        share_diagnosis({"0–9": 0.0, "10–99": 0.0, "100–999": 0.1 * n, "1,000–9,999": 0.0, "10,000+": float("nan")})
        for n in range(3)
    ]
    diagnoses = [replace(d, accuracy=0.0) for d in diagnoses]
    view.show_series(steps, diagnoses, "late")
    colours, symbols = series_looks(view.series)
    assert len(colours) == 1 + len(groups) and len(set(colours)) == len(colours) and len(set(symbols)) == len(symbols)
    assert view.series_note.text() == (
        "The 3 checkpoints of <b>late</b>. “all”, “0–9× in the corpus”, “10–99× in the corpus” and “1,000–9,999× in "
        "the corpus” lie on top of each other (0.0% at every checkpoint). No masked token at any checkpoint, not "
        "drawn: “10,000+× in the corpus”."
    )


def test_in_compare_mode_the_two_calibrations_differ_in_marker_line_and_see_through_fill(qtbot):
    view = FailuresView()
    qtbot.addWidget(view)
    one = share_diagnosis({"word start": 0.5})
    view.show_diagnosis(one, one, ("late / step-0000040", "late / step-0000004"))
    mine, theirs = view.calibration.getPlotItem().listDataItems()[1:]
    assert mine.opts["symbol"] != theirs.opts["symbol"] and mine.opts["pen"].style() != theirs.opts["pen"].style()
    assert theirs.opts["symbolBrush"].color().alpha() < 255  # a point under it shows through
    assert view.calibration.getPlotItem().legend.names == ["perfectly calibrated", *view_titles(view)]


def view_titles(view):
    return [item.name() for item in view.calibration.getPlotItem().listDataItems()[1:]]


def test_a_model_picked_by_hand_stays_picked_when_a_run_starts(qtbot, panel, trained_runs):
    workspace = panel.workspace
    choose(panel.model_combo, str(trained_runs / "early"))
    choose(panel.model_combo, str(trained_runs / "late"))  # picked by hand
    workspace.set_run(trained_runs / "early")  # a run starts in this window
    assert panel.model_combo.currentData() == str(trained_runs / "late")
    assert panel.model_combo.findText("Current run: early") >= 0
    assert "Picked here: it stays chosen" in panel.model_combo.purpose and "current run is early" in (
        panel.model_combo.purpose
    )
    choose(panel.model_combo, str(trained_runs / "early"))  # the current run chosen again: followed from now on
    assert "follows the current run" in panel.model_combo.purpose
    workspace.set_run(trained_runs / "late")
    assert panel.model_combo.currentText() == "Current run: late"


def test_a_long_choice_is_cut_with_an_ellipsis_and_whole_in_its_tooltip(qtbot, tmp_path, listed):
    panel = EvaluationPanel(Workspace(runs_root=tmp_path))
    qtbot.addWidget(panel)
    panel.resize(700, 500)
    panel.show()
    listed(panel.workspace)
    combo = panel.model_combo
    qtbot.waitUntil(lambda: combo.shown_text() != "")
    assert combo.shown_text().endswith("…") and NO_MODEL.startswith(combo.shown_text()[:-1])
    combo.grab()  # painted: its tooltip follows what it shows
    assert combo.toolTip().startswith(NO_MODEL)


def test_a_second_evaluation_lays_out_every_block_at_its_full_height(qtbot, panel, trained_runs):
    """Evaluated again, the blocks are as tall as their wrapped tokens (they were squeezed to a line, the blocks
    of the evaluation before still painted over them)."""
    panel.resize(640, 800)
    choose(panel.model_combo, str(trained_runs / "late"))
    evaluate(qtbot, panel)
    evaluate(qtbot, panel)
    views = panel.samples_view.views
    qtbot.waitUntil(lambda: views[0].width() > 0)
    assert all(view.height() >= view.heightForWidth(view.width()) > 0 for view in views)
    body = panel.samples_view.scroll.widget()
    assert len(body.findChildren(TokenView)) == len(views)  # no block of the evaluation before is left


def test_where_it_fails_puts_each_title_on_its_table_at_the_top_of_the_tab(qtbot):
    view = FailuresView()
    qtbot.addWidget(view)
    view.resize(1090, 600)  # the tab at 1280×720
    view.show()
    view.show_diagnosis(share_diagnosis({"0–9": 0.1, "10–99": 0.2, "100–999": 0.3}))
    qtbot.waitUntil(lambda: view.frequency_table.height() > 0)
    for title, table in zip(view.titles, (view.frequency_table, view.kind_table, view.confusion_table)):
        assert title.height() <= title.sizeHint().height()  # no empty room in a title's row
        under = table.mapTo(view, table.rect().topLeft()).y() - title.mapTo(view, title.rect().bottomLeft()).y()
        assert 0 <= under <= 12, title.text()  # the table right under its title
    assert view.titles[0].mapTo(view, view.titles[0].rect().topLeft()).y() < 80  # under the summary line
