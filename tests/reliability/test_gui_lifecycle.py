"""Scenarios 9 and 10: the window closed mid-training, Start clicked twice, a restart right after Stop,
an exception in the worker. One worker at a time, a clean exit, and a run that can be resumed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from mlm_studio.core.runs.history import list_runs
from mlm_studio.core.runs.records import FinishedRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training.runs import training_blocks
from mlm_studio.core.training.trainer import Trainer
from mlm_studio.ui.panels.training.panel import TrainingPanel
from mlm_studio.ui.workspace import Workspace
from tests.core.helpers import small_config, with_training

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 120_000

CLOSE_SCRIPT = r"""
import os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication
app = QApplication([])
from mlm_studio.ui.main_window import MainWindow
from tests.core.helpers import small_config, with_training
runs, corpus, choices, steps = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
window = MainWindow(None, restore=False, runs_root=runs)
asked = []
def answer():
    asked.append(choices[len(asked)])
    return asked[-1]
window._ask_about_training = answer
window.workspace.set_config(small_config(max_steps=steps, eval_interval=100_000, checkpoint_interval=100_000))
window.show()
window.corpus_panel.add_paths([corpus])
window.workspace.tokenizer_changed.connect(lambda tokenizer: tokenizer and window.training_panel.start())
records = []
def on_record(record):
    records.append(record)
    if len(records) in (3, 6):  # close, and close again if the window is still open
        window.close()
window.training_panel.controller.record.connect(on_record)
app.exec()
print("exited after", len(records), "records; asked", len(asked), "times", flush=True)
"""


@pytest.mark.parametrize(
    ("choice", "steps", "reason", "asked"),
    [
        ("stop", 100_000, "stopped", 1),
        ("keep,keep", 30, "completed", 2),
        ("keep,stop", 100_000, "stopped", 2),  # closing a second time asks again (it once killed the run)
        ("cancel,stop", 100_000, "stopped", 2),
    ],
)
@pytest.mark.slow  # a window in a fresh interpreter, four times
def test_closing_mid_training_exits_cleanly_and_leaves_a_resumable_run(
    tmp_path, corpus_file, choice, steps, reason, asked
):
    """Stop & save: the window closes after a checkpoint; keep training: it closes itself when the run ends;
    every close while training asks, and none blocks."""
    result = subprocess.run(
        [sys.executable, "-c", CLOSE_SCRIPT, str(tmp_path / "runs"), str(corpus_file), choice, str(steps)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    for bad in ("QThread: Destroyed", "Fatal", "Traceback", "QObject::"):
        assert bad not in result.stderr, result.stderr
    assert f"asked {asked} times" in result.stdout
    (run,) = list_runs(tmp_path / "runs")
    assert run.latest_checkpoint() is not None and run.read_metrics()[-1]["reason"] == reason
    if reason == "stopped":
        stopped_at = int(run.latest_checkpoint().name.split("-")[1])
        with_training(run.config, max_steps=stopped_at + 2).save(run.path / "config.toml")
        records = list(Trainer(RunDir(run.path), *training_blocks(RunDir(run.path))).run())
        assert isinstance(records[-1], FinishedRecord) and records[-1].step == stopped_at + 2


@pytest.fixture
def panel(qtbot, small_corpus, small_tokenizer, tmp_path):
    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    workspace.set_config(small_config(max_steps=100_000, eval_interval=100_000, checkpoint_interval=100_000))
    workspace.set_runs_root(tmp_path / "runs")
    widget = TrainingPanel(workspace)
    qtbot.addWidget(widget)
    widget.show()
    yield widget
    widget.controller.stop()
    widget.controller.wait(60_000)


def test_start_twice_runs_one_worker(qtbot, panel):
    with qtbot.waitSignal(panel.controller.record, timeout=TIMEOUT_MS):
        panel.start()
        panel.start()
    assert "already running" in panel.message_bar.text
    qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)  # disabled: nothing happens
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        panel.stop()
    assert len(list_runs(panel.runs_root)) == 1


def test_restart_right_after_stop(qtbot, panel):
    with qtbot.waitSignal(panel.controller.record, timeout=TIMEOUT_MS):
        panel.start()
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        panel.stop()
        panel.start()  # refused while the first is still saving
        assert "already running" in panel.message_bar.text
    first = panel.workspace.run
    assert RunDir(first).read_metrics()[-1]["reason"] == "stopped"
    with qtbot.waitSignal(panel.controller.record, timeout=TIMEOUT_MS):
        panel.start()
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        panel.stop()
    runs = list_runs(panel.runs_root)
    assert len(runs) == 2 and all(r.latest_checkpoint() is not None for r in runs)
    assert panel.start_button.isEnabled()
