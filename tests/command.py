"""`mlm-studio` run inside the test's own process, for the tests whose subject is what a command says, writes and
exits with: the same `main` as the installed command, without a fresh interpreter's two seconds of imports. A
subprocess stays where the process itself is the subject (a signal, a second process, a fresh interpreter's imports
or memory, torchrun)."""

import contextlib
import io
import os
from dataclasses import dataclass
from unittest import mock

from mlm_studio.cli import main


@dataclass(frozen=True)
class Ran:
    """What a terminal sees of a command: its exit status, its standard output and its standard error."""

    returncode: int
    stdout: str
    stderr: str


def mlm_studio(*args, env: dict[str, str] | None = None) -> Ran:
    """`mlm-studio ARGS` (each argument as `str` gives it), with `env` added to the environment while it runs."""
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(arg) for arg in args])
        except SystemExit as exited:  # argparse's own exits: 0 after --help, 2 for a misused option
            code = exited.code if isinstance(exited.code, int) else 0 if exited.code is None else 1
    return Ran(code, out.getvalue(), err.getvalue())
