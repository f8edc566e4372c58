"""The Fine-tune panel's comparison, runs list and hint, driven as a user would: Compare with three seeds ends in
a table, a plot and a verdict whose numbers are the runs' own test scores; Stop ends a comparison, whose stopped
run is not weighed; a run chosen in
the Runs tab shows its confusion matrix; Resume finishes a stopped run from its checkpoint; the hint in place of
the empty curves gives way to them on the first record; a model in the local Hub cache is offered and fine-tuned."""

import re
import statistics
from itertools import islice

import pytest

from mlm_studio.core.finetune.compare import SCRATCH_LABEL, YOURS, Contender, Outcome, verdict
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.control import IDLE, TrainingControl
from mlm_studio.core.runs.records import StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.panels.finetune.comparison import MEAN_HALF_WIDTH, ComparisonView
from mlm_studio.ui.runs_folder import RunsFolder
from mlm_studio.ui.widgets.model_choice import model_entries
from tests.core.family_folders import make_folder
from tests.core.hub_layout import add_folder, add_snapshot, point_main_at, use_cache
from tests.core.test_finetune import write_task
from tests.ui.finetune_driving import TIMEOUT_MS, cells, fill, run_to_the_end


def written_tests(path):
    """The test records a run folder holds."""
    return [r for r in RunDir(path).read_metrics() if r["type"] == "test"]


@pytest.mark.slow  # six tiny fine-tunings
def test_compare_with_three_seeds_shows_each_contenders_scores_and_the_verdict(qtbot, finetune_panel, tmp_path):
    panel = finetune_panel
    fill(panel, write_task(tmp_path / "task.csv", rows=60), epochs=1.0)
    assert panel.seeds.value() == 3 and panel.seeds.minimum() == 3
    said = []
    panel.controller.record.connect(lambda _: said.append(panel.status_label.text()))
    panel.compare_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    assert panel.message_bar.level in ("", "warning"), panel.message_bar.text
    # progress named the contender, the seed and the run among all
    assert any(text.startswith("[your model, seed 0, run 1 of 6] step") for text in said)
    assert said[-1].startswith("[from scratch, seed 2, run 6 of 6] Finished (completed) at step ")
    assert {int(re.search(r"run (\d) of 6", text)[1]) for text in said if text.startswith("[")} == set(range(1, 7))
    # the table's numbers are the test scores the six run folders wrote
    (root,) = [p for p in (tmp_path / "runs").iterdir() if p.name.endswith("compare")]
    assert panel.status_label.text() == f"Comparison {root.name}: complete"
    assert panel.status_label.toolTip() == panel.status_label.text()  # the whole line, where a narrow window cuts it
    scores = {
        label: [written_tests(root / f"{folder}-seed{seed}")[-1]["macro_f1"] for seed in range(3)]
        for label, folder in ((YOURS, "your-model"), (SCRATCH_LABEL, "from-scratch"))
    }
    table = cells(panel.comparison.table)
    assert [row[0] for row in table] == [YOURS, SCRATCH_LABEL]
    for row in table:
        values = scores[row[0]]
        assert row[1] == f"{statistics.fmean(values):.1%}"
        assert row[2] == f"{min(values):.1%} – {max(values):.1%}"
        assert row[3] == f"± {statistics.stdev(values):.1%}"
        assert row[4].split() == [f"{v:.1%}" for v in values]
    found = [Outcome(Contender(label, label), values, values) for label, values in scores.items()]
    assert panel.comparison.verdict.text() == verdict(found, "macro-F1")
    assert panel.comparison.verdict.text().startswith("Pre-training ")
    # the plot: every seed's score as a point, the mean as a bar, per contender
    items = panel.comparison.plot.getPlotItem().listDataItems()
    points = sorted(float(y) for item in items if item.opts["symbol"] for y in item.getData()[1])
    assert points == sorted(v for values in scores.values() for v in values)
    means = sorted(float(item.getData()[1][0]) for item in items if not item.opts["symbol"])
    assert means == pytest.approx(sorted(statistics.fmean(v) for v in scores.values()))
    assert panel.results.currentWidget() is panel.comparison
    assert not panel.export_button.isEnabled()  # a comparison is many runs: Export is for one


def test_seeds_with_equal_scores_are_drawn_as_separate_points(qtbot):
    view = ComparisonView()
    qtbot.addWidget(view)
    at_chance = [0.048, 0.048, 0.048]
    view.show_outcomes([Outcome(Contender(SCRATCH_LABEL, SCRATCH_LABEL), at_chance, at_chance)], "macro-F1")
    (points,) = [item for item in view.plot.getPlotItem().listDataItems() if item.opts["symbol"]]
    x, y = points.getData()
    assert list(y) == at_chance and len(set(x)) == 3  # one point per seed, none hiding another
    assert all(-MEAN_HALF_WIDTH < value < MEAN_HALF_WIDTH for value in x)  # all within the contender's mean bar


def test_stop_ends_a_comparison_before_its_other_contenders(qtbot, finetune_panel, tmp_path):
    panel = finetune_panel
    fill(panel, write_task(tmp_path / "task.csv", rows=60), epochs=20.0)

    def stop_at_the_first_step(item):
        if isinstance(item.record, StepRecord):
            panel.stop_button.click()

    panel.controller.record.connect(stop_at_the_first_step)
    panel.compare_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    (root,) = [p for p in (tmp_path / "runs").iterdir() if p.name.endswith("compare")]
    assert [p.name for p in root.iterdir() if p.is_dir()] == ["your-model-seed0"]  # no other contender began
    assert written_tests(root / "your-model-seed0")  # stopped, it was scored with its best weights, but
    assert cells(panel.comparison.table) == []  # a run stopped halfway is not weighed against finished ones
    assert panel.comparison.verdict.text() == (
        "No verdict until all 6 runs have finished: 0 have. Not weighed, as they did not finish: your model, seed 0."
    )
    assert panel.status_label.text() == f"Comparison {root.name}: 0 of 6 runs finished"
    assert panel.compare_button.isEnabled()


@pytest.fixture
def finished_and_stopped(trained_runs, tmp_path):
    """In the panel's runs folder: a fine-tuning run that completed, and one stopped after its first checkpoint."""
    task = write_task(tmp_path / "task.csv", rows=60)
    recipe = dict(learning_rate=5e-3, epochs=3, batch_size=8, patience=8, device="cpu")
    options = FinetuneOptions("classification", task, **recipe)
    done = tmp_path / "runs" / "done"
    list(prepare_finetuner(done, str(trained_runs / "late"), options).run())
    control = TrainingControl()
    stopped = tmp_path / "runs" / "stopped"
    for record in prepare_finetuner(stopped, str(trained_runs / "late"), options, control).run():
        if record.kind == "checkpoint":
            control.stop()
    return done, stopped


def test_a_run_chosen_in_the_runs_tab_shows_its_results_and_a_stopped_one_resumes(
    qtbot, finetune_panel, finished_and_stopped
):
    panel = finetune_panel
    done, stopped = finished_and_stopped
    panel.workspace.read_runs()  # the runs written meanwhile: the list follows
    rows = {row[0]: row for row in cells(panel.runs.table)}
    assert rows["done"][1] == "completed" and rows["stopped"][1] == "stopped"
    assert rows["done"][2] == "late" and rows["done"][3] == "classification · task.csv"
    assert rows["done"][4].endswith("%")

    panel.runs.select(done)
    test = written_tests(done)[-1]
    assert [[int(v) for v in row] for row in cells(panel.results.confusion)] == test["confusion"]
    assert f"macro-F1 <b>{test['macro_f1']:.1%}</b>" in panel.results.summary.text()
    assert panel.curves.currentWidget() is panel.plots and panel.plots.series["step_loss"].size >= 1
    qtbot.waitUntil(lambda: not panel.mistakes_task.running, timeout=TIMEOUT_MS)
    wrong = sum(test["confusion"][r][c] for r in range(3) for c in range(3) if r != c)
    assert panel.results.mistakes.rowCount() == wrong
    assert not panel.runs.resume_button.isEnabled()  # a completed run has nothing left to do
    assert panel.export_button.isEnabled()

    panel.runs.select(stopped)
    stopped_at = RunDir(stopped).read_metrics()[-1]["step"]
    assert panel.runs.resume_button.isEnabled()
    panel.runs.resume_button.click()
    run_to_the_end(qtbot, panel)
    records = RunDir(stopped).read_metrics()
    starts = [r["step"] for r in records if r["type"] == "started"]
    assert starts == [0, stopped_at]  # it went on from its checkpoint
    assert records[-1]["type"] == "finished" and records[-1]["reason"] == "completed"
    assert records[-1]["step"] == [r for r in RunDir(done).read_metrics() if r["type"] == "finished"][-1]["step"]
    assert {row[0]: row[1] for row in cells(panel.runs.table)}["stopped"] == "completed"
    assert panel.results.confusion.rowCount() == 3


def test_the_hint_stands_in_for_the_empty_curves_until_the_first_record(qtbot, finetune_panel, tmp_path):
    panel = finetune_panel
    assert panel.curves.currentWidget() is panel.hint and panel.hint.isVisible()
    assert "Start" in panel.hint.text() and "Compare" in panel.hint.text()
    fill(panel, write_task(tmp_path / "task.csv", rows=60), epochs=1.0)
    shown_at_first_record = []
    panel.controller.record.connect(lambda _: shown_at_first_record.append(panel.curves.currentWidget()))
    panel.start_button.click()
    assert panel.curves.currentWidget() is panel.hint  # preparing: nothing to draw yet
    run_to_the_end(qtbot, panel)
    assert shown_at_first_record[0] is panel.plots
    assert panel.results.currentWidget() is panel.results.scores  # the test scores after


@pytest.mark.slow  # a fine-tuning of a Hugging Face model
def test_a_model_in_the_hub_cache_is_offered_and_fine_tuned_without_a_download(
    qtbot, finetune_panel, small_corpus, tmp_path, monkeypatch
):
    panel = finetune_panel
    hub = tmp_path / "hub"
    made = make_folder("bert", list(islice(small_corpus.iter_documents(), 200)), tmp_path / "made")
    snapshot = add_folder(hub, "tiny/bert", made, "main")
    point_main_at(snapshot)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    escaping = add_snapshot(hub, "org/escaping", {"tokenizer.json": b"{}"}, "main")
    (escaping / "config.json").symlink_to(outside / "config.json")  # leads out of the cache: never offered
    point_main_at(escaping)
    point_main_at(add_snapshot(hub, "org/corpus", {"config.json": b"{}"}, "main", kind="dataset"))
    point_main_at(add_snapshot(hub, "org/gpt", {"config.json": b'{"model_type": "gpt2"}'}, "main"))  # no family
    use_cache(monkeypatch, hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    listed = RunsFolder().read(tmp_path / "runs")
    cached = [(label, path) for label, path in model_entries(None, listed, []) if "Hub" in label]
    assert cached == [("Hub cache: tiny/bert", str(snapshot.absolute()))]  # what every model chooser offers
    panel.workspace.read_runs()  # the cache as it is now: every model chooser follows
    index = panel.form.model_combo.findText("Hub cache: tiny/bert")
    assert index >= 0 and panel.form.model_combo.findText("Hub cache: org/escaping") < 0
    panel.form.model_combo.setCurrentIndex(index)
    fill(panel, write_task(tmp_path / "task.csv", rows=60), epochs=1.0)
    run_to_the_end(qtbot, panel)
    assert panel.message_bar.level in ("", "warning"), panel.message_bar.text
    assert panel.results.confusion.rowCount() == 3
    assert [row[2] for row in cells(panel.runs.table)] == ["tiny/bert"]  # the Runs tab names the Hub model
