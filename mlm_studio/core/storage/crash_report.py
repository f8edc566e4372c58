"""A bug said as one: an exception that no refusal explains (see `core/errors.py`) is shown in a sentence that says
it is a bug, with its traceback kept in the cache's `crashes` folder for a report. The command line and the window
say it in the same words."""

from __future__ import annotations

import itertools
import os
import time
import traceback
from pathlib import Path

from mlm_studio.core.storage.files import atomic_write_bytes
from mlm_studio.core.storage.user_folders import cache_dir

_KEPT = itertools.count(1)  # this process's tracebacks, numbered: two in one second are two files


def keep_traceback(exc: BaseException) -> Path:
    """Write `exc`'s traceback into the cache's crashes folder (as every file is written: whole, never through a
    link); the file."""
    folder = cache_dir() / "crashes"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(_KEPT)}.txt"
    text = "".join(traceback.format_exception(exc))  # a file name that is not UTF-8 escaped, as Python writes it
    return atomic_write_bytes(path, text.encode("utf-8", errors="backslashreplace"))


def bug_said(exc: BaseException, unkept: str) -> str:
    """`exc` in a sentence that says it is a bug and where its traceback was kept (`unkept`, what to do instead,
    where it could not be written)."""
    try:
        kept = f"its traceback is in {keep_traceback(exc)}"
    except OSError:
        kept = unkept
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return f"{said}. This is a bug in MLM Studio or a library it uses, not in what you gave it: {kept} for a bug report"
