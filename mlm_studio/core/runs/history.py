"""What the runs in a folder did: the list of runs, each one's outcome in a line, its records read back typed, and
its metrics as CSV. A list of what a folder holds says what it left out, and why (`Listed`). A folder listed again
and again (`RunsListing`) reads each run only when its files changed: a run's stamp (the size and modification time
of the files a listing reads) is kept with what was read of it, so that a checkpoint of one run among hundreds costs
one run's reading, and a stopped run's records are read once."""

from __future__ import annotations

import csv
import io
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from mlm_studio.core.config.sections import TrainConfig
from mlm_studio.core.durations import format_duration
from mlm_studio.core.metric_schema import csv_columns, metrics_of
from mlm_studio.core.runs.records import (
    RECORDS,
    EvalRecord,
    ProbeRecord,
    ProbeResult,
    StepRecord,
    fits_type,
    kind_of,
)
from mlm_studio.core.runs.run_folder import TASK, RunDir, checkpoint_step
from mlm_studio.core.storage.checkpoint import CHECKPOINTS, CheckpointError
from mlm_studio.core.storage.metric_lines import metric_records

TAIL_BYTES = 256 * 1024  # the end of metrics.jsonl that holds a run's latest records
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class LeftOut:
    """A folder a list leaves out, and why: a sentence that names the file at fault."""

    path: Path
    reason: str

    def said(self) -> str:
        return f"{self.path.name}: {self.reason}"


@dataclass(frozen=True)
class Listed(Generic[T]):
    """What a folder holds of one kind (`found`), and the folders of that kind it left out, each with why."""

    found: tuple[T, ...]
    left_out: tuple[LeftOut, ...] = ()


@dataclass(frozen=True)
class RunSummary:
    """A run's outcome as far as its files tell: what the Runs table shows."""

    path: Path
    preset: str
    checkpoint_step: int  # of the latest checkpoint; 0 without one
    state: str  # completed | stopped | failed | interrupted (killed, or still training)
    tokens_seen: int
    elapsed: float  # seconds of training
    val_loss: float | None  # of the last evaluation, at `val_step`
    val_accuracy: float | None
    modified: float  # the folder's last change, seconds since the epoch
    step: int = 0  # the last step its records reach
    total_steps: int = 0  # the steps it trains for, as its last start said; 0 when unknown
    time_budget: float = 0.0  # seconds, for a run measured in time
    val_step: int | None = None  # of the last evaluation


PRETRAINING, FINETUNING = "pre-training", "fine-tuning"  # the kinds of run


def run_kind(path: str | Path) -> str:
    """A run's kind, told by its files: a fine-tuning run holds its task, a pre-training run does not."""
    return FINETUNING if (Path(path) / TASK).is_file() else PRETRAINING


def same_run(a: str | Path | None, b: str | Path | None) -> bool:
    """Whether `a` and `b` are one run folder, however each is written."""
    return a is not None and b is not None and Path(a).resolve() == Path(b).resolve()


def list_runs(root: str | Path, kind: str | None = None) -> list[RunDir]:
    """Run folders directly under `root` (only those of `kind`, when given), newest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = [RunDir(p) for p in root.iterdir() if (p / "config.toml").is_file()]
    if kind is not None:
        runs = [run for run in runs if run_kind(run.path) == kind]
    return sorted(runs, key=lambda r: r.path.stat().st_mtime, reverse=True)


def summarize(run: RunDir) -> RunSummary:
    """The latest step, evaluation and ending of `run`, read from the end of its metrics (cheap for long runs); a
    value of another type than its record's field (a damaged line) is read as missing."""
    records = _last_records(run.metrics_path)
    last = {record["type"]: record for record in records}
    endings = [r for r in records if r["type"] in ("step", "eval", "paused", "finished", "failed")]
    ending = endings[-1]["type"] if endings else ""
    reason = _typed(last.get("finished", {}), "reason", str, "completed")
    state = {"finished": reason, "failed": "failed"}.get(ending, "interrupted")
    progress = max((last.get(kind, {}) for kind in ("step", "eval")), key=lambda r: r.get("step", -1))
    latest = run.latest_checkpoint()
    try:
        preset = run.config.preset
    except CheckpointError:
        preset = "?"
    evaluation = last.get("eval", {})
    started = last.get("started", {})
    return RunSummary(
        path=run.path,
        preset=preset,
        checkpoint_step=checkpoint_step(latest) if latest else 0,
        state=state,
        tokens_seen=_typed(progress, "tokens_seen", int, 0),
        elapsed=_typed(progress, "elapsed", float, 0.0),
        val_loss=_typed(evaluation, "loss", float, None),
        val_accuracy=_typed(evaluation, "accuracy", float, None),
        modified=run.path.stat().st_mtime,
        step=max((r["step"] for r in endings), default=0),
        total_steps=_typed(started, "total_steps", int, 0),
        time_budget=_typed(started, "time_budget", float, 0.0),
        val_step=evaluation.get("step"),
    )


def _typed(record: dict, name: str, kind: type, default: Any) -> Any:
    """A record's value of `name` when it is of `kind` (a number: finite), else `default`."""
    value = record.get(name, default)
    return value if fits_type(value, kind) else default


def nothing_left(run: RunDir, summary: RunSummary, training: TrainConfig | None = None) -> bool:
    """Whether resuming `run` with `training` (its own settings unless given) would train nothing: its latest
    checkpoint is at the end those settings give."""
    try:
        own = run.config.training
    except CheckpointError:
        return False
    training = training or own
    if training.time_budget > 0:
        return summary.state == "completed" and summary.elapsed >= training.time_budget
    if training.epochs > 0:  # its steps depend on the corpus's blocks: as its last start counted them
        counted = training.epochs == own.epochs and summary.total_steps > 0
        return counted and summary.checkpoint_step >= summary.total_steps
    return summary.checkpoint_step >= training.max_steps


def outcome(summary: RunSummary) -> str:
    """How far a run got and its last evaluation with its step: "stopped at step 98 of 150; validation loss 6.365,
    accuracy 12.0% at step 75"."""
    if summary.step == 0:
        return f"{summary.state}: no step trained"
    reached = f"at step {summary.step:,}"
    if summary.time_budget > 0:
        reached += f" after {format_duration(summary.elapsed)} of {format_duration(summary.time_budget)}"
    elif summary.total_steps:
        reached += f" of {summary.total_steps:,}"
    state = "interrupted (or training elsewhere)" if summary.state == "interrupted" else summary.state
    return f"{state} {reached}; {evaluation_said(summary.val_loss, summary.val_accuracy, summary.val_step)}"


def evaluation_said(loss: float | None, accuracy: float | None, step: int | None) -> str:
    """An evaluation's figures with the step they are from: "validation loss 6.365, accuracy 12.0% at step 75"."""
    if step is None:
        return "no evaluation"
    figures = [f"validation loss {loss:.3f}" if loss is not None else "validation loss undefined"]
    if accuracy is not None:
        figures.append(f"accuracy {accuracy:.1%}")
    return f"{', '.join(figures)} at step {step:,}"


def _last_records(path: Path) -> list[dict[str, Any]]:
    """The complete records in the last `TAIL_BYTES` of a metrics file, in order."""
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - TAIL_BYTES))
            lines = file.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return metric_records(lines[1:] if size > TAIL_BYTES else lines)  # the first line of a tail is cut


CSV_RECORDS = (EvalRecord, StepRecord, ProbeRecord)  # a row each; a probe record's results a row each
CSV_COLUMNS = csv_columns((*CSV_RECORDS, ProbeResult))


def metrics_csv(records: list[dict]) -> str:
    """Training, evaluation and probe records as CSV in the order they were written: one row per step or
    evaluation record, one per probe result (its expected word, rank, probability and text). No value is left
    out: one the schema does not name (written by another version) gets a column after the others."""
    rows = [row for record in records for row in _csv_rows(record)]
    columns = dict.fromkeys([*CSV_COLUMNS, *(column for row in rows for column in row)])
    out = io.StringIO()
    writer = csv.DictWriter(out, list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _csv_rows(record: dict) -> list[dict]:
    """A record's rows: a probe record's one per result (itself alone without results), any other's one."""
    kind = record.get("type")
    if kind not in (kind_of(cls) for cls in CSV_RECORDS):
        return []
    probe = kind == kind_of(ProbeRecord)
    row = _by_column(RECORDS[kind], {k: v for k, v in record.items() if not (probe and k == "results")})
    if not probe:
        return [_cells(row)]
    results = record.get("results", [])
    each = results if isinstance(results, list) else [results]
    rows = [{**row, **_by_column(ProbeResult, r)} if isinstance(r, dict) else {**row, "results": r} for r in each]
    return [_cells(r) for r in rows or [row]]


def _cells(row: dict) -> dict:
    """A row's values as CSV cells: nested values as JSON, as metrics.jsonl holds them."""
    return {key: json.dumps(value) if isinstance(value, (dict, list)) else value for key, value in row.items()}


def _by_column(cls: type, values: dict) -> dict:
    """`values` keyed by their CSV columns (a field the schema does not name keeps its own name)."""
    columns = {name: m.column for name, m in metrics_of(cls).items()}
    return {columns.get(key, key): value for key, value in values.items()}


STAMPED = ("", "config.toml", "metrics.jsonl", TASK, CHECKPOINTS, "best/state.json")  # "": the folder itself
Stamp = tuple[tuple[int, int] | None, ...]


def stamp(folder: Path) -> Stamp:
    """The size and modification time (ns) of each file a run's reading depends on, None for one missing."""
    found = []
    for name in STAMPED:
        try:
            status = os.stat(folder / name)
        except OSError:
            found.append(None)
        else:
            found.append((status.st_mtime_ns, status.st_size))
    return tuple(found)


class RunsListing(Generic[T]):
    """What `read` makes of each run folder directly under a root (None: not a run of this listing's kind; a
    CheckpointError: a run left out, with why), kept while the run's stamp stays the same. Safe to refresh from
    any thread, one at a time."""

    def __init__(self, read: Callable[[RunDir], T | None]) -> None:
        self._read = read
        self._known: dict[Path, tuple[Stamp, T | LeftOut | None]] = {}
        self._lock = threading.Lock()
        self.reads = 0  # how many runs were read (not taken from what was kept): what a refresh cost

    def refresh(self, root: str | Path) -> Listed[T]:
        """The runs under `root` of this listing's kind, newest first (by their folder's last change), and those
        left out; a run whose files are as they were is not read again."""
        root = Path(root)
        with self._lock:
            folders = [p for p in root.iterdir() if (p / "config.toml").is_file()] if root.is_dir() else []
            known: dict[Path, tuple[Stamp, T | LeftOut | None]] = {}
            for folder in folders:
                current = stamp(folder)
                kept = self._known.get(folder)
                known[folder] = kept if kept is not None and kept[0] == current else (current, self._reading(folder))
            self._known = known
        newest = sorted(known.items(), key=lambda item: item[1][0][0] or (0, 0), reverse=True)
        found = tuple(read for _, (_, read) in newest if read is not None and not isinstance(read, LeftOut))
        return Listed(found, tuple(read for _, (_, read) in newest if isinstance(read, LeftOut)))

    def _reading(self, folder: Path) -> T | LeftOut | None:
        self.reads += 1
        try:
            return self._read(RunDir(folder))
        except (CheckpointError, OSError) as exc:  # an OSError: the folder went while it was read
            return LeftOut(folder, str(exc))


def pretraining_summary(run: RunDir) -> RunSummary | None:
    """A pre-training run's summary (None for a fine-tuning run): what the Runs table and the model choosers
    show."""
    return None if (run.path / TASK).is_file() else summarize(run)
