"""A run's metrics sent to MLflow as its users set it up: the tracking store `MLFLOW_TRACKING_URI` names (MLflow's
default where it is unset), the experiment `MLFLOW_EXPERIMENT_NAME` names (else "MLM Studio"). One MLflow run per
MLM Studio run: its settings as parameters, the run folder as a tag, each record's values under the tags
TensorBoard gets (`train/loss`, `eval/accuracy`, …) by step, and its end as the run's status. The MLflow run's id is
kept in the run folder (`mlflow.json`), so a resume goes on in the same MLflow run.

Like the TensorBoard events it never raises: a store that cannot be reached stops the reporting, said once, never
the training; metrics.jsonl keeps every record. It needs the `mlflow` package (`pip install "mlm-studio[mlflow]"`).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from mlm_studio.core.runs.tensorboard import TAGS
from mlm_studio.core.storage.files import atomic_write_json

MLFLOW_FILE = "mlflow.json"  # the MLflow run a run reports to: {"tracking_uri", "run_id"}
EXPERIMENT = "MLM Studio"
INSTALL = 'pip install "mlm-studio[mlflow]"'
STATUS = {"completed": "FINISHED", "stopped early": "FINISHED", "stopped": "KILLED"}
BATCH = 100  # the most values MLflow takes in one request of each kind


def available() -> bool:
    """Whether the `mlflow` package (or `mlflow-skinny`) is installed."""
    try:
        import mlflow  # noqa: F401 - only asked whether it is there
    except ImportError:
        return False
    return True


class MlflowRun:
    """The MLflow run of the run in `run_path` (`params`: what it records of its settings), made or found again
    when opened; `error` says why it stopped."""

    def __init__(self, run_path: Path, params: dict[str, Any]) -> None:
        self.path = Path(run_path)
        self.error: str | None = None
        self._notes: list[str] = []
        self._client = None
        self.run_id = ""
        try:
            self._open(params)
        except Exception as exc:  # a store MLflow cannot reach raises its own kinds of error
            self._stop(exc, "is not reported to")

    def _open(self, params: dict[str, Any]) -> None:
        from mlflow import MlflowClient
        from mlflow.tracking import get_tracking_uri

        uri = get_tracking_uri()
        self._client = MlflowClient(uri)
        known = _known_run(self.path / MLFLOW_FILE, uri)
        if known:
            self.run_id = known
            self._client.update_run(known, status="RUNNING")
            return
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT
        experiment = self._client.get_experiment_by_name(name)
        experiment_id = experiment.experiment_id if experiment else self._client.create_experiment(name)
        tags = {"mlm_studio.run_dir": str(self.path.resolve())}
        self.run_id = self._client.create_run(experiment_id, run_name=self.path.name, tags=tags).info.run_id
        atomic_write_json(self.path / MLFLOW_FILE, {"tracking_uri": uri, "run_id": self.run_id})
        from mlflow.entities import Param

        items = [Param(key, str(value)[:6000]) for key, value in params.items()]
        for first in range(0, len(items), BATCH):
            self._client.log_batch(self.run_id, params=items[first : first + BATCH])

    def add(self, record: dict[str, Any]) -> None:
        """Send one metrics record's values (step and evaluation records; others carry none)."""
        if self._client is None or self.error is not None:
            return
        from mlflow.entities import Metric

        step, now = record.get("step"), _milliseconds()
        values = [
            Metric(key, float(value), now, step)
            for field, key in TAGS.get(record.get("type", ""), {}).items()
            if isinstance(value := record.get(field), (int, float)) and math.isfinite(value)
        ]
        try:
            for first in range(0, len(values), BATCH):
                self._client.log_batch(self.run_id, metrics=values[first : first + BATCH])
        except Exception as exc:
            self._stop(exc, "is no longer reported to")

    def end(self, record: dict[str, Any]) -> None:
        """Mark the MLflow run ended as the run's last record says (finished, stopped, failed)."""
        if self._client is None or self.error is not None:
            return
        status = "FAILED" if record.get("type") == "failed" else STATUS.get(record.get("reason", ""), "KILLED")
        try:
            self._client.set_terminated(self.run_id, status=status)
        except Exception as exc:
            self._stop(exc, "could not be told the run ended")

    def take_notes(self) -> list[str]:
        notes, self._notes = self._notes, []
        return notes

    def _stop(self, exc: Exception, what: str) -> None:
        self.error = f"MLflow {what} ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        self._notes.append(f"{self.error}; training goes on, and metrics.jsonl keeps every record")


def _known_run(path: Path, uri: str) -> str:
    """The id of the MLflow run an earlier session of this run made in the store at `uri`; "" for none."""
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(known, dict) or known.get("tracking_uri") != uri or not isinstance(known.get("run_id"), str):
        return ""
    return known["run_id"]


def _milliseconds() -> int:
    return int(time.time() * 1000)
