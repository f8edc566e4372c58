"""What a training run says as it goes: immutable records (each written to the run's `metrics.jsonl`), the
control another thread steers it with."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

from mlm_studio.core.probes import ProbeResult
from mlm_studio.core.progress import format_duration


@dataclass(frozen=True)
class Record:
    step: int

    @property
    def kind(self) -> str:
        return type(self).__name__.removesuffix("Record").lower()

    def to_dict(self) -> dict:
        return {"type": self.kind, **asdict(self)}


@dataclass(frozen=True)
class StartedRecord(Record):
    """What began: the first record of every start and resume (`step` is the step it starts from)."""

    run_dir: str
    total_steps: int
    time_budget: float  # seconds; 0 when the run is measured in steps
    device: str
    layers: int
    hidden_size: int
    parameters: int
    train_blocks: int

    def describe(self) -> str:
        length = (
            f"from step {self.step:,} for {format_duration(self.time_budget)}"
            if self.time_budget > 0
            else f"steps {self.step:,} → {self.total_steps:,}"
        )
        return (
            f"Training {self.run_dir} on {self.device}: {self.layers} layers × {self.hidden_size}, "
            f"{self.parameters:,} parameters, {self.train_blocks:,} training blocks, {length}"
        )


@dataclass(frozen=True)
class StepRecord(Record):
    tokens_seen: int
    loss: float
    accuracy: float  # masked-token accuracy over the steps since the last record
    learning_rate: float
    grad_norm: float
    tokens_per_second: float
    elapsed: float


@dataclass(frozen=True)
class EvalRecord(Record):
    tokens_seen: int
    loss: float
    accuracy: float
    top5_accuracy: float
    perplexity: float
    elapsed: float


@dataclass(frozen=True)
class ProbeRecord(Record):
    tokens_seen: int
    elapsed: float
    results: tuple[ProbeResult, ...]


@dataclass(frozen=True)
class CheckpointRecord(Record):
    path: str


@dataclass(frozen=True)
class WarningRecord(Record):
    message: str


@dataclass(frozen=True)
class FinishedRecord(Record):
    reason: str  # "completed" | "stopped"
    run_dir: str
    val_loss: float | None
    val_accuracy: float | None


@dataclass(frozen=True)
class PausedRecord(Record):
    """The trainer paused itself (a checkpoint could not be written); resuming retries."""

    message: str


@dataclass(frozen=True)
class FailedRecord(Record):
    message: str


class TrainingControl:
    """Pause, resume and stop requests from another thread; the trainer acts on them between steps."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        self._stop.set()
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def wait_while_paused(self) -> None:
        self._running.wait()
