"""A small JSON record MLM Studio wrote beside a run (a run's task.json, a search's search.json, a comparison's
comparison.json) read whole, but bounded: one that cannot be read, is longer than any such record or is not JSON is
a `RecordError` naming the file, as is a field of it that is missing or wrong (`record_error`) — a CheckpointError,
which every front end says in one sentence."""

from __future__ import annotations

from pathlib import Path

from mlm_studio.core.shown import one_line
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.json_text import read_json

MAX_RECORD_BYTES = 16 * 1024 * 1024  # far past any record MLM Studio writes


class RecordError(CheckpointError):
    """A JSON record that cannot be used: unreadable, damaged, or written by another program or version; the message
    names the file (and the field at fault)."""


def read_record(path: Path) -> object:
    """The JSON value `path` holds (its fields read with `runs.task_spec.Fields`); RecordError when it cannot be
    read, is longer than any such record, or is not JSON."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_RECORD_BYTES + 1)
    except OSError as exc:
        raise RecordError(f"{path} cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(f"{path} is damaged: it is longer than the {MAX_RECORD_BYTES // 2**20} MiB such a record "
                          "takes")  # fmt: skip
    try:
        return read_json(data.decode("utf-8"))
    except ValueError as exc:  # bytes that are not UTF-8 included
        raise RecordError(f"{path} is damaged: it is not JSON ({one_line(str(exc))})") from None


def record_error(path: Path, clause: str, foreign: bool = False) -> RecordError:
    """A field's problem (`clause`: `its "labels" is missing …`) said of the file it is in; `foreign` when the record
    is of a kind this version does not know rather than damaged."""
    return RecordError(f"{path} {'cannot be used' if foreign else 'is damaged'}: {clause}")
