"""TensorBoard event files beside a run's `metrics.jsonl`, under the tag names the `transformers` Trainer uses
(`train/loss`, `eval/accuracy`, …), so MLM Studio's runs sit next to a user's other experiments.

`metrics.jsonl` stays the source of truth: when a run starts or resumes, its events are written afresh from
it (a resume has cut the metrics back to its checkpoint, so no step appears twice), then each new record is
added as it comes. Writing needs the `tensorboard` package (`pip install "mlm-studio[tensorboard]"`); without
it runs train as before and say so.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from mlm_studio.core.metric_schema import metrics_of
from mlm_studio.core.training.records import INSTALL_HINT, RECORDS

EVENTS_FOLDER = "tensorboard"
# by record type, each metric field's tag (those with one)
TAGS = {
    kind: tags
    for kind, cls in RECORDS.items()
    if (tags := {name: m.tag for name, m in metrics_of(cls).items() if m.tag})
}


def available() -> bool:
    """Whether the `tensorboard` package is installed (it writes and reads the event files)."""
    try:
        import tensorboard  # noqa: F401 - only asked whether it is there
    except ImportError:
        return False
    return True


class EventLog:
    """The run's TensorBoard events, rewritten from `records` (what `metrics.jsonl` holds) when opened."""

    def __init__(self, run_path: Path, records: list[dict[str, Any]]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.folder = Path(run_path) / EVENTS_FOLDER
        shutil.rmtree(self.folder, ignore_errors=True)  # ours alone, written again from the metrics
        self.writer = SummaryWriter(str(self.folder), flush_secs=10)
        for record in records:
            self.add(record)
        self.writer.flush()

    def add(self, record: dict[str, Any]) -> None:
        """Write one metrics record's values (step and evaluation records; others carry no scalars)."""
        for field, tag in TAGS.get(record.get("type", ""), {}).items():
            value = record.get(field)
            if isinstance(value, (int, float)):
                self.writer.add_scalar(tag, value, global_step=record["step"], walltime=None)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def open_event_log(run_path: Path, records: list[dict[str, Any]]) -> EventLog | None:
    """The run's event log, or None when the `tensorboard` package is missing."""
    return EventLog(run_path, records) if available() else None


def write_events(run_path: Path, records: list[dict[str, Any]]) -> Path:
    """Write the events of a finished run from its metrics (`mlm-studio tensorboard RUN`); returns the folder."""
    if not available():
        raise ImportError(f"writing TensorBoard events needs the tensorboard package: {INSTALL_HINT}")
    log = EventLog(run_path, records)
    log.close()
    return log.folder
