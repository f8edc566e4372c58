"""TensorBoard event files beside a run's `metrics.jsonl`, under the tag names the `transformers` Trainer uses
(`train/loss`, `eval/accuracy`, …), so MLM Studio's runs sit next to a user's other experiments.

`metrics.jsonl` stays the source of truth: when a run starts or resumes, its events are written afresh from
it into a new event file (a resume has cut the metrics back to its checkpoint, so no step appears twice), then
each new record is added as it comes. Only once the new file holds them are the event files MLM Studio wrote
before removed, those alone (the folder's manifest lists them); other files and folders there stay. Writing is
synchronous: a full or read-only disk stops the events, said once, never the training. Writing needs the
`tensorboard` package (`pip install "mlm-studio[tensorboard]"`); without it runs train as before and say so.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import time
from pathlib import Path
from typing import Any

from mlm_studio.core.metric_schema import metrics_of
from mlm_studio.core.runs.records import INSTALL_HINT, RECORDS
from mlm_studio.core.storage.checkpoint import listed
from mlm_studio.core.storage.owned import NotOurs, OwnedFolder

EVENTS_FOLDER = "tensorboard"
# by record type, each metric field's tag (those with one)
TAGS = {
    kind: tags
    for kind, cls in RECORDS.items()
    if (tags := {name: m.tag for name, m in metrics_of(cls).items() if m.tag})
}
_STEPS = range(-(2**63), 2**63)  # what an event's step (an int64) holds


def available() -> bool:
    """Whether the `tensorboard` package is installed (it writes and reads the event files)."""
    try:
        import tensorboard  # noqa: F401 - only asked whether it is there
    except ImportError:
        return False
    return True


# what writing events imports (protobuf classes and the record writer): a second's work, done once
WRITER_MODULES = (
    "tensorboard.compat.proto.event_pb2",
    "tensorboard.compat.proto.summary_pb2",
    "tensorboard.summary.writer.record_writer",
)


class EventLog:
    """The run's TensorBoard events, written afresh from `records` (what `metrics.jsonl` holds) when opened. It never
    raises: a write that fails stops the log, and `error` says why; `take_notes` hands out, once each, what the
    user should hear (that events stopped, or which files in the folder were kept)."""

    def __init__(self, run_path: Path, records: list[dict[str, Any]]) -> None:
        self.folder = Path(run_path) / EVENTS_FOLDER
        self.error: str | None = None
        self._notes: list[str] = []
        self._file = None
        self.name = ""  # the event file being written
        try:
            self._open(records)
        except (OSError, ValueError) as exc:  # NotOurs included
            self._stop(exc, "are not written")

    def _open(self, records: list[dict[str, Any]]) -> None:
        from tensorboard.summary.writer.record_writer import RecordWriter

        events = [event for record in records for event in _scalar_events(record)]  # all checked before any write
        if self.folder.is_symlink():
            raise NotOurs(
                f"{self.folder} is a symbolic link; the events go only into a folder of the run's own, never through "
                "a link: move the link away"
            )
        self.folder.mkdir(exist_ok=True)
        self._owned = OwnedFolder(self.folder)
        earlier = list(self._owned.files)
        self.name, self._file = _new_event_file(self.folder)
        self._writer = RecordWriter(self._file)
        try:
            self._write([_header(), *events])
            self._owned.record(self.name, grows=True)
            self._owned.save()  # the new file is listed before any earlier one goes
        except BaseException:
            self._close_quietly()
            (self.folder / self.name).unlink()  # ours, begun just now: the earlier events stay as they were
            raise
        _, kept = self._owned.remove(earlier)
        self._owned.save()
        beside = sorted(  # event files never listed as ours (those listed were judged by `remove`, and said)
            p.name
            for p in self.folder.iterdir()
            if "tfevents" in p.name and p.name not in self._owned.files and p.name not in earlier
        )
        kept += [f"{self.folder / name} was not written by MLM Studio" for name in beside]
        if kept:
            self._notes.append(
                f"left in place: {listed(kept)}; TensorBoard shows their events with this run's (remove them if they "
                "are copies of this run's earlier events)"
            )

    def add(self, record: dict[str, Any]) -> None:
        """Write one metrics record's values (step and evaluation records; others carry no scalars)."""
        if self._file is not None:
            try:
                self._write(_scalar_events(record))
            except (OSError, ValueError) as exc:
                self._stop(exc, "are no longer written")

    def _write(self, events: list[bytes]) -> None:
        for event in events:
            self._writer.write(event)
        self._writer.flush()

    def take_notes(self) -> list[str]:
        """What has not been said yet; each note is handed out once."""
        notes, self._notes = self._notes, []
        return notes

    def close(self) -> None:
        """Close the event file and record it as it ends."""
        if self._file is None:
            return
        try:
            self._file.close()
            self._file = None
            self._owned.record(self.name, grows=True)
            self._owned.save()
        except (OSError, ValueError) as exc:
            self._stop(exc, "were not all recorded")

    def _close_quietly(self) -> None:
        """Close the event file; what it still held for a full disk is lost with it."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def _current_file(self) -> Path:
        """The event file being written (the folder before there is one)."""
        return self.folder / self.name if self.name else self.folder

    def _stop(self, exc: Exception, what: str) -> None:
        """Stop writing (the file closed, quietly) and say once why."""
        self._close_quietly()
        if isinstance(exc, OSError) and exc.strerror:
            reason = f"{exc.filename or self._current_file()}: {exc.strerror}"
        else:
            reason = str(exc)
        self.error = f"TensorBoard events {what} ({reason})"
        self._notes.append(
            f"{self.error}; training goes on, and metrics.jsonl keeps every record: `mlm-studio tensorboard` on this "
            "run writes the events again later"
        )

    @property
    def writing(self) -> str:
        """The folder the events go to, "" once they are not written (`error` says why)."""
        return str(self.folder) if self.error is None else ""


def _new_event_file(folder: Path):
    """A new event file of this log's own, named as TensorBoard expects, created without following a link."""
    stem = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}"
    for number in range(1000):
        name = f"{stem}.{number}.mlm-studio"
        try:
            fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        except FileExistsError:
            continue
        return name, os.fdopen(fd, "wb")
    raise FileExistsError(f"{folder} holds a thousand event files of this second and process")


def _header() -> bytes:
    from tensorboard.compat.proto.event_pb2 import Event

    return Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString()


def _scalar_events(record: dict[str, Any]) -> list[bytes]:
    """A metrics record's values as serialized scalar events; a step an event cannot hold is refused by name."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    kind = record.get("type", "")
    values = {tag: record.get(field) for field, tag in TAGS.get(kind, {}).items()}
    values = {tag: value for tag, value in values.items() if isinstance(value, (int, float))}
    step = record.get("step")
    if values and (isinstance(step, bool) or not isinstance(step, int) or step not in _STEPS):
        raise ValueError(
            f"a {kind} record in metrics.jsonl has the step {step!r}, which TensorBoard cannot hold (whole numbers "
            "below 2^63 only)"
        )
    now = time.time()
    return [
        Event(
            wall_time=now, step=step, summary=Summary(value=[Summary.Value(tag=tag, simple_value=_real(value))])
        ).SerializeToString()
        for tag, value in values.items()
    ]


def _real(value: float) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer beyond any float
        return math.copysign(math.inf, value)


def open_event_log(run_path: Path, records: list[dict[str, Any]]) -> EventLog | None:
    """The run's event log, or None when the `tensorboard` package is missing."""
    return EventLog(run_path, records) if available() else None


def write_events(run_path: Path, records: list[dict[str, Any]]) -> tuple[Path, list[str]]:
    """Write the events of a finished run from its metrics (`mlm-studio tensorboard RUN`): the folder, and what
    was kept there. Nothing is removed when the new events cannot be written."""
    if not available():
        raise ImportError(f"writing TensorBoard events needs the tensorboard package: {INSTALL_HINT}")
    log = EventLog(run_path, records)
    log.close()
    if log.error is not None:
        raise OSError(f"{log.error}; the earlier events were left as they were")
    return log.folder, log.take_notes()
