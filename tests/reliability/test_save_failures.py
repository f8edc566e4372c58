"""Scenario 4: the disk fills up or permission is denied while saving. The previous checkpoint stays intact
and latest; the terminal run fails with the reason; the window pauses and carries on when resumed, ending
with exactly the weights of a run that never failed; no metrics record is lost or half-written."""

import errno
import json

import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.core.models.bert import BertForMaskedLM
from mlm_studio.core.runs import run_folder as checkpoint_module
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import FailedRecord, FinishedRecord, PausedRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import load_weights
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config

CONFIG = small_config(max_steps=12, checkpoint_interval=4, eval_interval=4)
FULL = OSError(errno.ENOSPC, "No space left on device")
DENIED = PermissionError(errno.EACCES, "Permission denied")


class FailingSaves:
    """Makes writing a checkpoint's weights raise `errors` one after another at `step`, then write again."""

    def __init__(self, monkeypatch, step: int, errors: list[OSError]) -> None:
        self.step, self.errors, self.original = step, list(errors), checkpoint_module.save_weights
        monkeypatch.setattr(checkpoint_module, "save_weights", self)

    def __call__(self, model, path):
        if f"step-{self.step:07d}" in str(path) and self.errors:
            raise self.errors.pop(0)
        return self.original(model, path)


def new_run(tmp_path, small_corpus, small_tokenizer, name):
    run = start_run(tmp_path / name, CONFIG, small_corpus, small_tokenizer)
    return run, *training_blocks(run, small_corpus)


def weights(run):
    return load_file(str(run.latest_checkpoint() / "model.safetensors"))


@pytest.mark.parametrize("error", [FULL, DENIED], ids=["disk full", "permission denied"])
def test_in_a_terminal_the_run_fails_with_the_reason_and_the_previous_checkpoint_intact(
    tmp_path, small_corpus, small_tokenizer, monkeypatch, error
):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, "run")
    FailingSaves(monkeypatch, 8, [error])
    records = list(Trainer(run, train, validation).run())
    failed = records[-1]
    assert isinstance(failed, FailedRecord) and failed.step == 8
    assert f"checkpoint of step 8 ({error.strerror})" in failed.message
    assert "step-0000004, is intact" in failed.message
    assert [p.name for p in run.checkpoints()] == ["step-0000004"]
    assert not [p for p in (run.path / "checkpoints").iterdir() if p.name.startswith(".")]  # no half checkpoint
    load_weights(run.latest_checkpoint(), BertForMaskedLM(run.config.model))
    resumed = Trainer(run, train, validation)
    assert resumed.step == 4
    assert isinstance(list(resumed.run())[-1], FinishedRecord)


def test_in_the_window_training_pauses_then_ends_as_if_nothing_happened(
    tmp_path, small_corpus, small_tokenizer, monkeypatch
):
    straight, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, "straight")
    list(Trainer(straight, train, validation).run())

    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, "interrupted")
    FailingSaves(monkeypatch, 8, [FULL, DENIED])
    control = TrainingControl()
    pauses = []
    for record in Trainer(run, train, validation, control, pause_on_save_error=True).run():
        if isinstance(record, PausedRecord):
            assert control.paused and [p.name for p in run.checkpoints()] == ["step-0000004"]
            pauses.append(record.message)
            control.resume()  # the user made room and pressed Resume
        last = record
    assert len(pauses) == 2 and "No space left" in pauses[0] and "Permission denied" in pauses[1]
    assert "Training is paused" in pauses[0]
    assert isinstance(last, FinishedRecord) and last.reason == "completed"
    assert [p.name for p in run.checkpoints()] == ["step-0000008", "step-0000012"]
    expected, got = weights(straight), weights(run)
    assert all(torch.equal(expected[k], got[k]) for k in expected)
    steps = [r["step"] for r in run.read_metrics() if r["type"] == "step"]
    assert steps == list(range(1, 13))


def test_stopping_while_paused_on_a_failed_save_ends_cleanly(tmp_path, small_corpus, small_tokenizer, monkeypatch):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, "run")
    FailingSaves(monkeypatch, 8, [FULL])
    control = TrainingControl()
    records = []
    for record in Trainer(run, train, validation, control, pause_on_save_error=True).run():
        records.append(record)
        if isinstance(record, PausedRecord):
            control.stop()
    assert isinstance(records[-1], FailedRecord) and "Stopped without it" in records[-1].message
    assert run.latest_checkpoint().name == "step-0000004"


def test_metrics_refused_by_a_full_disk_are_written_with_the_next_ones(
    tmp_path, small_corpus, small_tokenizer, monkeypatch
):
    run, train, validation = new_run(tmp_path, small_corpus, small_tokenizer, "run")
    original = RunDir.append_metrics
    refused = []

    def append(self, records):
        if any(r["step"] in (3, 4, 5) for r in records) and not any(r["step"] == 6 for r in records):
            refused.append([r["step"] for r in records])
            raise FULL
        return original(self, records)

    monkeypatch.setattr(RunDir, "append_metrics", append)
    records = list(Trainer(run, train, validation).run())
    assert refused and isinstance(records[-1], FinishedRecord)
    metrics = run.read_metrics()
    assert [r["step"] for r in metrics if r["type"] == "step"] == list(range(1, 13))
    assert sum(r["type"] == "checkpoint" for r in metrics) == 3


def test_a_metrics_line_cut_short_by_a_full_disk_is_taken_back(tmp_path, finished_run, monkeypatch):
    run = RunDir(finished_run)
    before = run.metrics_path.read_bytes()

    class HalfWriting:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def tell(self):
            return self.handle.tell()

        def truncate(self, size):
            return self.handle.truncate(size)

        def write(self, text):
            self.handle.write(text[: len(text) // 2])
            self.handle.flush()
            raise FULL

        def flush(self):
            self.handle.flush()

    real_open = open
    monkeypatch.setattr("builtins.open", lambda *args, **kwargs: HalfWriting(real_open(*args, **kwargs)))
    with pytest.raises(OSError):
        run.append_metrics([{"type": "step", "step": 99, "loss": 1.0}])
    monkeypatch.undo()
    assert run.metrics_path.read_bytes() == before
    assert all(json.loads(line) for line in before.decode().splitlines())


def test_the_window_shows_the_pause_and_resumes(qtbot, small_corpus, small_tokenizer, tmp_path, monkeypatch):
    from PySide6.QtCore import Qt

    from mlm_studio.core.runs.control import PAUSED
    from mlm_studio.ui.panels.training.panel import TrainingPanel
    from mlm_studio.ui.workspace import Workspace

    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    workspace.set_config(small_config(max_steps=8, checkpoint_interval=4, eval_interval=4))
    workspace.set_runs_root(tmp_path / "runs")
    panel = TrainingPanel(workspace)
    qtbot.addWidget(panel)
    panel.show()
    failing = FailingSaves(monkeypatch, 4, [FULL])
    with qtbot.waitSignal(panel.controller.state_changed, check_params_cb=lambda s: s == PAUSED, timeout=60_000):
        qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    assert panel.message_bar.level == "warning" and "No space left on device" in panel.message_bar.text
    assert panel.pause_button.isEnabled() and "Paused:" in panel.log.toPlainText()
    assert not failing.errors
    with qtbot.waitSignal(panel.run_finished, timeout=60_000):
        qtbot.mouseClick(panel.pause_button, Qt.MouseButton.LeftButton)
    assert [p.name for p in RunDir(workspace.run).checkpoints()] == ["step-0000004", "step-0000008"]
    assert panel.start_button.isEnabled()
