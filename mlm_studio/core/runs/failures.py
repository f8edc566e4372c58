"""How a run fails, and what the user is told: every message says what happened, what was kept, and what to
change."""

from __future__ import annotations

from pathlib import Path

import torch

from mlm_studio.core.errors import MLMStudioError
from mlm_studio.core.runs.run_folder import RunDir, checkpoint_step
from mlm_studio.core.storage.checkpoint import CheckpointError, checkpoint_finite, require_readable


class RunFailed(MLMStudioError):
    """Ends a run with a message for the user."""


OOM_MESSAGE = (
    "The device ran out of memory. Lower the batch size (use gradient accumulation to keep the effective "
    "batch), shorten the sequence length, or train in bf16/fp16 on a GPU."
)


def out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()


def save_error_message(error: OSError | None, step: int, previous: Path | None, what: str = "checkpoint") -> str:
    """Why `what` (the checkpoint, the best weights) of `step` was not written; `previous`: the latest checkpoint."""
    reason = f"{error.strerror or error}" if error is not None else "on the main process"
    kept = f" The previous checkpoint, {previous.name}, is intact." if previous else ""
    return f"Could not write the {what} of step {step} ({reason}).{kept}"


STABLER = "Lower the learning rate, keep gradient clipping on, or use fp32/bf16 instead of fp16."


def _kept(finite: Path | None) -> str:
    if finite is None:
        return " No checkpoint of this run has finite weights."
    return f" The newest checkpoint with finite weights, {finite.name}, is intact."


def nonfinite_message(count: int, finite: Path | None) -> str:
    """Training stopped after `count` skipped steps; `finite`: the newest checkpoint with finite weights."""
    return (
        f"The loss or the gradients were not finite numbers {count} steps in a row, so training stopped."
        f"{_kept(finite)} {STABLER}"
    )


def diverged_message(step: int, finite: Path | None) -> str:
    """The weights themselves became non-finite by step `step`: nothing was saved for it."""
    return (
        f"The weights were no longer finite numbers at step {step} (training diverged), so step {step} was not "
        f"saved and training stopped.{_kept(finite)} {STABLER}"
    )


def refuse_nonfinite_resume(run: RunDir) -> None:
    """Refuse (CheckpointError) to resume a run whose latest checkpoint cannot be read, or holds non-finite weights
    (naming the newest checkpoint with finite ones and the folders after it), before the resume writes anything."""
    latest = run.latest_checkpoint()
    if latest is None:
        return
    require_readable(latest)
    if checkpoint_finite(latest, unreadable=True):
        return
    finite = run.newest_finite_checkpoint()
    after = checkpoint_step(finite) if finite is not None else -1
    newer = [path for path in run.checkpoints() if checkpoint_step(path) > after]
    raise CheckpointError(nonfinite_resume_message(newer, finite))


def nonfinite_resume_message(newer: list[Path], finite: Path | None) -> str:
    """Refusing to resume: `newer` are the checkpoints after `finite` (the newest with finite weights), the
    latest last, whose weights are not finite (written before they were checked, or damaged since)."""
    reason = f"{newer[-1].name}'s weights hold values that are not finite numbers, so training cannot resume from it."
    if finite is None:
        return f"{reason} No checkpoint of this run has finite weights: start a new run. {STABLER}"
    return (
        f"{reason} The newest checkpoint with finite weights is {finite.name}: to resume from it, move "
        f"{', '.join(p.name for p in newer)} out of {finite.parent}. {STABLER}"
    )
