"""`mlm-studio`: the command line's entry point. Each command is a module of `mlm_studio.commands` (its options in
`commands/parser.py`); with no command, the window opens."""

from __future__ import annotations

import io
import os
import sys

from mlm_studio.commands.parser import build_parser
from mlm_studio.commands.terminal import INTERRUPTED, reason
from mlm_studio.core.storage.crash_report import bug_said

DEBUG_VARIABLE = "MLM_STUDIO_DEBUG"  # set to 1: an unexpected error shows its traceback


def main(argv: list[str] | None = None) -> int:
    """Run a command. Whatever error it did not handle becomes one sentence and exit 1 (the traceback with
    MLM_STUDIO_DEBUG=1); Ctrl-C exits 130 and a reader that left (`| head`) 141, both quietly."""
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:  # pressed while the command starts: as quiet as later
        return INTERRUPTED
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="surrogateescape")  # a file name that is not UTF-8 is printed as its bytes
    try:
        code = args.run(args) if args.run is not None else _window(args)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's own flush has nowhere to fail
        return 141
    except Exception as exc:
        if os.environ.get(DEBUG_VARIABLE) == "1":
            raise
        print(f"mlm-studio: {args.command or 'the window'} failed: {_bug(exc)}", file=sys.stderr)
        return 1


def _window(args) -> int:
    from mlm_studio.ui.app import run_gui

    return run_gui(screenshot=args.screenshot)


def _bug(exc: Exception) -> str:
    """What a command says of an error nothing handled: the system's words for a file or a device it could not use;
    anything else is a bug (a user's mistake is a UserError, said before it gets here), said as one."""
    if isinstance(exc, OSError) and exc.strerror:
        return reason(exc)
    return bug_said(exc, f"run again with {DEBUG_VARIABLE}=1 to see its traceback")


if __name__ == "__main__":
    sys.exit(main())
