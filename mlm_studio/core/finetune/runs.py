"""The fine-tuning runs in a folder as the window lists them: each one's state, the model it started from, its
task, its best validation score, and the test scores it ended with."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.finetune.setup import SCRATCH
from mlm_studio.core.finetune.tuner import BEST
from mlm_studio.core.interop.hub_cache import hub_name_of
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.history import list_runs, summarize
from mlm_studio.core.storage.run_folder import CHECKPOINTS, RunDir
from mlm_studio.core.training.records import RECORDS, TestRecord

RESUMABLE = ("stopped", "interrupted", "failed")  # states a run can continue from


@dataclass(frozen=True)
class FinetuneRun:
    """A fine-tuning run as far as its files tell."""

    path: Path
    state: str  # completed | stopped early | stopped | failed | interrupted (killed, or still training)
    model: str  # where its weights came from: a run's or a folder's name, `scratch:` before it for fresh ones
    task: str  # its kind and training file
    best_score: float | None  # the best validation score (macro-F1, or entity F1 for tagging)
    modified: float  # the folder's last change, seconds since the epoch

    @property
    def resumable(self) -> bool:
        return self.state in RESUMABLE


def finetune_runs(root: str | Path) -> list[FinetuneRun]:
    """The fine-tuning runs directly under `root`, newest first (a damaged one is left out)."""
    found = []
    for run in list_runs(root):
        try:
            task = run.task
        except CheckpointError:
            continue
        if task is not None:
            found.append(
                FinetuneRun(
                    run.path,
                    summarize(run).state,
                    _model(run),
                    f"{task['task']} · {Path(task['files']['train']).name}",
                    _best_score(run),
                    run.path.stat().st_mtime,
                )
            )
    return found


def last_test(path: str | Path) -> TestRecord | None:
    """The test scores a run wrote last (at its end, or when it was stopped), or None before any."""
    written = [r for r in RunDir(path).read_metrics() if r.get("type") == "test"]
    if not written:
        return None
    return RECORDS["test"](**{k: v for k, v in written[-1].items() if k != "type"})


def _model(run: RunDir) -> str:
    origin = run.origin
    if not origin:
        return "?"
    source = Path(str(origin.get("source", "?")))
    if source.parent.name == CHECKPOINTS:  # a run's checkpoint
        name = source.parent.parent.name
    else:
        name = hub_name_of(source) or source.name
    return SCRATCH + name if origin.get("kind") == "scratch" else name


def _best_score(run: RunDir) -> float | None:
    try:
        return float(json.loads((run.path / BEST / "state.json").read_text(encoding="utf-8"))["score"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
