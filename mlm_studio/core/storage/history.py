"""What the runs in a folder did: the list of runs, each one's outcome in a line, and its metrics as CSV."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.run_folder import RunDir, checkpoint_step, metric_records

TAIL_BYTES = 256 * 1024  # the end of metrics.jsonl that holds a run's latest records


@dataclass(frozen=True)
class RunSummary:
    """A run's outcome as far as its files tell: what the Runs table shows."""

    path: Path
    preset: str
    checkpoint_step: int  # of the latest checkpoint; 0 without one
    state: str  # completed | stopped | failed | interrupted (killed, or still training)
    tokens_seen: int
    elapsed: float  # seconds of training
    val_loss: float | None
    val_accuracy: float | None
    modified: float  # the folder's last change, seconds since the epoch


def list_runs(root: str | Path) -> list[RunDir]:
    """Run folders directly under `root`, newest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = [RunDir(p) for p in root.iterdir() if (p / "config.toml").is_file()]
    return sorted(runs, key=lambda r: r.path.stat().st_mtime, reverse=True)


def summarize(run: RunDir) -> RunSummary:
    """The latest step, evaluation and ending of `run`, read from the end of its metrics (cheap for long runs)."""
    records = _last_records(run.metrics_path)
    last = {record["type"]: record for record in records}
    endings = [r for r in records if r["type"] in ("step", "eval", "paused", "finished", "failed")]
    ending = endings[-1]["type"] if endings else ""
    state = {"finished": last.get("finished", {}).get("reason", "completed"), "failed": "failed"}.get(
        ending, "interrupted"
    )
    progress = max((last.get(kind, {}) for kind in ("step", "eval")), key=lambda r: r.get("step", -1))
    latest = run.latest_checkpoint()
    try:
        preset = run.config.preset
    except CheckpointError:
        preset = "?"
    evaluation = last.get("eval", {})
    return RunSummary(
        path=run.path,
        preset=preset,
        checkpoint_step=checkpoint_step(latest) if latest else 0,
        state=state,
        tokens_seen=int(progress.get("tokens_seen", 0)),
        elapsed=float(progress.get("elapsed", 0.0)),
        val_loss=evaluation.get("loss"),
        val_accuracy=evaluation.get("accuracy"),
        modified=run.path.stat().st_mtime,
    )


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


CSV_COLUMNS = (
    "type",
    "step",
    "tokens_seen",
    "elapsed",
    "loss",
    "accuracy",
    "top5_accuracy",
    "perplexity",
    "learning_rate",
    "grad_norm",
    "tokens_per_second",
    "probe",
    "rank",
    "probability",
)


def metrics_csv(records: list[dict]) -> str:
    """Training, evaluation and probe records as CSV in the order they were written: one row per step or
    evaluation record, one per probe result (its expected word, rank and probability)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for record in records:
        if record.get("type") in ("step", "eval"):
            writer.writerow(record)
        elif record.get("type") == "probe":
            for result in record.get("results", []):
                writer.writerow({**record, **result, "probe": result.get("expected")})
    return out.getvalue()
