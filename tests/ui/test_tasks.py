"""The background-task contract every panel relies on: progress, then exactly one outcome, then finished."""

import sys
import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QPushButton, QWidget

from mlm_studio.core.data.corpus import CorpusError
from mlm_studio.ui.tasks import TaskRunner, bugs_said_in


def test_a_task_reports_progress_then_its_result_then_finished_in_that_order(qtbot):
    runner = TaskRunner()

    def work(progress):
        progress.report(0, 2, "counting")  # the first report reaches the window at once, and the last one always
        progress.report(2, 2, "counting")
        return 42

    results = []
    runner.succeeded.connect(results.append)
    signals = [runner.progress, runner.progress, runner.succeeded, runner.finished]
    with qtbot.waitSignals(signals, order="strict", timeout=10_000):
        runner.start(work)
    assert results == [42] and not runner.running


def test_a_failure_reaches_the_user_as_a_sentence(qtbot):
    runner = TaskRunner()

    def broken(progress):
        raise CorpusError("No usable text in the corpus")

    messages = []
    runner.failed.connect(messages.append)
    with qtbot.waitSignals([runner.failed, runner.finished], order="strict", timeout=10_000):
        runner.start(broken)
    assert messages == ["No usable text in the corpus"]


@pytest.mark.parametrize(
    "raised",
    [ValueError("operands could not be broadcast together with shapes (3,) (4,)"), KeyError("hidden_size")],
)
def test_any_other_error_is_said_as_a_bug_with_its_traceback_kept_never_as_a_refusal(
    qtbot, tmp_path, monkeypatch, raised
):
    """As the command line says it: a ValueError from deep inside (numpy's, torch's, ours) is not something the user
    gave."""
    monkeypatch.setenv("MLM_STUDIO_CACHE", str(tmp_path / "cache"))
    runner, messages = TaskRunner(), []

    def broken(progress):
        raise raised

    runner.failed.connect(messages.append)
    with qtbot.waitSignals([runner.failed, runner.finished], order="strict", timeout=10_000):
        runner.start(broken)
    (said,) = messages
    assert "This is a bug in MLM Studio or a library it uses, not in what you gave it" in said
    (kept,) = (tmp_path / "cache" / "crashes").iterdir()
    assert str(kept) in said and type(raised).__name__ in kept.read_text(encoding="utf-8")


def test_a_newer_task_supersedes_the_running_one_which_reports_nothing(qtbot):
    runner = TaskRunner()
    release = threading.Event()
    outcomes = []
    runner.succeeded.connect(outcomes.append)
    runner.cancelled.connect(lambda: outcomes.append("cancelled"))

    def slow(progress):
        release.wait(10)
        progress.check()
        return "old"

    runner.start(slow)
    with qtbot.waitSignals([runner.succeeded, runner.finished], order="strict", timeout=10_000):
        runner.start(lambda progress: "new")
        release.set()
    qtbot.wait_until(lambda: not runner._threads, timeout=10_000)
    assert outcomes == ["new"]


@pytest.mark.qt_no_exception_capture  # the window's own hook is the subject
def test_a_bug_in_a_slot_of_the_window_is_said_in_it_as_a_bug_with_its_traceback_kept(qtbot, tmp_path, monkeypatch):
    """Not only a background task's: a bug raised by a button's handler on the window's own thread, which Qt would
    print to a terminal the user never sees, is said in the window as one, in the command line's words."""
    monkeypatch.setenv("MLM_STUDIO_CACHE", str(tmp_path / "cache"))
    window = QWidget()
    qtbot.addWidget(window)
    button = QPushButton("Go", window)
    button.clicked.connect(lambda: {}["hidden_size"])
    before = sys.excepthook
    with bugs_said_in(window):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        qtbot.wait_until(lambda: any(box.isVisible() for box in window.findChildren(QMessageBox)), timeout=10_000)
    said = window.findChild(QMessageBox).text()
    assert said.startswith("KeyError: 'hidden_size'. This is a bug in MLM Studio or a library it uses")
    (kept,) = (tmp_path / "cache" / "crashes").iterdir()
    assert str(kept) in said and "KeyError" in kept.read_text(encoding="utf-8")
    assert sys.excepthook is before  # given back as it was
