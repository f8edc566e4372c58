"""The engine's trainer in a dedicated QThread: a worker that re-emits its records as signals, and the
controller the panels talk to. The worker never touches a widget."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from mlm_studio.core.progress import Cancelled, Progress
from mlm_studio.core.runs.control import IDLE, PAUSED, PREPARING, RUNNING, STOPPING, TrainingControl
from mlm_studio.core.runs.records import FailedRecord, PausedRecord, StartedRecord
from mlm_studio.ui.tasks import expected_error, user_message

if TYPE_CHECKING:
    from mlm_studio.core.training.trainer import Trainer

log = logging.getLogger(__name__)


class _ControlledProgress(Progress):
    """Preparation progress as a signal; a stop request cancels the preparation."""

    def __init__(self, worker: TrainingWorker) -> None:
        super().__init__()
        self.worker = worker

    def report(self, done: int, total: int, message: str = "") -> None:
        self.worker.progress.emit(done, total, message)

    @property
    def cancelled(self) -> bool:
        return self.worker.control.stop_requested

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled("stopped before training began")


class TrainingWorker(QObject):
    """Prepares a trainer, then runs it, emitting every record (or every item that carries one as `.record`: a
    comparison's, which says the contender and seed besides)."""

    prepared = Signal(object)  # the StartedRecord
    progress = Signal(int, int, str)
    record = Signal(object)
    failed = Signal(str)
    done = Signal()

    def __init__(
        self, prepare: Callable[[Progress, TrainingControl, ExitStack], Trainer], control: TrainingControl
    ) -> None:
        super().__init__()
        self.prepare = prepare
        self.control = control

    @Slot()
    def run(self) -> None:
        """`prepare` takes what it must hold for the whole run (the run folder's lock) into the stack."""
        with ExitStack() as held:
            self._run(held)

    def _run(self, held: ExitStack) -> None:
        try:
            trainer = self.prepare(_ControlledProgress(self), self.control, held)
            for item in trainer.run():
                record = getattr(item, "record", item)
                if isinstance(record, StartedRecord):
                    self.prepared.emit(record)
                elif isinstance(record, FailedRecord):
                    self.failed.emit(record.message)
                self.record.emit(item)
        except Cancelled:
            pass
        except Exception as exc:  # every failure reaches the user as a message; only a bug's is logged
            if not expected_error(exc):
                log.exception("training failed")
            self.failed.emit(user_message(exc))
        finally:
            self.done.emit()


class TrainingController(QObject):
    """Start, pause, resume and stop one training at a time; all signals arrive on the GUI thread."""

    state_changed = Signal(str)
    prepared = Signal(object)
    progress = Signal(int, int, str)
    record = Signal(object)
    failed = Signal(str)
    finished = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._state = IDLE
        self._thread: QThread | None = None
        self._worker: TrainingWorker | None = None
        self.control = TrainingControl()

    @property
    def state(self) -> str:
        return self._state

    @property
    def busy(self) -> bool:
        return self._state != IDLE

    def start(self, prepare: Callable[[Progress, TrainingControl, ExitStack], Trainer]) -> None:
        """Run `prepare(progress, control, held)` then the trainer it returns, in a new thread; what `prepare`
        puts in `held` is released when the run ends."""
        if self.busy:
            raise RuntimeError("a training is already running")
        self.control = TrainingControl()
        thread = QThread()
        worker = TrainingWorker(prepare, self.control)
        worker.moveToThread(thread)
        thread.started.connect(worker.run)
        worker.prepared.connect(self._on_prepared)
        worker.progress.connect(self.progress)
        worker.record.connect(self._on_record)
        worker.failed.connect(self.failed)
        worker.done.connect(thread.quit, Qt.ConnectionType.DirectConnection)  # works while the GUI waits
        thread.finished.connect(self._on_thread_finished)
        self._thread, self._worker = thread, worker
        self._set_state(PREPARING)
        thread.start()

    def pause(self) -> None:
        if self._state == RUNNING:
            self.control.pause()
            self._set_state(PAUSED)

    def resume(self) -> None:
        if self._state == PAUSED:
            self.control.resume()
            self._set_state(RUNNING)

    def toggle_pause(self) -> None:
        """Pause a running training, resume a paused one."""
        if self._state == RUNNING:
            self.pause()
        elif self._state == PAUSED:
            self.resume()

    def stop(self) -> None:
        """Ask the trainer to stop after the current step; it saves a checkpoint and finishes."""
        if self.busy and self._state != STOPPING:
            self.control.stop()
            self._set_state(STOPPING)

    def wait(self, timeout_ms: int) -> bool:
        """Block until the training thread has ended (then the controller is idle at once); False if it is
        still running after `timeout_ms`."""
        if self._thread is None:
            return True
        if not self._thread.wait(timeout_ms):
            return False
        self._finish()
        return True

    def _on_prepared(self, started: StartedRecord) -> None:
        if self._state == PREPARING:
            self._set_state(RUNNING)
        self.prepared.emit(started)

    def _on_record(self, item) -> None:
        if isinstance(getattr(item, "record", item), PausedRecord) and self._state == RUNNING:
            self._set_state(PAUSED)
        self.record.emit(item)

    def _on_thread_finished(self) -> None:
        if self.sender() is self._thread:  # not an earlier thread already handled by `wait`
            self._finish()

    def _finish(self) -> None:
        thread, self._thread, self._worker = self._thread, None, None
        thread.deleteLater()
        self._set_state(IDLE)
        self.finished.emit()

    def _set_state(self, state: str) -> None:
        self._state = state
        self.state_changed.emit(state)
