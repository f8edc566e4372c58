"""How another thread steers a training run: pause, resume and stop, acted on between steps. A stop may also come
from a signal handler on the training thread itself (Ctrl-C on the command line): the step-by-step checks take no
lock, so the handler can never wait for a lock that the thread it interrupted holds."""

from __future__ import annotations

import threading

# The states a training goes through as a window follows it
IDLE, PREPARING, RUNNING, PAUSED, STOPPING = "idle", "preparing", "running", "paused", "stopping"


class TrainingControl:
    """Pause, resume and stop requests from another thread or a signal handler; the trainer acts on them between
    steps."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        self._stop.set()
        if not self._running.is_set():  # `is_set` takes no lock; `set` does, so only a paused run is woken
            self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def wait_while_paused(self) -> None:
        """Return at once unless paused (without a lock: see the module's note), else when resumed or stopped."""
        if not self._running.is_set():
            self._running.wait()
