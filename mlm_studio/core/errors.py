"""What MLM Studio raises on purpose, and the one kind a front end shows as it is.

Every refusal of what a user gave (a file, a setting, a model, a text, an option that cannot go with another) is a
`UserError`: its message is one sentence that says what is wrong, naming the file or the field, and what to do
instead. The command line and the window catch exactly these (and the system's own `OSError`s, said in its words)
and show the sentence; any other exception is a bug, of MLM Studio or of a library it uses, and is said as one,
its traceback kept for a report, never dressed as a refusal. A `UserError` is a `ValueError` too, as the callers
that check values expect.
"""

from __future__ import annotations


class MLMStudioError(Exception):
    """An error MLM Studio raises on purpose."""


class UserError(MLMStudioError, ValueError):
    """A refusal of what a user gave, in one sentence; `fields` names the settings at fault where there are any."""

    fields: tuple[str, ...] = ()
