"""The Fine-tune panel, driven as a user would: choose a run and a labelled file, start, read the confusion matrix
and the mistakes, export the classifier; a tagging task's entities as chips; stop halfway; a bad file said."""

import json
import math

import pytest
from PySide6.QtWidgets import QFileDialog

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.runs.control import IDLE, PAUSED
from mlm_studio.core.runs.records import FinishedRecord, StepRecord
from mlm_studio.core.runs.run_folder import INITIAL, RunDir
from tests.core.test_finetune import write_task
from tests.core.test_finetune_tokens import write_tagging
from tests.ui.finetune_driving import TIMEOUT_MS, cells, fill, run_to_the_end


@pytest.fixture
def panel(finetune_panel):
    return finetune_panel


def test_fine_tune_read_the_confusion_matrix_and_mistakes_then_export(qtbot, panel, tmp_path, monkeypatch):
    assert (
        panel.form.learning_rate.text() == "measured" and panel.form.batch_size.value() == 16
    )  # the engine's defaults shown
    assert not panel.export_button.isEnabled()
    fill(panel, write_task(tmp_path / "task.csv"))
    narrowest = panel.minimumSizeHint().width()
    told = []
    panel.controller.progress.connect(lambda done, total, message: told.append(message))
    run_to_the_end(qtbot, panel)
    assert panel.message_bar.level == ""
    # reading, encoding and each scoring said as they go; the steps counted again after each scoring
    assert {"Reading task.csv", "Encoding 120 examples", "Scoring the 15 validation examples"} <= set(told)
    assert told[-1] == "Testing the best weights on 15 test examples"
    steps = json.loads((panel.run_path / "metrics.jsonl").read_text().splitlines()[0])["total_steps"]
    assert f" of {steps}: test macro-F1" in panel.status_label.text()
    assert panel.minimumSizeHint().width() == narrowest  # what it says while and after training never widens it
    assert "macro-F1" in panel.results.summary.text()
    labels = ["errors", "files", "returns"]
    matrix = [[int(v) for v in row] for row in cells(panel.results.confusion)]
    assert len(matrix) == 3 and sum(map(sum, matrix)) == 15  # 10% of 150 rows held out for the test
    assert [row[0] for row in cells(panel.results.per_class)] == labels
    # the cells are shaded by count: the largest the strongest tint
    confusion = panel.results.confusion
    tints = {confusion.item(r, c).background().color().name() for r in range(3) for c in range(3)}
    assert len(tints) == len({v for row in matrix for v in row})
    # the two tables fill the Test scores tab, each label's row level in both
    panel.results.setCurrentWidget(panel.results.scores)
    qtbot.waitUntil(lambda: confusion.isVisible())
    per_class = panel.results.per_class
    width = sum(per_class.columnWidth(c) for c in range(per_class.columnCount()))
    assert width >= per_class.viewport().width() - 4  # the per-class table takes the width the matrix leaves
    for table in (confusion, per_class):
        height = sum(table.rowHeight(r) for r in range(table.rowCount()))
        assert height >= table.viewport().height() - 4
        header = table.horizontalHeader()
        assert all(header.sectionSize(c) >= header.sectionSizeHint(c) for c in range(table.columnCount()))  # uncut
    assert [confusion.rowViewportPosition(r) for r in range(3)] == [
        panel.results.per_class.rowViewportPosition(r) for r in range(3)
    ]
    # the mistakes listed are the test examples off the confusion matrix's diagonal, with their labels
    wrong = sum(matrix[r][c] for r in range(3) for c in range(3) if r != c)
    mistakes = cells(panel.results.mistakes)
    assert len(mistakes) == wrong
    assert all(true in labels and predicted in labels and true != predicted for _, _, true, predicted in mistakes)
    # the curves: training loss each logged step, the validation score once an epoch
    assert panel.plots.series["step_loss"].size >= 2
    assert panel.plots.series["validation_macro_f1"].size == 2

    out = tmp_path / "exported"
    out.mkdir()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(out))
    assert panel.export_button.isEnabled()
    panel.export_button.click()
    qtbot.waitUntil(lambda: not panel.exporter.running, timeout=TIMEOUT_MS)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert sorted(config["id2label"].values()) == labels
    assert 'pipeline("text-classification")' in panel.message_bar.text


def test_a_tagger_shows_true_and_predicted_entities_as_chips(qtbot, panel, tmp_path):
    fill(panel, write_tagging(tmp_path / "tags.jsonl"), kind="tokens", epochs=1.0)
    run_to_the_end(qtbot, panel)
    assert "entities:" in panel.results.summary.text()
    assert panel.plots.plots["validation"].getAxis("left").labelText == "validation entity F1"  # the score it chose by
    assert [row[0] for row in cells(panel.results.per_class)] == ["O", "B-ARG", "B-EXC", "I-EXC", "I-ARG"]
    assert not panel.results.spans.isHidden() and panel.results.mistakes.isHidden()
    shown = panel.results.spans.toPlainText()
    count = int(panel.results.mistakes_label.text().split()[0])
    assert shown.count("true:") == shown.count("predicted:") == count > 0  # one tiny epoch leaves mistakes
    assert "background" in panel.results.spans.toHtml()  # entities are chips
    panel.results.setCurrentWidget(panel.results.scores)
    panel.results.tables.setSizes([1, 10_000])  # the divider dragged over the matrix: its columns still read whole
    header = panel.results.confusion.horizontalHeader()
    qtbot.waitUntil(lambda: header.isVisible() and header.sectionSize(0) > 0)
    assert all(header.sectionSize(c) >= header.sectionSizeHint(c) for c in range(header.count()))


def test_plain_tags_are_scored_per_word_without_entities(qtbot, panel, tmp_path):
    entity_file = write_tagging(tmp_path / "entities.jsonl")
    plain = {"O": "OTHER", "B-ARG": "ARG", "B-EXC": "EXC", "I-EXC": "EXC"}  # parts-of-speech-like tags
    rows = [json.loads(line) for line in entity_file.read_text().splitlines()]
    lines = [json.dumps({**row, "tags": [plain[t] for t in row["tags"]]}) for row in rows]
    (tmp_path / "plain.jsonl").write_text("\n".join(lines), encoding="utf-8")
    fill(panel, tmp_path / "plain.jsonl", kind="tokens", epochs=1.0)
    run_to_the_end(qtbot, panel)
    summary = panel.results.summary.text()
    words = sum(map(sum, panel.test.confusion))
    assert f"Test ({words:,} words)" in summary and "entities:" not in summary
    assert sorted(row[0] for row in cells(panel.results.per_class)) == ["ARG", "EXC", "OTHER"]


def test_pause_resume_then_stop_halfway_scores_the_best_weights(qtbot, panel, tmp_path):
    fill(panel, write_task(tmp_path / "task.csv"), epochs=20.0)
    steps, finished, resumed = [], [], []

    def on_record(record):
        if isinstance(record, StepRecord):
            steps.append(record.step)
            if len(steps) == 1:
                panel.pause_button.click()
            elif resumed and not panel.controller.control.stop_requested:  # not a step made before the pause
                panel.stop_button.click()
        if isinstance(record, FinishedRecord):
            finished.append(record)

    panel.controller.record.connect(on_record)
    panel.start_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == PAUSED, timeout=TIMEOUT_MS)
    assert panel.pause_button.text() == "Resume" and not panel.start_button.isEnabled()
    assert panel.status_label.text() == f"Paused after step {steps[-1]} of {panel.progress_bar.maximum()}"
    resumed.append(steps[-1])
    panel.pause_button.click()
    run_to_the_end(qtbot, panel)
    assert steps[-1] > resumed[0]  # it went on after the pause
    assert finished[0].reason == "stopped" and finished[0].step < panel.progress_bar.maximum() * 20
    assert "Finished (stopped)" in panel.status_label.text()
    assert panel.results.confusion.rowCount() == 3 and panel.export_button.isEnabled()


def test_a_disk_that_fills_up_pauses_the_run_and_resume_finishes_it_once_room_is_made(
    qtbot, trained_runs, tmp_path, tmpfs
):
    from mlm_studio.ui.panels.finetune.panel import FinetunePanel
    from mlm_studio.ui.workspace import Workspace
    from tests.reliability.disks import fill as fill_disk

    disk = tmpfs(tmp_path / "disk", "size=16m")
    panel = FinetunePanel(Workspace(runs_root=disk / "runs"))
    qtbot.addWidget(panel)
    panel.show()
    panel.form.add_folder(str(trained_runs / "late"))
    fill(panel, write_task(tmp_path / "task.csv"), epochs=2.0)
    finished = []

    def on_record(record):
        if record.kind == "checkpoint" and not (disk / "filler.bin").exists():
            fill_disk(disk)  # a user's file takes the last byte after the first epoch's checkpoint
        if isinstance(record, FinishedRecord):
            finished.append(record)

    panel.controller.record.connect(on_record)
    panel.start_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == PAUSED, timeout=TIMEOUT_MS)
    assert panel.message_bar.level == "warning" and "No space left on device" in panel.message_bar.text
    assert "Training is paused: make room or fix the folder, then resume" in panel.message_bar.text
    assert panel.pause_button.text() == "Resume"
    (disk / "filler.bin").unlink()
    panel.pause_button.click()
    run_to_the_end(qtbot, panel)
    assert [f.reason for f in finished] == ["completed"]
    assert panel.export_button.isEnabled()
    panel.controller.wait(TIMEOUT_MS)


def test_a_file_of_one_class_is_said_in_the_message_bar(qtbot, panel, tmp_path):
    task = tmp_path / "one.csv"
    task.write_text("text,label\n" + "".join(f"sentence {i},same\n" for i in range(20)), encoding="utf-8")
    fill(panel, task)
    panel.start_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    assert panel.message_bar.level == "error" and "one.csv" in panel.message_bar.text
    assert "Traceback" not in panel.message_bar.text and panel.start_button.isEnabled()
    assert not panel.export_button.isEnabled()


def test_a_failed_start_says_its_reason_in_the_status_without_a_traceback(qtbot, panel, tmp_path, caplog):
    panel.status_label.setText("Finished (completed) at step 40 of 40")  # a run's line before
    task = tmp_path / "squad.json"
    document = {"data": [{"paragraphs": [{"context": "the colour is blue", "qas": [
        {"id": "q1", "question": "what colour?", "answers": [{"text": "blue", "answer_start": 14}]},
        {"id": "q1", "question": "what is it?", "answers": [{"text": "blue", "answer_start": 14}]}]}]}]}  # fmt: skip
    task.write_text(json.dumps(document), encoding="utf-8")
    fill(panel, task, kind="qa")
    panel.start_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    reason = (
        "squad.json: the id q1 is given to two questions (questions 1 and 2); give each its own id, or their "
        "answers are scored as one question's"
    )
    assert panel.message_bar.level == "error" and panel.message_bar.text == reason
    assert panel.status_label.text() == f"Could not start: {reason}"
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.exc_info]
    assert panel.form.isEnabled() and panel.start_button.isEnabled() and panel.progress_bar.isHidden()
    panel.start_button.click()  # the same refusal again, said again
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    assert panel.status_label.text() == f"Could not start: {reason}" and panel.form.isEnabled()


def test_from_scratch_starts_from_the_models_shape_with_fresh_weights(qtbot, panel, tmp_path, trained_runs):
    fill(panel, write_task(tmp_path / "task.csv"), epochs=1.0)
    panel.form.scratch_box.setChecked(True)
    run_to_the_end(qtbot, panel)
    origin = json.loads((panel.run_path / INITIAL / "origin.json").read_text())
    assert origin["kind"] == "scratch" and origin["source"].startswith(str(trained_runs / "late"))
    assert panel.results.confusion.rowCount() == 3


def test_closing_the_window_while_fine_tuning_stops_it_then_closes(qtbot, trained_runs, tmp_path):
    from mlm_studio.ui.main_window import MainWindow

    window = MainWindow(restore=False, runs_root=tmp_path / "runs")
    qtbot.addWidget(window)
    window.show()
    panel = window.finetune_panel
    panel.form.add_folder(str(trained_runs / "late"))
    fill(panel, write_task(tmp_path / "task.csv"), epochs=20.0)
    closed_while_running = []

    def on_record(record):
        if isinstance(record, StepRecord) and not closed_while_running:
            closed_while_running.append(window.close())  # False: it waits for the fine-tuning to stop

    panel.controller.record.connect(on_record)
    panel.start_button.click()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=TIMEOUT_MS)
    assert closed_while_running == [False] and panel.controller.state == IDLE
    assert panel.test is not None  # stopped, then scored with the best weights before the window closed


def test_a_task_of_many_labels_shows_its_most_frequent_mistakes_instead_of_a_matrix(qtbot):
    from PySide6.QtWidgets import QWidget

    from mlm_studio.core.runs.records import TestRecord
    from mlm_studio.ui.panels.finetune.results import ResultsView

    view = ResultsView(QWidget())
    qtbot.addWidget(view)
    labels = tuple(f"class {i}" for i in range(60))
    per_class = tuple((label, 0.5, 0.5, 0.5, 2) for label in labels)
    mistakes = (("class 3", "class 7", 5), ("class 1", "class 2", 1))
    test = TestRecord(9, tokens_seen=0, elapsed=0.0, epoch=1.0, loss=0.5, accuracy=0.5, macro_f1=0.5, best_step=9,
                      labels=labels, per_class=per_class, confusion=(), confusions=mistakes)  # fmt: skip
    view.show_test(test, tagging=False)
    table = view.confusion
    assert (table.rowCount(), table.columnCount()) == (2, 3)
    assert [table.horizontalHeaderItem(c).text() for c in range(3)] == ["true", "predicted", "count"]
    rows = [[table.item(r, c).text() for c in range(3)] for r in range(2)]
    assert rows == [["class 3", "class 7", "5"], ["class 1", "class 2", "1"]]
    assert table.toolTip() == "60 labels are too many for a matrix: the 2 most frequent mistakes."
    assert "Test (120 examples)" in view.summary.text() and "training texts" not in view.summary.text()
    from dataclasses import replace

    view.show_test(replace(test, seen_in_training=7), tagging=False)
    assert "<b>7 of the test examples are training texts</b>: not scored on unseen texts" in view.summary.text()


def test_accumulated_micro_batches_and_where_it_reports_are_the_runs_and_its_steps_follow_them(qtbot, panel, tmp_path):
    fill(panel, write_task(tmp_path / "task.csv"), epochs=1.0)
    panel.form.grad_accumulation.setValue(2)
    panel.form.report_to.setCurrentIndex(panel.form.report_to.findData("none"))
    run_to_the_end(qtbot, panel)
    config = RunConfig.load(panel.run_path / "config.toml")
    assert (config.training.batch_size, config.training.grad_accumulation) == (8, 2)
    assert config.training.report_to == "none" and not (panel.run_path / "tensorboard").exists()
    started = next(r for r in RunDir(panel.run_path).read_metrics() if r["type"] == "started")
    assert started["total_steps"] == panel.progress_bar.maximum() == math.ceil(started["train_blocks"] / 16)


def test_the_task_kind_cut_by_a_narrow_panel_ends_in_an_ellipsis_and_shows_whole_when_it_fits(qtbot, panel):
    combo = panel.form.kind_combo
    combo.setCurrentIndex(combo.findData("classification"))
    whole = combo.currentText()
    panel.resize(panel.minimumSizeHint().width(), 700)
    panel.show()
    qtbot.waitUntil(lambda: combo.width() < combo.fontMetrics().horizontalAdvance(whole))
    shown = combo.shown_text()
    assert shown.endswith("…") and whole.startswith(shown[:-1]) and len(shown) < len(whole)
    combo.resize(combo.fontMetrics().horizontalAdvance(whole) + 80, combo.height())
    assert combo.shown_text() == whole
