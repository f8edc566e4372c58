"""What every terminal command says the same way: a one-sentence failure, a result on stdout, strict JSON and
the progress of data preparation."""

from __future__ import annotations

import json
import sys

from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.run_folder import finite_or_none


def fail(message: str, status: int = 1) -> int:
    """Say why a command could not do its work, on stderr, and give its exit status (1 unless told)."""
    print(f"mlm-studio: {message}", file=sys.stderr)
    return status


def strict_json(value) -> str:
    """Strict JSON: every NaN or infinity (an empty group's accuracy) as null, which JSON has instead."""
    return json.dumps(finite_or_none(value), ensure_ascii=False, allow_nan=False)


def emit(text: str) -> int:
    """Print a command's result on stdout (0), or say why it could not be written there (1); a reader that left
    (`| head`) is the top level's to end quietly."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        raise
    except OSError as exc:
        return fail(f"could not write the output ({exc.strerror or exc})")
    return 0


class Status(Progress):
    """Progress of data preparation on stderr, when it is a terminal."""

    def report(self, done: int, total: int, message: str = "") -> None:
        if sys.stderr.isatty() and total:
            print(f"\r{message}: {100 * done / total:5.1f}%\033[K", end="", file=sys.stderr, flush=True)
