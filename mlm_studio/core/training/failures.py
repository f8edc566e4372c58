"""How a run fails, and what the user is told: every message says what happened, what was kept, and what to
change."""

from __future__ import annotations

from pathlib import Path

import torch


class RunFailed(Exception):
    """Ends a run with a message for the user."""


OOM_MESSAGE = (
    "The device ran out of memory. Lower the batch size (use gradient accumulation to keep the effective "
    "batch), shorten the sequence length, or train in bf16/fp16 on a GPU."
)


def out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()


def save_error_message(error: OSError | None, step: int, previous: Path | None) -> str:
    reason = f"{error.strerror or error}" if error is not None else "on the main process"
    kept = f" The previous checkpoint, {previous.name}, is intact." if previous else ""
    return f"Could not write the checkpoint of step {step} ({reason}).{kept}"


def nonfinite_message(count: int, checkpoint: Path | None) -> str:
    kept = f" The last good checkpoint, {checkpoint.name}, is intact." if checkpoint else ""
    return (
        f"The loss or the gradients were not finite numbers {count} steps in a row, so training stopped.{kept} "
        "Lower the learning "
        "rate, keep gradient clipping on, or use fp32/bf16 instead of fp16."
    )
