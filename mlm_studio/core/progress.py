"""How long-running engine functions report progress and learn they should stop.

An engine function takes a `Progress` and calls `report(done, total, message)` now and then; between units
of work it calls `check()`, which raises `Cancelled` once cancellation was requested. The GUI passes a
`Progress` whose `report` emits a Qt signal; scripts and tests use the default, which does nothing.
"""

from __future__ import annotations

import threading


class Cancelled(Exception):
    """Raised inside a long-running function when the user asked it to stop."""


class Progress:
    """Progress sink and cancellation flag shared by the caller and a long-running function."""

    def __init__(self) -> None:
        self._cancel = threading.Event()

    def report(self, done: int, total: int, message: str = "") -> None:
        """Called by the running function; override to show progress."""

    def cancel(self) -> None:
        """Ask the running function to stop at its next `check()`."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        """Raise `Cancelled` if cancellation was requested."""
        if self._cancel.is_set():
            raise Cancelled("cancelled by the user")
