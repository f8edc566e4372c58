"""Where a run's records go besides its metrics.jsonl (which the loop writes first, keeping what a full disk
refused): the sinks its `training.report_to` chooses, the `transformers` Trainer's names. Each takes every record
as written, says once what stopped it, and never stops the training.

- `tensorboard`: event files in the run's folder (`tensorboard.py`), read by TensorBoard beside a user's others;
- `mlflow`: an MLflow run in the store the user's environment names (`mlflow_run.py`);
- `none`: metrics.jsonl alone.
"""

from __future__ import annotations

from typing import Any

from mlm_studio.core.runs import mlflow_run
from mlm_studio.core.runs.mlflow_run import MlflowRun
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.tensorboard import EventLog, open_event_log


def reported_to(report_to: str) -> tuple[str, ...]:
    """The sinks a `report_to` setting names ("tensorboard+mlflow": both; "none": none)."""
    return () if report_to == "none" else tuple(report_to.split("+"))


class Sinks:
    """The run's sinks, opened for a run that trains (a run that has ended is read, not written)."""

    def __init__(self, run: RunDir, params: dict[str, Any]) -> None:
        """`params`: what a tracker records of the run's settings (the recipe's choice)."""
        chosen = reported_to(run.config.training.report_to)
        self._notes: list[str] = []
        self.events: EventLog | None = None
        if "tensorboard" in chosen:
            self.events = open_event_log(run.path, run.read_metrics())
        self.tracker: MlflowRun | None = None
        if "mlflow" in chosen:
            if mlflow_run.available():
                self.tracker = MlflowRun(run.path, params)
            else:
                self._notes.append(
                    f"metrics are not reported to MLflow: the mlflow package is not installed ({mlflow_run.INSTALL}); "
                    "metrics.jsonl keeps every record"
                )

    def add(self, record: dict[str, Any]) -> None:
        """One record as metrics.jsonl holds it."""
        for sink in self._open():
            sink.add(record)

    def take_notes(self) -> list[str]:
        """What the sinks have not said yet; each note is handed out once."""
        notes, self._notes = self._notes, []
        return notes + [note for sink in self._open() for note in sink.take_notes()]

    def close(self, last: dict[str, Any] | None) -> None:
        """The run ended with `last`, its last record (None: it never began)."""
        if self.events is not None:
            self.events.close()
        if self.tracker is not None and last is not None:
            self.tracker.end(last)

    def _open(self) -> list:
        return [sink for sink in (self.events, self.tracker) if sink is not None]

    @property
    def events_folder(self) -> str:
        """The folder the TensorBoard events go to; "" when they are not written."""
        return self.events.writing if self.events is not None else ""

    @property
    def events_refused(self) -> bool:
        """Whether the TensorBoard events were asked for and could not be written."""
        return self.events is not None and self.events.error is not None
