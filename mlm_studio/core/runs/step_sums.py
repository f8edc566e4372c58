"""What the trainer adds up: the sums of one optimizer step over its micro-batches, and of the steps between two
step records (a window), from which the step record's averages come (ELECTRA's detection sums included); and each
step's loss and gradient norm until steps.tsv holds them (StepLog)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from mlm_studio.core.models.replaced_tokens import DETECTION_SUMS, detection_metrics
from mlm_studio.core.runs.distributed import Distributed, summed
from mlm_studio.core.runs.records import StepRecord
from mlm_studio.core.storage.step_file import append_steps


@dataclass
class StepSums:
    """What one optimizer step measured (sums over its micro-batches), and why its update was skipped."""

    loss_sum: torch.Tensor
    correct: torch.Tensor
    predicted: int = 0
    tokens: int = 0  # real tokens, padding excluded
    norm: torch.Tensor | None = None
    problem: str | None = None
    detection: torch.Tensor | float = 0.0  # ELECTRA's DETECTION_SUMS over the micro-batches


class Window:
    """Sums over the steps between two step records."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.loss_sum = torch.zeros(())
        self.correct = torch.zeros((), dtype=torch.long)
        self.predicted = 0
        self.norm_sum = 0.0
        self.norm_steps = 0
        self.steps = 0
        self.tokens = 0
        self.seconds = 0.0
        self.detection = torch.zeros(len(DETECTION_SUMS))

    def add(self, step: StepSums) -> None:
        self.loss_sum = self.loss_sum + step.loss_sum.cpu()
        self.correct = self.correct + step.correct.cpu()
        self.predicted += step.predicted
        self.detection = self.detection + torch.as_tensor(step.detection).cpu()
        self.steps += 1
        if step.norm is not None and math.isfinite(float(step.norm)):  # fp16 overflows are skipped, not averaged
            self.norm_sum += float(step.norm)
            self.norm_steps += 1

    def sums(self) -> tuple[float, ...]:
        """What the processes add up before the record is made (see `record`)."""
        measured = (self.loss_sum, self.correct, self.predicted, self.norm_sum, self.norm_steps, self.steps)
        return tuple(map(float, measured)) + tuple(self.detection.tolist())

    def record(self, sums: list[float], step: int, tokens_seen: int, lr: float, elapsed: float) -> StepRecord | None:
        """The step record of the window from `sums` (this window's, summed over the processes); None if no
        step of it counted."""
        loss_sum, correct, predicted, norm_sum, norm_steps, steps = sums[:6]
        if steps == 0 or predicted == 0:
            return None
        detection = detection_metrics(sums[6:]) if sums[7] else {}
        return StepRecord(
            step=step,
            tokens_seen=tokens_seen,
            loss=loss_sum / predicted,
            accuracy=correct / predicted,
            learning_rate=lr,
            grad_norm=norm_sum / norm_steps if norm_steps else math.nan,
            tokens_per_second=self.tokens / self.seconds if self.seconds else 0.0,
            elapsed=elapsed,
            **detection,
        )


class StepLog:
    """A process's steps not yet written: what each measured, then (summed over the processes) the lines a full
    disk refused."""

    def __init__(self) -> None:
        self.measured: list[tuple[int, float, int, float]] = []  # step, loss sum, predicted, gradient norm
        self.unwritten: list[tuple[int, float, float]] = []

    def add(self, step: int, loss_sum: torch.Tensor, predicted: int, norm: torch.Tensor | None) -> None:
        value = math.nan if norm is None else float(norm)
        self.measured.append((step, float(loss_sum), predicted, value if math.isfinite(value) else math.nan))

    def write(self, folder: Path, dist: Distributed, device: torch.device) -> None:
        """Append the steps measured since the last write: each one's loss over the processes (one all-reduce for
        them all) and gradient norm. Every process calls it; the main one writes."""
        if not self.measured:
            return
        counts = summed(dist, tuple(v for _, loss, count, _ in self.measured for v in (loss, count)), device)
        for (step, _, _, norm), loss, count in zip(self.measured, counts[::2], counts[1::2], strict=True):
            self.unwritten.append((step, loss / count if count else math.nan, norm))
        self.measured = []
        if dist.main:
            try:
                append_steps(folder, self.unwritten)
            except OSError:
                return  # kept, and written with the next ones
        self.unwritten = []
