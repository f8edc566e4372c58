"""A widget built in steps: at the window's launch one step per turn of its event loop, so that the window repaints
and answers between them; all at once when it is shown before the window got to it, or made outside the window."""

from __future__ import annotations

from collections.abc import Iterator


class Construction:
    """The steps of a widget's construction (a generator that yields between them), taken by whoever asks first."""

    def __init__(self, steps: Iterator[None], sliced: bool) -> None:
        """`sliced`: leave the steps to the window (`steps`); otherwise take them all now."""
        self.steps = steps
        if not sliced:
            self.finish()

    def finish(self) -> None:
        """Take whatever steps are left."""
        for _ in self.steps:
            pass
