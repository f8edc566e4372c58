"""The Fine-tune panel never shows what is not true, driven as a user would: a run that trained all its steps is
said completed, not stopped early; after Compare every single-run tab names the contender and seed it shows; the
Runs tab lists a comparison as one item that reopens its table, plot and verdict, and a run that names itself in
every tab; every score names its metric, the training accuracy and the validation score on plots of their own;
Compare says what it will run; numbers read as typed; the comparison table is as tall as its rows; mistakes one
line each; and the panel stays within 700 px in every state."""

import statistics

import pytest
from PySide6.QtWidgets import QWidget

from mlm_studio.core.finetune.compare import SCRATCH_LABEL, YOURS, Contender, Outcome, compare
from mlm_studio.core.finetune.comparisons import read_comparison
from mlm_studio.core.finetune.mistakes import Mistake
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.control import IDLE, PAUSED
from mlm_studio.core.runs.records import FinishedRecord, StartedRecord, StepRecord, TestRecord, ValidationRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.panels.finetune.comparison import ComparisonView
from mlm_studio.ui.panels.finetune.plots import VALIDATION
from mlm_studio.ui.panels.finetune.results import ResultsView
from tests.core.test_finetune import write_task
from tests.ui.finetune_driving import TIMEOUT_MS, cells, fill, run_to_the_end
from tests.ui.test_finetune_window import written_tests

NARROWEST = 700  # the panel's widest minimum: the window keeps within 900 px beside the navigation


def off_diagonal(confusion):
    return sum(count for r, row in enumerate(confusion) for c, count in enumerate(row) if r != c)


def captions(panel):
    return [caption.text() for caption in panel.results.captions if not caption.isHidden()]


def test_a_run_that_trains_every_step_is_completed_and_each_score_names_its_metric(qtbot, finetune_panel, tmp_path):
    """A learning rate too small to change the score: the patience (two evaluations) runs out at the third and
    last evaluation, when the run has trained every step anyway."""
    panel = finetune_panel
    fill(panel, write_task(tmp_path / "task.csv", rows=60), epochs=3.0)
    panel.form.learning_rate.setValue(1e-7)
    run_to_the_end(qtbot, panel)
    scores = panel.plots.series["validation_macro_f1"].y
    assert len(scores) == 3 and len(set(scores)) == 1  # no evaluation better than the first: the patience ran out
    test = panel.test
    (total,) = [r["total_steps"] for r in RunDir(panel.run_path).read_metrics() if r["type"] == "started"]
    assert test.step == total
    assert panel.status_label.text() == (
        f"Finished (completed) at step {total} of {total}: test macro-F1 {test.macro_f1:.1%} with the best "
        f"checkpoint (step {test.best_step}) restored"
    )
    assert panel.message_bar.level == ""  # no "stopping early" warning
    # every tab names the run it shows
    run = panel.run_path
    assert captions(panel) == [f"Run {run.name}: late on task.csv (classification)"] * 3
    # the Runs tab: completed, its best validation score under a header naming the metric
    row = {r[0]: r for r in cells(panel.runs.table)}[run.name]
    assert row[1] == "completed"
    assert panel.runs.table.horizontalHeaderItem(4).text() == "Best validation macro-F1"
    assert row[4] == f"{scores[0]:.1%}"
    # the training accuracy and the validation macro-F1 on plots of their own, each axis naming its metric
    plots = panel.plots.plots
    assert plots["accuracy"].getAxis("left").labelText == "training accuracy"
    assert plots[VALIDATION].getAxis("left").labelText == "validation macro-F1"
    assert panel.plots.curves["step_accuracy"] in plots["accuracy"].listDataItems()
    assert panel.plots.curves["validation_macro_f1"] in plots[VALIDATION].listDataItems()
    assert panel.plots.curves["validation_macro_f1"] not in plots["accuracy"].listDataItems()
    assert panel.minimumSizeHint().width() <= NARROWEST


def test_paused_after_a_validation_then_stopped_the_bar_and_status_say_the_runs_step(qtbot, finetune_panel, tmp_path):
    """A validation shows its scoring's progress on the bar; then the bar and the pause line say the run's steps
    again, and a stopped run's bar ends where the run did, not full."""
    panel = finetune_panel
    fill(panel, write_task(tmp_path / "task.csv"), epochs=3.0)
    seen = {"steps": [], "finished": []}

    def on_record(record):
        if isinstance(record, StartedRecord):
            seen["total"] = record.total_steps
        elif isinstance(record, StepRecord):
            seen["steps"].append(record.step)
        elif isinstance(record, ValidationRecord) and panel.controller.state != PAUSED:
            panel.pause_button.click()
        elif isinstance(record, FinishedRecord):
            seen["finished"].append(record)

    panel.controller.record.connect(on_record)
    panel.start_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == PAUSED, timeout=TIMEOUT_MS)
    step, total = seen["steps"][-1], seen["total"]
    assert panel.status_label.text() == f"Paused after step {step} of {total}"
    assert (panel.progress_bar.value(), panel.progress_bar.maximum()) == (step, total)
    panel.workspace.read_runs()  # the runs written meanwhile: the list follows
    panel.runs.select(panel.run_path)  # while a run trains no row is chosen: the panel keeps showing it
    assert panel.runs.table.rowCount() == 1 and panel.runs.selected() is None
    panel.stop_button.click()
    run_to_the_end(qtbot, panel)
    finished = seen["finished"][0]
    assert finished.reason == "stopped" and finished.step < total
    assert (panel.progress_bar.value(), panel.progress_bar.maximum()) == (finished.step, total)
    panel.runs.select(panel.run_path)
    assert panel.runs.selected() == panel.run_path  # idle again: rows can be chosen


@pytest.mark.slow  # six tiny fine-tunings
def test_after_compare_every_tab_names_the_contender_and_seed_it_shows(qtbot, finetune_panel, tmp_path):
    panel = finetune_panel
    fill(panel, write_task(tmp_path / "task.csv", rows=60), epochs=1.0)
    assert panel.compare_button.text() == "Compare"  # no dialog follows: no ellipsis; its tooltip says what runs
    assert "2 contenders (your model, from scratch) × 3 seeds = 6 runs" in panel.compare_button.toolTip()
    seen, widths = [], []

    def on_record(item):
        if isinstance(item.record, TestRecord):
            seen.append((item.contender.label, item.seed, captions(panel), cells(panel.results.confusion)))
        if isinstance(item.record, StepRecord):
            widths.append(panel.minimumSizeHint().width())

    panel.controller.record.connect(on_record)
    panel.compare_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: not panel.mistakes_task.running, timeout=TIMEOUT_MS)
    (root,) = [p for p in (tmp_path / "runs").iterdir() if p.name.endswith("compare")]
    # while it ran, each contender's test scores came under its own name
    assert [(label, seed) for label, seed, *_ in seen] == [(c, s) for s in range(3) for c in (YOURS, SCRATCH_LABEL)]
    for label, seed, shown, confusion in seen:
        folder = f"{'your-model' if label == YOURS else 'from-scratch'}-seed{seed}"
        assert shown == [f"{label}, seed {seed}: run {folder} of comparison {root.name}"] * 3
        assert [[int(v) for v in row] for row in confusion] == written_tests(root / folder)[-1]["confusion"]
    # after it, the single-run tabs still show the last contender, and say so; its mistakes are its own
    last = f"from scratch, seed 2: run from-scratch-seed2 of comparison {root.name}"
    assert captions(panel) == [last] * 3
    assert panel.results.tabToolTip(panel.results.indexOf(panel.results.mistakes_page)) == last
    test = written_tests(root / "from-scratch-seed2")[-1]
    assert panel.results.mistakes.rowCount() == off_diagonal(test["confusion"])
    # the comparison tab names its score in every header, and the comparison in its title
    assert panel.results.currentWidget() is panel.comparison
    assert panel.comparison.title.text() == f"Comparison {root.name}: complete — late on classification · task.csv"
    headers = [panel.comparison.table.horizontalHeaderItem(c).text() for c in range(5)]
    assert headers[1] == "mean test macro-F1" and headers[4] == "per seed (test macro-F1)"
    assert panel.comparison.plot.getPlotItem().getAxis("left").labelText == "test macro-F1"
    assert max(widths) <= NARROWEST and panel.minimumSizeHint().width() <= NARROWEST


@pytest.fixture
def comparison_and_run(trained_runs, tmp_path):
    """In the panel's runs folder: a comparison of three seeds run to its end, and a single run."""
    task = write_task(tmp_path / "task.csv", rows=60)
    options = FinetuneOptions("classification", task, learning_rate=5e-3, epochs=1, batch_size=8, device="cpu")
    runs = tmp_path / "runs"
    root = runs / "20250101-120000-compare"
    list(compare(str(trained_runs / "late"), options, root, 3))
    list(prepare_finetuner(runs / "done", str(trained_runs / "late"), options).run())
    return root, runs / "done"


def test_a_comparison_is_listed_as_one_item_and_reopens_its_table_plot_and_verdict(
    qtbot, finetune_panel, comparison_and_run
):
    panel = finetune_panel
    root, done = comparison_and_run
    panel.workspace.read_runs()  # the runs written meanwhile: the list follows
    rows = {row[0]: row for row in cells(panel.runs.table)}
    assert sorted(rows) == sorted([root.name, "done"])  # its six runs are the comparison's, not listed alone
    comparison = read_comparison(root)
    assert rows[root.name][1] == f"comparison: complete, {comparison.short_verdict}"
    assert rows[root.name][2] == "late" and rows[root.name][3] == "classification · task.csv"

    panel.results.setCurrentWidget(panel.runs)
    panel.runs.select(root)
    assert panel.results.currentWidget() is panel.comparison
    assert panel.comparison.title.text() == f"Comparison {root.name}: complete — late on classification · task.csv"
    assert panel.comparison.verdict.text() == comparison.verdict and comparison.verdict.startswith("Pre-training ")
    scores = {
        label: [written_tests(root / f"{folder}-seed{seed}")[-1]["macro_f1"] for seed in range(3)]
        for label, folder in ((YOURS, "your-model"), (SCRATCH_LABEL, "from-scratch"))
    }
    table = cells(panel.comparison.table)
    assert [row[0] for row in table] == [YOURS, SCRATCH_LABEL]
    for row in table:
        assert row[1] == f"{statistics.fmean(scores[row[0]]):.1%}"
        assert row[4].split() == [f"{v:.1%}" for v in scores[row[0]]]
    items = panel.comparison.plot.getPlotItem().listDataItems()
    points = sorted(float(y) for item in items if item.opts["symbol"] for y in item.getData()[1])
    assert points == sorted(v for values in scores.values() for v in values)
    # the single-run tabs show none of its runs, and say so
    assert (
        captions(panel)
        == [
            f"No single run: comparison {root.name} (6 runs) is on the Comparison tab; choose a run in the Runs tab to "
            "see its curves, scores and mistakes"
        ]
        * 3
    )
    assert panel.results.confusion.rowCount() == 0 and panel.curves.currentWidget() is panel.hint
    assert panel.status_label.text() == f"Comparison {root.name}: complete"
    assert not panel.export_button.isEnabled() and not panel.runs.resume_button.isEnabled()
    assert panel.minimumSizeHint().width() <= NARROWEST

    panel.runs.select(done)
    test = written_tests(done)[-1]
    assert captions(panel) == ["Run done: late on task.csv (classification)"] * 3
    assert [[int(v) for v in row] for row in cells(panel.results.confusion)] == test["confusion"]
    assert panel.status_label.text() == (
        f"done: completed at step {test['step']} of {test['step']}; test macro-F1 {test['macro_f1']:.1%} with the "
        f"best checkpoint (step {test['best_step']}) restored"
    )
    qtbot.waitUntil(lambda: not panel.mistakes_task.running, timeout=TIMEOUT_MS)
    assert panel.results.mistakes.rowCount() == off_diagonal(test["confusion"])
    assert panel.export_button.isEnabled()


def test_compare_says_what_it_will_run_and_numbers_read_as_typed(qtbot, finetune_panel):
    panel = finetune_panel
    panel.seeds.setValue(4)
    assert "2 contenders (your model, from scratch) × 4 seeds = 8 runs" in panel.compare_button.toolTip()
    epochs, rate = panel.form.epochs, panel.form.learning_rate
    assert (epochs.text(), rate.text(), rate.value()) == ("10", "measured", 0.0)  # the engine's rule, by default
    for typed, value in (("6", 6.0), ("0.5", 0.5)):
        epochs.lineEdit().selectAll()
        qtbot.keyClicks(epochs, typed)
        epochs.interpretText()
        assert (epochs.value(), epochs.text()) == (value, typed)
    rate.lineEdit().selectAll()
    qtbot.keyClicks(rate, "5e-4")
    rate.interpretText()
    assert rate.value() == pytest.approx(5e-4) and rate.text() == "0.0005"  # not 0.0005000
    assert panel.form.options().learning_rate == pytest.approx(5e-4)
    rate.setValue(0)
    assert rate.text() == "measured" and panel.form.options().learning_rate is None
    assert panel.form.batch_size.text() == "16"


def test_the_comparison_table_is_as_tall_as_its_rows(qtbot):
    view = ComparisonView()
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    scores = [0.5, 0.6, 0.7]
    view.show_outcomes([Outcome(Contender(label, label), scores, scores) for label in (YOURS, SCRATCH_LABEL)], "x")
    table = view.table
    assert table.rowCount() == 2
    assert table.viewport().height() == table.verticalHeader().length()  # no empty room under the rows
    assert view.plot.height() > 300  # the room goes to the plot


def test_mistakes_are_one_line_each_with_the_whole_text_in_a_tooltip(qtbot):
    view = ResultsView(QWidget())
    qtbot.addWidget(view)
    view.resize(500, 400)
    view.show()
    long_text = " ".join(["a sentence long enough to wrap several times in a narrow table"] * 6)
    view.show_mistakes(
        [Mistake(3, ("short",), ("files",), ("errors",)), Mistake(9, (long_text,), ("errors",), ("files",))], False
    )
    table = view.mistakes
    assert table.rowHeight(0) == table.rowHeight(1)
    assert table.item(1, 1).toolTip() == long_text


def test_the_panel_stays_narrow_idle_paused_and_after_a_run_with_a_long_runs_folder(qtbot, trained_runs, tmp_path):
    from mlm_studio.ui.panels.finetune.panel import FinetunePanel
    from mlm_studio.ui.workspace import Workspace

    runs = tmp_path / "Fine-tuning experiments of the documentation classifier, second attempt" / "runs"
    panel = FinetunePanel(Workspace(runs_root=runs))
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    panel.form.add_folder(str(trained_runs / "late"))
    assert panel.minimumSizeHint().width() <= NARROWEST  # idle, the runs folder named in the Runs tab
    fill(panel, write_task(tmp_path / "task.csv", rows=60), epochs=2.0)
    paused = []

    def on_record(record):
        if isinstance(record, StepRecord) and not paused:
            paused.append(panel.pause_button.click())

    panel.controller.record.connect(on_record)
    panel.start_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == PAUSED, timeout=TIMEOUT_MS)
    assert panel.minimumSizeHint().width() <= NARROWEST  # running: the progress bar and the status line shown
    panel.pause_button.click()
    run_to_the_end(qtbot, panel)
    assert panel.test is not None and panel.minimumSizeHint().width() <= NARROWEST
    panel.results.setCurrentWidget(panel.runs)
    assert panel.minimumSizeHint().width() <= NARROWEST


def test_restarted_on_the_fine_tune_panel_it_stays_narrow(qtbot, tmp_path):
    """The window reopened on the Fine-tune panel, its runs folder's name long (as a user's home folder makes it)."""
    from PySide6.QtCore import QSettings

    from mlm_studio.ui import session
    from mlm_studio.ui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    runs = tmp_path / "Fine-tuning experiments of the documentation classifier, second attempt" / "runs"
    first = MainWindow(settings, runs_root=runs)
    qtbot.addWidget(first)
    first.show()
    first.show_panel(first.finetune_panel)
    session.save(first, settings)
    first.close()
    window = MainWindow(settings, runs_root=runs)
    qtbot.addWidget(window)
    window.show()
    assert window.stack.currentWidget() is window.finetune_panel
    assert window.finetune_panel.minimumSizeHint().width() <= NARROWEST
