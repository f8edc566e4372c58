"""What every terminal command says and does the same way: a one-sentence failure, an error of the system in its
own words, the exit status of a command the user stopped, Ctrl-C during training, a result on stdout, strict JSON
and the progress of data preparation. Torch-free: the parser imports it."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time

from mlm_studio.core.progress import Progress
from mlm_studio.core.shown import one_line

INTERRUPTED = 128 + signal.SIGINT  # 130: the exit status of a command the user stopped with Ctrl-C, as shells give
SLOW_SECONDS = 5.0  # a phase of data preparation this long is said where no progress line is drawn
MISUSED = 2  # the exit status of an option misused, as argparse gives (options that do not go together, too)


def fail(message: str, status: int = 1) -> int:
    """Say why a command could not do its work, on stderr, and give its exit status (1 unless told)."""
    print(f"mlm-studio: {message}", file=sys.stderr)
    return status


def reason(exc: Exception) -> str:
    """An error in words: the system's own for a file or device (and the file it names), else its message."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (f" ({one_line(str(exc.filename), PATH_CHARS)})" if exc.filename else "")
    return str(exc)


LABEL_CHARS = 40  # of a class label in a table: each label on one line, escaped (`one_line`)
PATH_CHARS = 300  # of a file name a message repeats (a name the system refused as too long can be any length)


def stop_on_interrupt(control, say: bool = True):
    """A SIGINT handler for a training loop: the first Ctrl-C asks `control` to stop after the current step with
    a checkpoint (said on stderr unless `say` is false); a second aborts at once."""

    def on_interrupt(signum, frame):
        if control.stop_requested:
            raise KeyboardInterrupt
        if say:
            print("\nStopping after this step and saving a checkpoint (Ctrl-C again to abort)…", file=sys.stderr)
        control.stop()

    return on_interrupt


@contextlib.contextmanager
def interrupts_stop(control, say: bool = True):
    """While inside: Ctrl-C stops `control`'s loop as `stop_on_interrupt` says; the handler before is put back."""
    previous = signal.signal(signal.SIGINT, stop_on_interrupt(control, say))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def strict_json(value) -> str:
    """Strict JSON: every NaN or infinity (an empty group's accuracy) as null, which JSON has instead."""
    from mlm_studio.core.storage.metric_lines import finite_or_none  # imported here: the parser starts without torch

    return json.dumps(finite_or_none(value), ensure_ascii=False, allow_nan=False)


def emit(text: str) -> int:
    """Print a command's result on stdout (0), or say why it could not be written there (1); a reader that left
    (`| head`) is the top level's to end quietly."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        raise
    except OSError as exc:
        return fail(f"could not write the output ({reason(exc)})")
    return 0


class Status(Progress):
    """Progress of data preparation on stderr: on a terminal, one line rewritten with the share done; elsewhere (a
    log, a pipe), a phase that lasts `SLOW_SECONDS` said once, so that a slow step is never silent."""

    def __init__(self) -> None:
        super().__init__()
        self._phase, self._since, self._said = "", 0.0, ""

    def report(self, done: int, total: int, message: str = "") -> None:
        if not total:
            return
        if sys.stderr.isatty():
            print(f"\r{message}: {100 * done / total:5.1f}%\033[K", end="", file=sys.stderr, flush=True)
            return
        now = time.monotonic()
        if message != self._phase:
            self._phase, self._since = message, now
        elif message != self._said and now - self._since >= SLOW_SECONDS:
            self._said = message
            print(f"{message}…", file=sys.stderr, flush=True)


def print_report(report) -> None:
    """What happened to one file read (a corpus file's or a task file's `SourceReport`), indented, on stderr."""
    print("\n".join(f"  {line}" for line in report.describe()), file=sys.stderr, flush=True)


def warn_untrained(model, consequence: str) -> None:
    """Say, on stderr, that a folder's masked-LM head was made on import: it is warned of, not refused, because its
    encoder is real (a --task probe measures it, the Playground compares it with a trained one) and a script reads
    the JSON's `untrained_head` to decide for itself."""
    print(
        f"mlm-studio: warning: {model} holds an encoder without a masked-LM head, so the head is new and untrained "
        f"and {consequence}; train it first with: mlm-studio train --init-from {model}",
        file=sys.stderr,
    )
