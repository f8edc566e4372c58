"""What a branch records of where it began, in its run folder's `branch.json`: the run it left, the checkpoint step
it left from, the batches it passes over and the settings it changed; read back typed, every field checked. And the
order of blocks that follows from it: its parent's, with the batches of the skipped steps passed over.

Batches are counted as steps are: the batch of step n is the one that step trains on, so `skipped` =
range(A, B) passes over the batches of steps A + 1 … B, and the branch's step A + 1 trains on its parent's step
B + 1's batch (every later step as far on)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlm_studio.core.data.dataset import BlockOrder
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.task_spec import FieldError, Fields
from mlm_studio.core.storage.json_record import read_record, record_error

BRANCH_FILE = "branch.json"


@dataclass(frozen=True)
class Branch:
    """Where a branch began: `parent`'s checkpoint at `step` (its own steps continue from there)."""

    parent: Path  # the run branched from, as its folder was when the branch began
    step: int
    skipped: range | None = None  # the batches passed over: those of steps skipped.start + 1 … skipped.stop
    changes: str = ""  # the settings it changed from its parent's, in words ("" when none)

    def to_json(self) -> dict:
        skipped = [self.skipped.start, self.skipped.stop] if self.skipped is not None else None
        return {"parent": str(self.parent), "step": self.step, "skipped": skipped, "changes": self.changes}

    @classmethod
    def read(cls, raw: object) -> Branch:
        """The record `raw` (as `to_json` wrote it); FieldError naming the field at fault."""
        fields = Fields(raw)
        parent, step = fields.path("parent"), fields.whole("step", 0)
        skipped = fields.raw.get("skipped")
        if skipped is not None:
            ends = skipped if isinstance(skipped, list) and len(skipped) == 2 else None
            if ends is None or not all(type(end) is int for end in ends) or not step <= ends[0] < ends[1]:
                raise fields.wrong("skipped", f"two steps A < B from the branch step {step} on, or null")
            skipped = range(*ends)
        changes = fields.raw.get("changes", "")
        if not isinstance(changes, str):
            raise fields.wrong("changes", "a text")
        return cls(parent, step, skipped, changes)

    def said(self) -> str:
        """The branch in a sentence: "branched from RUN at step 20, skipping the 10 batches of steps 21–30"."""
        skipped = ""
        if self.skipped is not None:
            skipped = f", skipping the {len(self.skipped):,} batch(es) of steps {self.skipped.start + 1:,}–"
            skipped += f"{self.skipped.stop:,}"
        changes = f", with {self.changes}" if self.changes else ""
        return f"branched from {self.parent.name} at step {self.step:,}{skipped}{changes}"


def branch_of(run: RunDir) -> Branch | None:
    """The branch `run` is (None for a run that began on its own); RecordError naming the file and field when its
    record cannot be read or is damaged."""
    path = run.path / BRANCH_FILE
    if not path.is_file():
        return None
    try:
        return Branch.read(read_record(path))
    except FieldError as exc:
        raise record_error(path, str(exc)) from None


class SkippingOrder:
    """A block order with the micro-batches of the skipped steps passed over (`per_step` micro-batches a step)."""

    def __init__(self, order: BlockOrder, skipped: range, per_step: int) -> None:
        self.order, self.skipped, self.per_step = order, skipped, per_step

    def __call__(self, micro_batch: int) -> np.ndarray:
        if micro_batch >= self.skipped.start * self.per_step:
            micro_batch += len(self.skipped) * self.per_step
        return self.order(micro_batch)


def branch_order(run: RunDir, order: BlockOrder, per_step: int) -> BlockOrder | SkippingOrder:
    """The order of blocks `run` trains on: `order`, less the batches a branch skips."""
    branch = branch_of(run)
    if branch is None or branch.skipped is None:
        return order
    return SkippingOrder(order, branch.skipped, per_step)
