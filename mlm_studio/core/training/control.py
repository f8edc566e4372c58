"""How another thread steers a training run: pause, resume and stop, acted on between steps."""

from __future__ import annotations

import threading


class TrainingControl:
    """Pause, resume and stop requests from another thread; the trainer acts on them between steps."""

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
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def wait_while_paused(self) -> None:
        self._running.wait()
