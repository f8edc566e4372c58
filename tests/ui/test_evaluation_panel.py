"""The Evaluation panel, clicked through as a user would: evaluate a run and one of its checkpoints, read the
answers and the failures, probe a labelled task; and an imported model scored on the corpus."""

import gzip

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea

from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.panels.evaluation.panel import EvaluationPanel
from mlm_studio.ui.widgets.diagnosis_views import SERIES_HEIGHT
from mlm_studio.ui.widgets.diagnosis_views import _fill as fill
from mlm_studio.ui.widgets.model_choice import NO_MODEL
from mlm_studio.ui.workspace import Workspace
from tests.core.test_diagnostics import _labelled
from tests.ui.test_live_plots import painted_labels

TIMEOUT_MS = 120_000


@pytest.fixture
def panel(evaluation_panel):
    return evaluation_panel


def test_evaluate_a_checkpoint_read_its_answers_and_failures_then_probe_a_task(qtbot, panel, trained_runs, tmp_path):
    assert not panel.task_view.probe_button.isEnabled()  # nothing evaluated: nothing to probe
    combo = panel.model_combo
    combo.setCurrentIndex(combo.findData(str(trained_runs / "late")))
    steps = [panel.checkpoint_combo.itemText(i) for i in range(panel.checkpoint_combo.count())]
    assert steps[0] == "latest checkpoint" and steps[1:] == [
        c.name for c in reversed(RunDir(trained_runs / "late").checkpoints())
    ]
    panel.checkpoint_combo.setCurrentIndex(2)
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.evaluate_button, Qt.MouseButton.LeftButton)
    diagnosis = panel.results.diagnosis
    evals = {r["step"]: r for r in RunDir(trained_runs / "late").read_metrics() if r.get("type") == "eval"}
    step = int(panel.checkpoint_combo.currentText().split("-")[1])
    assert diagnosis.accuracy == pytest.approx(evals[step]["accuracy"])
    assert panel.results.subject.title.endswith(panel.checkpoint_combo.currentText())
    assert f"{diagnosis.accuracy:.1%}" in panel.message_bar.text

    samples = panel.samples_view
    coloured = [c for view in samples.views for c in view.cells if c.background is not None]
    assert len(coloured) == sum(len(s.answers) for s in diagnosis.samples)
    assert all("1. " in c.tooltip for c in coloured)
    samples.filter_combo.setCurrentIndex(samples.filter_combo.findData("wrong"))
    wrong = [c for view in samples.views for c in view.cells if c.background is not None]
    assert len(wrong) == sum(not a.correct for s in diagnosis.samples for a in s.answers) and all(
        "→" in c.text for c in wrong
    )
    samples.sort_check.setChecked(True)
    losses = [s.loss for s in samples.ordered()]
    assert losses == sorted(losses, reverse=True)

    panel.tabs.setCurrentIndex(1)
    failures = panel.failures_view
    assert failures.frequency_table.rowCount() == len(diagnosis.by_frequency)
    assert failures.kind_table.item(0, 0).text() == "word start"
    assert failures.confusion_table.rowCount() == len(diagnosis.confusions) > 0
    assert "calibration error" in failures.summary.text()
    panel.grab().save(str(tmp_path / "failures.png"))
    for table in (failures.frequency_table, failures.kind_table):
        assert table.rowCount() >= 3 and all_rows_shown(table)
    assert panel.minimumSizeHint().height() <= 560  # the view scrolls: the panel still fits a 1280 x 720 window
    assert legend_beside_the_data(failures.calibration) == ["perfectly calibrated", panel.results.subject.title]

    panel.tabs.setCurrentIndex(3)
    assert not panel.task_view.probe_button.isEnabled()  # evaluated, but no file yet
    panel.task_view.path_edit.setText(str(_labelled(tmp_path / "topics.csv")))
    assert panel.task_view.probe_button.isEnabled()
    with qtbot.waitSignal(panel.probed, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.task_view.probe_button, Qt.MouseButton.LeftButton)
    assert panel.results.task_results[0][1].accuracy >= 0.9 and panel.task_view.table.item(1, 1).text() == "50.0%"
    probed, table = panel.results.task_results[0][1], panel.task_view.table
    assert [table.item(0, c).text() for c in (3, 4, 5)] == [
        f"{probed.recall_at_1:.1%}", f"{probed.recall_at_5:.1%}", f"{probed.mrr:.3f}"
    ]  # fmt: skip
    assert table.item(1, 3).text() == "" and table.item(2, 5).text() == f"{probed.bag_of_words_mrr:.3f}"
    assert table.isVisible() and panel.task_view.hint.text().startswith("Press Every checkpoint above to draw")
    panel.grab().save(str(tmp_path / "task.png"))


def test_an_imported_model_is_scored_on_the_workspace_corpus_and_a_bad_task_file_is_refused(
    qtbot, panel, trained_runs, tmp_path
):
    from mlm_studio.core.interop.export import export_model

    folder = export_model(trained_runs / "late", tmp_path / "exported")
    panel.add_folder(str(folder))
    assert panel.model_combo.currentText() == "Hugging Face: exported" and not panel.checkpoint_combo.isEnabled()
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        panel.evaluate()
    assert panel.results.subject.title == "exported (Hugging Face)" and panel.results.diagnosis.predicted > 0
    assert panel.samples_view.views and panel.failures_view.kind_table.rowCount() == 5
    panel.context_view.word_edit.setText("the")
    with qtbot.waitSignal(panel.mapped, timeout=TIMEOUT_MS):
        panel.context_view.show_button.click()
    assert len(panel.context_view.scatter.points()) >= 3
    panel.task_view.path_edit.setText(str(_labelled(tmp_path / "topics.csv")))
    panel.task_view.layer_spin.setValue(1)
    with qtbot.waitSignal(panel.probed, timeout=TIMEOUT_MS):
        panel.probe()
    assert panel.results.task_results[0][1].accuracy > panel.results.task_results[0][1].majority_accuracy
    assert panel.task_view.table.item(0, 0).text().startswith("exported (Hugging Face)")
    assert (panel.message_bar.level, panel.message_bar.text) == ("info", "Probed 240 labelled texts of topics.csv.")

    (tmp_path / "bad.csv").write_text("words,label\nsome text,a\n")
    panel.task_view.path_edit.setText(str(tmp_path / "bad.csv"))
    with qtbot.waitSignal(panel.prober.finished, timeout=TIMEOUT_MS):
        panel.probe()
    assert panel.message_bar.level == "error" and "no column 'text'" in panel.message_bar.text
    assert panel.evaluate_button.isEnabled() and panel.task_view.probe_button.isEnabled()

    rows = _labelled(tmp_path / "topics.csv").read_text().splitlines()
    rows[5] = "a text without its label"
    (tmp_path / "gapped.csv.gz").write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    panel.task_view.path_edit.setText(str(tmp_path / "gapped.csv.gz"))
    with qtbot.waitSignal(panel.probed, timeout=TIMEOUT_MS):
        panel.probe()
    assert panel.results.task_results[0][1].examples == 239 and panel.message_bar.level == "warning"
    assert panel.message_bar.text.splitlines() == [
        "Probed 239 labelled texts of gapped.csv.gz.",
        "1 problem line(s) not used:",
        "  line 6: row has no 'label' value (1 of 2 fields)",
    ]


def test_a_words_contexts_are_mapped_clicked_and_a_sentence_placed(qtbot, panel, trained_runs, tmp_path):
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(str(trained_runs / "late")))
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        panel.evaluate()
    view = panel.context_view
    panel.tabs.setCurrentWidget(view)
    axis = view.plot.getPlotItem().getAxis("bottom")
    assert painted_labels(axis) == ([], [])  # no map yet: no numbers on its axes
    assert view.layer_spin.maximum() == view.layer_spin.value() == panel.results.subject.config.model.num_hidden_layers
    view.word_edit.setText("the")
    with qtbot.waitSignal(panel.mapped, timeout=TIMEOUT_MS):
        qtbot.keyClick(view.word_edit, Qt.Key.Key_Return)  # Enter shows the word's contexts
    points = view.scatter.points()
    assert len(points) == len(view.context.snippets) >= 3 and "occurrences of <b>the</b>" in view.caption.text()
    assert painted_labels(axis)[1]  # the map's values marked
    view._on_click(view.scatter, [points[0]])
    assert view.nearest.count() == 6 and view.nearest.item(0).text().startswith("▶")
    view.sentence_edit.setText("Return the length of the list.")
    qtbot.keyClick(view.sentence_edit, Qt.Key.Key_Return)
    assert len(view.star.points()) == 1
    view.sentence_edit.setText("no such word")
    qtbot.mouseClick(view.place_button, Qt.MouseButton.LeftButton)
    assert panel.message_bar.level == "warning" and "does not contain 'the'" in panel.message_bar.text
    panel.grab().save(str(tmp_path / "contexts.png"))


def test_every_checkpoint_becomes_curves_of_the_breakdowns_and_the_task(qtbot, panel, trained_runs, tmp_path):
    run = RunDir(trained_runs / "late")
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(str(run.path)))
    panel.task_view.path_edit.setText(str(_labelled(tmp_path / "topics.csv")))
    with qtbot.waitSignal(panel.tracked, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.every_button, Qt.MouseButton.LeftButton)
    steps = [int(c.name.split("-")[1]) for c in run.checkpoints()]
    assert [s.step for s in panel.results.scores] == steps
    evals = {r["step"]: r for r in run.read_metrics() if r.get("type") == "eval"}
    assert all(
        s.diagnosis.accuracy == pytest.approx(evals[s.step]["accuracy"])
        for s in panel.results.scores
        if s.step in evals
    )
    curves = panel.failures_view.series.getPlotItem().listDataItems()
    assert len(curves) == 1 + len(panel.results.scores[0].diagnosis.by_frequency)
    assert list(curves[0].getData()[0]) == steps
    by = panel.failures_view.series_by
    by.setCurrentIndex(by.findData("by_kind"))
    names = [c.name() for c in panel.failures_view.series.getPlotItem().listDataItems()]
    assert names == ["all", "word start", "continuation", "[MASK]", "random", "kept"]
    task_curves = panel.task_view.series.getPlotItem().listDataItems()
    task_names = ["linear probe", "majority class", "bag of words", "same-label neighbour (recall@1)"]
    assert [c.name() for c in task_curves] == task_names
    assert list(task_curves[3].getData()[1]) == [s.task.recall_at_1 for s in panel.results.scores]
    assert all(s.task.majority_accuracy == pytest.approx(0.5) for s in panel.results.scores)
    assert legend_beside_the_data(panel.failures_view.series) == names
    assert legend_beside_the_data(panel.task_view.series) == task_names
    panel.tabs.setCurrentIndex(1)
    panel.grab().save(str(tmp_path / "curves.png"))


def test_two_checkpoints_side_by_side_in_every_view(qtbot, panel, trained_runs, tmp_path):
    run = RunDir(trained_runs / "late")
    panel.model_combo.setCurrentIndex(panel.model_combo.findData(str(run.path)))
    earliest = run.checkpoints()[0]
    compare = panel.compare_combo
    assert compare.itemData(0) is None and compare.findData(str(earliest)) > 0
    assert compare.findData(str(trained_runs / "early")) > 0  # another run too
    compare.setCurrentIndex(compare.findData(str(earliest)))
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        panel.evaluate()
    assert (
        panel.results.other.title.endswith(earliest.name)
        and panel.results.other_diagnosis.predicted == panel.results.diagnosis.predicted
    )
    kinds = panel.failures_view.kind_table
    assert kinds.columnCount() == 4 and kinds.horizontalHeaderItem(3).text() == "accuracy, compared"
    assert kinds.item(0, 3).text() == f"{panel.results.other_diagnosis.by_kind[0].accuracy:.1%}"
    assert "compared:" in panel.failures_view.summary.text()

    panel.tabs.setCurrentWidget(panel.context_view)
    panel.context_view.word_edit.setText("the")
    with qtbot.waitSignal(panel.mapped, timeout=TIMEOUT_MS):
        panel.context_view.show_button.click()
    assert panel.context_view.other_plot.isVisible() and len(panel.context_view.other_scatter.points()) >= 3

    panel.grab().save(str(tmp_path / "contexts-compared.png"))
    panel.tabs.setCurrentWidget(panel.task_view)
    panel.task_view.path_edit.setText(str(_labelled(tmp_path / "topics.csv")))
    with qtbot.waitSignal(panel.probed, timeout=TIMEOUT_MS):
        panel.probe()
    table = panel.task_view.table
    assert table.rowCount() == 4 and table.item(1, 0).text().startswith(panel.results.other.title)
    panel.grab().save(str(tmp_path / "compared.png"))

    calibration = panel.failures_view.calibration
    assert legend_beside_the_data(calibration) == [
        "perfectly calibrated",
        panel.results.subject.title,
        panel.results.other.title,
    ]

    compare.setCurrentIndex(0)  # back to one model: the compared one leaves every view at once
    assert panel.results.other is None and kinds.columnCount() == 3
    assert "compared" not in panel.failures_view.summary.text()
    assert legend_beside_the_data(calibration) == ["perfectly calibrated", panel.results.subject.title]
    assert len(calibration.getPlotItem().listDataItems()) == 2
    assert panel.context_view.other_plot.isHidden() and not panel.context_view.scatter.points().size  # stale
    assert panel.task_view.table.rowCount() == 0
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        panel.evaluate()
    assert (
        panel.results.other is None and kinds.columnCount() == 3 and len(calibration.getPlotItem().listDataItems()) == 2
    )
    compare.setCurrentIndex(compare.findData(str(earliest)))  # chosen again: compared once evaluated
    assert panel.results.other is None and panel.message_bar.text == "Evaluate to compare the two models."


def test_the_panel_opens_on_the_current_run_and_follows_it(qtbot, trained_runs, small_corpus, listed):
    workspace = Workspace()
    workspace.set_run(trained_runs / "early")
    workspace.set_runs_root(trained_runs)
    panel = EvaluationPanel(workspace)
    qtbot.addWidget(panel)
    listed(workspace)
    assert panel.model_combo.currentData() == str(trained_runs / "early")
    assert panel.model_combo.currentText() == "Current run: early"
    workspace.set_run(trained_runs / "late")  # a run trained or opened
    assert panel.model_combo.currentData() == str(trained_runs / "late")
    assert panel.model_combo.currentText() == "Current run: late"
    assert not panel.task_view.probe_button.isEnabled()


def all_rows_shown(table):
    last = table.visualItemRect(table.item(table.rowCount() - 1, 0))
    return table.viewport().rect().contains(last)


def legend_beside_the_data(plot):
    """The names in `plot`'s legend, having checked that none is drawn over its data area."""
    item = plot.getPlotItem()
    data = item.vb.sceneBoundingRect()
    for rect in item.legend.entry_rects():
        assert not item.legend.mapRectToScene(rect).intersects(data)
    return item.legend.names


def test_with_no_model_to_choose_the_chooser_says_so(qtbot, tmp_path, listed):
    widget = EvaluationPanel(Workspace(runs_root=tmp_path))
    qtbot.addWidget(widget)
    listed(widget.workspace)
    combo = widget.model_combo
    assert combo.count() == 0 and combo.currentIndex() == -1 and combo.placeholderText() == NO_MODEL
    for button in (widget.evaluate_button, widget.every_button):  # nothing to press them for, and they say why
        assert not button.isEnabled() and button.toolTip().startswith("No model chosen yet: train a run")


def test_evaluate_is_offered_once_a_model_is_chosen_and_every_checkpoint_only_for_a_run(
    qtbot, trained_runs, tmp_path, listed
):
    from mlm_studio.core.interop.export import export_model

    widget = EvaluationPanel(Workspace(runs_root=trained_runs))
    qtbot.addWidget(widget)
    listed(widget.workspace)
    widget.model_combo.setCurrentIndex(widget.model_combo.findData(str(trained_runs / "late")))
    assert widget.evaluate_button.isEnabled() and widget.every_button.isEnabled()
    assert widget.evaluate_button.toolTip().startswith("Score the chosen model")
    widget.add_folder(str(export_model(trained_runs / "late", tmp_path / "exported")))
    assert widget.evaluate_button.isEnabled() and not widget.every_button.isEnabled()
    assert "has no checkpoints" in widget.every_button.toolTip()


def test_a_message_about_one_tab_leaves_when_another_tab_is_shown(qtbot, tmp_path):
    widget = EvaluationPanel(Workspace(runs_root=tmp_path))
    qtbot.addWidget(widget)
    widget.show()
    widget.tabs.setCurrentIndex(2)
    qtbot.keyClick(widget.context_view.word_edit, Qt.Key.Key_Return)  # no model evaluated: the tab says what to do
    assert widget.message_bar.level == "warning" and "Evaluate a model" in widget.message_bar.text
    widget.tabs.setCurrentIndex(3)
    assert widget.message_bar.text == "" and not widget.message_bar.isVisible()


def test_before_any_evaluation_the_samples_tab_says_what_to_do(qtbot, tmp_path):
    widget = EvaluationPanel(Workspace(runs_root=tmp_path))
    qtbot.addWidget(widget)
    widget.resize(1100, 600)
    widget.show()
    samples = widget.samples_view
    assert samples.hint.isVisible() and "press Evaluate" in samples.hint.text()
    assert not samples.scroll.isVisible()


def test_the_curves_over_checkpoints_keep_a_readable_height_in_a_1366_by_768_window(qtbot, tmp_path):
    """The panel's share of a 1366×768 window: the curves keep their height and the tab scrolls to them."""
    widget = EvaluationPanel(Workspace(runs_root=tmp_path))
    qtbot.addWidget(widget)
    widget.resize(1180, 640)
    widget.show()
    widget.tabs.setCurrentIndex(1)
    view = widget.failures_view
    for table, rows in ((view.frequency_table, 10), (view.kind_table, 6), (view.confusion_table, 6)):
        fill(table, [(f"row {n}", "1", "50.0%") for n in range(rows)])  # as tall as a diagnosis makes them
    qtbot.waitUntil(lambda: view.series.isVisible())
    view.layout().activate()
    assert view.series.height() >= SERIES_HEIGHT
    scroll = view.findChild(QScrollArea)
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() > 0)  # the rest is a scroll away


def test_the_task_view_says_what_to_do_until_a_result_then_shows_retrieval_beside_the_probe_in_percent(qtbot):
    from mlm_studio.core.evaluation.task_probe import TaskResult
    from mlm_studio.ui.widgets.task_view import TaskView

    view = TaskView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    assert view.hint.isVisible() and "Choose a file of labelled texts" in view.hint.text()
    assert not view.table.isVisible() and not view.series.isVisible()  # no empty table, no empty 0–1 plot
    result = TaskResult(
        examples=40, accuracy=0.9, macro_f1=0.89, majority_accuracy=0.5, bag_of_words_accuracy=0.95,
        recall_at_1=0.8, recall_at_5=0.975, mrr=0.8625, bag_of_words_recall_at_1=0.7, bag_of_words_recall_at_5=1.0,
        bag_of_words_mrr=0.81,
    )  # fmt: skip
    view.show_results([("run", result)])
    headers = [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())]
    assert headers == ["classifier", "accuracy", "macro-F1", "recall@1", "recall@5", "MRR"]
    rows = [[view.table.item(r, c).text() for c in range(6)] for r in range(view.table.rowCount())]
    assert rows == [
        ["run: linear probe", "90.0%", "0.890", "80.0%", "97.5%", "0.863"],
        ["majority class", "50.0%", "", "", "", ""],
        ["bag of words (TF-IDF + logistic regression)", "95.0%", "", "70.0%", "100.0%", "0.810"],
    ]
    assert "nearest training texts" in view.table.horizontalHeaderItem(3).toolTip()
    assert view.table.isVisible() and not view.series.isVisible()  # the hint says what would draw the curves
    assert view.hint.isVisible() and view.hint.text().startswith("Press Every checkpoint above to draw")
    view.show_series([10, 20], [result, result])
    assert view.series.isVisible() and not view.hint.isVisible()
    axis = view.series.getPlotItem().getAxis("left")
    assert axis.tickStrings([0.5, 0.75, 1.0], 1.0, 0.25) == ["50%", "75%", "100%"]
    view.clear()  # another model evaluated: its probe's rows leave, the curves of the run stay
    assert not view.table.isVisible() and view.series.isVisible() and not view.hint.isVisible()


def test_the_accuracy_axes_of_the_failures_tab_read_percentages(qtbot):
    from mlm_studio.ui.widgets.diagnosis_views import FailuresView

    view = FailuresView()
    qtbot.addWidget(view)
    for plot, axes in ((view.series, ("left",)), (view.calibration, ("left", "bottom"))):
        for name in axes:
            assert plot.getPlotItem().getAxis(name).tickStrings([0.0, 0.2, 0.4], 1.0, 0.2) == ["0%", "20%", "40%"]
    assert view.series.getPlotItem().getAxis("bottom").tickStrings([0, 200], 1.0, 200) == ["0", "200"]  # steps


def step_labels(plot) -> list[str]:
    """The labels the step axis draws."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    drawn = [text for _, _, text in plot.getPlotItem().getAxis("bottom").generateDrawSpecs(painter)[2]]
    painter.end()
    return drawn


def test_the_curves_over_two_checkpoints_label_their_two_steps_alone(qtbot):
    from mlm_studio.ui.widgets.diagnosis_views import FailuresView, plot_series

    view = FailuresView()
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.show()
    plot_series(view.series, [40, 120], {"all": [0.1, 0.2]})
    qtbot.waitUntil(lambda: step_labels(view.series) != [])  # the view takes the curves' range
    assert step_labels(view.series) == ["40", "120"]
    plot_series(view.series, list(range(10, 210, 10)), {"all": [0.5] * 20})  # many checkpoints: round steps
    qtbot.waitUntil(lambda: "200" in step_labels(view.series))
    assert len(step_labels(view.series)) < 20
