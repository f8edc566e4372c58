"""Run one engine function off the GUI thread, with throttled progress, cancel and a readable outcome; and what
the user is told of an error, a background task's or one nothing on the window's own thread handled."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal
from PySide6.QtWidgets import QMessageBox, QProgressBar, QWidget

from mlm_studio.core.errors import MLMStudioError
from mlm_studio.core.progress import Cancelled, Progress
from mlm_studio.core.storage.crash_report import bug_said

log = logging.getLogger(__name__)
PROGRESS_INTERVAL_S = 0.05


class _SignalProgress(Progress):
    """A `Progress` that forwards reports to a Qt signal, at most every PROGRESS_INTERVAL_S seconds."""

    def __init__(self, thread: _TaskThread) -> None:
        super().__init__()
        self._thread = thread
        self._last = 0.0

    def report(self, done: int, total: int, message: str = "") -> None:
        now = time.monotonic()
        if now - self._last >= PROGRESS_INTERVAL_S or done >= total:
            self._last = now
            self._thread.progressed.emit(self._thread, done, total, message)


class _TaskThread(QThread):
    progressed = Signal(object, int, int, str)  # (thread, done, total, message)
    outcome = Signal(object, str, object)  # (thread, "ok" | "failed" | "cancelled", result or message)

    def __init__(self, fn: Callable[[Progress], Any]) -> None:
        super().__init__()
        self.fn = fn
        self.progress = _SignalProgress(self)

    def run(self) -> None:
        try:
            result = self.fn(self.progress)
        except Cancelled:
            self.outcome.emit(self, "cancelled", None)
        except Exception as exc:  # every failure reaches the user as a message
            if not expected_error(exc):
                log.exception("background task failed")
            self.outcome.emit(self, "failed", user_message(exc))
        else:
            self.outcome.emit(self, "ok", result)


def expected_error(exc: BaseException) -> bool:
    """What the engine raises on purpose (a refusal of what the user gave, a run that failed), the system's refusal
    of a file, and memory running out; anything else is a bug."""
    out_of_memory = isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError"  # torch's, on a device
    return isinstance(exc, (MLMStudioError, OSError)) or out_of_memory


def user_message(exc: BaseException) -> str:
    """A message for the user: the engine's own words, or for a bug a sentence that says it is one and where its
    traceback was kept, as the command line says it."""
    if expected_error(exc):
        return str(exc)
    return bug_said(exc, "its traceback could not be written")


@contextmanager
def bugs_said_in(window: QWidget) -> Iterator[None]:
    """While open, an error that nothing handled on the window's own thread (a slot's bug, which Qt only prints) is
    said in `window` as a background task's is: in a sentence that says it is a bug, its traceback kept. One at a
    time: a bug that repeats (in a paint) while it is said is printed alone."""
    box = QMessageBox(QMessageBox.Icon.Critical, "MLM Studio", "", parent=window)

    def said(kind: type[BaseException], exc: BaseException, trace: TracebackType | None) -> None:
        before(kind, exc, trace)  # printed as it was
        if isinstance(exc, Exception) and not box.isVisible():
            box.setText(user_message(exc))
            box.open()

    before, sys.excepthook = sys.excepthook, said
    try:
        yield
    finally:
        sys.excepthook = before


_LIVE: set[_TaskThread] = set()  # threads outlive the widget that started them, until they end


def collect_garbage_on_the_gui_thread(interval_s: float = 1.0):
    """Turn Python's automatic cycle collection off and collect on the GUI thread's timer instead (pyqtgraph's
    GarbageCollector); keep the returned object alive. Automatic collection runs in whichever thread happens to
    allocate: on a background task's thread it would run the C++ destructor of a Qt object left in a cycle there,
    which deadlocks against the GUI thread (seen: an export's thread collecting a closed window's actions while
    the GUI thread painted)."""
    from pyqtgraph.util.garbage_collector import GarbageCollector

    return GarbageCollector(interval_s)


def stop_all_tasks(timeout_ms: int = 10_000) -> bool:
    """Cancel every running task and wait for it; True if all ended in time (used at exit and by tests)."""
    for thread in list(_LIVE):
        thread.progress.cancel()
    return all(thread.wait(timeout_ms) for thread in list(_LIVE))


def tasks_running() -> int:
    """How many background tasks are still running (a benchmark waits for none before it measures)."""
    return len(_LIVE)


def _forget(thread: _TaskThread) -> None:
    _LIVE.discard(thread)
    thread.deleteLater()


def show_progress(bar: QProgressBar, done: int, total: int, message: str) -> None:
    """A task's progress on a bar: what it does and how far ("Embedding documents 40%"); busy while the total is
    unknown."""
    bar.setFormat(f"{message} %p%")
    if total > 0:
        bar.setRange(0, total)
        bar.setValue(done)


class TaskRunner(QObject):
    """Runs one function at a time in a QThread; starting another cancels the one running.

    Signals arrive on the GUI thread. Exactly one of `succeeded`, `failed` or `cancelled` follows `start`,
    then `finished`; a task superseded by a newer one reports nothing. If the runner is destroyed first,
    its tasks are cancelled and end on their own.
    """

    progress = Signal(int, int, str)
    succeeded = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    finished = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._current: _TaskThread | None = None
        self._threads: set[_TaskThread] = set()
        threads = self._threads
        self.destroyed.connect(lambda *_: [thread.progress.cancel() for thread in list(threads)])

    @property
    def running(self) -> bool:
        return self._current is not None

    def start(self, fn: Callable[[Progress], Any]) -> None:
        self.cancel()
        thread = _TaskThread(fn)
        thread.progressed.connect(self._on_progress)
        thread.outcome.connect(self._on_outcome)
        thread.finished.connect(self._on_thread_finished)
        thread.finished.connect(lambda t=thread: _forget(t))
        self._current = thread
        self._threads.add(thread)
        _LIVE.add(thread)
        thread.start()

    def cancel(self) -> None:
        """Ask the running task to stop; it reports `cancelled` when it does."""
        if self._current is not None:
            self._current.progress.cancel()

    def _on_progress(self, thread: _TaskThread, done: int, total: int, message: str) -> None:
        if thread is self._current:
            self.progress.emit(done, total, message)

    def _on_outcome(self, thread: _TaskThread, kind: str, value: object) -> None:
        if thread is not self._current:
            return
        self._current = None
        if kind == "ok":
            self.succeeded.emit(value)
        elif kind == "failed":
            self.failed.emit(value)
        else:
            self.cancelled.emit()
        self.finished.emit()

    def _on_thread_finished(self) -> None:
        self._threads.discard(self.sender())
