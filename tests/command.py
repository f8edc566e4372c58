"""`mlm-studio` run inside the test's own process, for the tests whose subject is what a command says, writes and
exits with: the same `main` as the installed command, without a fresh interpreter's two seconds of imports. A
subprocess stays where the process itself is the subject (a signal, a second process, a fresh interpreter's imports
or memory, torchrun).

What a terminal would show is what the test sees: the warnings a fresh interpreter prints (its default filters;
one from MLM Studio's own code is an error, as the test configuration makes it) are written to the standard error
the command's own words go to; and a command that hangs ends the test's process after `WATCHDOG_S`, its threads'
stacks printed, where it would otherwise wait for ever (a subprocess had its timeout)."""

import contextlib
import faulthandler
import io
import os
import sys
import warnings
from dataclasses import dataclass
from unittest import mock

from mlm_studio.cli import main

WATCHDOG_S = 600


@dataclass(frozen=True)
class Ran:
    """What a terminal sees of a command: its exit status, its standard output and its standard error."""

    returncode: int
    stdout: str
    stderr: str


def mlm_studio(*args, env: dict[str, str] | None = None) -> Ran:
    """`mlm-studio ARGS` (each argument as `str` gives it), with `env` added to the environment while it runs."""
    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, env or {}),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        warnings.catch_warnings(record=True) as shown,
    ):
        as_a_fresh_interpreter()
        faulthandler.dump_traceback_later(WATCHDOG_S, exit=True, file=sys.__stderr__)
        try:
            code = main([str(arg) for arg in args])
        except SystemExit as exited:  # argparse's own exits: 0 after --help, 2 for a misused option
            code = exited.code if isinstance(exited.code, int) else 0 if exited.code is None else 1
        finally:
            faulthandler.cancel_dump_traceback_later()
    said = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line) for w in shown)
    return Ran(code, out.getvalue(), said + err.getvalue())


def as_a_fresh_interpreter() -> None:
    """The warning filters of `python -m mlm_studio` (Python's defaults), MLM Studio's own warnings errors."""
    warnings.resetwarnings()
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__", append=True)
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=category, append=True)
    warnings.filterwarnings("error", module="mlm_studio")  # first: ahead of every filter above
