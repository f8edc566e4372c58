"""The fine-tuning runs in a folder as the window lists them: each one's state, the model it started from, its
task, its best validation score and the metric it is, and the test scores it ended with. A run whose task.json is
damaged, unreadable or of another version is left out of the list, and said."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.finetune.request import StartingModel
from mlm_studio.core.finetune.scores import main_score_name
from mlm_studio.core.finetune.tuner import BEST, ending
from mlm_studio.core.runs.history import LeftOut, Listed, list_runs, summarize
from mlm_studio.core.runs.records import FinishedRecord, StartedRecord, TestRecord, typed_record
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CHECKPOINTS, CheckpointError
from mlm_studio.core.storage.hub_cache import hub_name_of
from mlm_studio.core.storage.json_text import read_json

RESUMABLE = ("stopped", "interrupted", "failed")  # states a run can continue from
ENDED = ("completed", "stopped early")  # states of a run that ended by itself: its test scores count


@dataclass(frozen=True)
class FinetuneRun:
    """A fine-tuning run as far as its files tell."""

    path: Path
    state: str  # completed | stopped early | stopped | failed | interrupted (killed, or still training)
    model: str  # where its weights came from: a run's or a folder's name, `scratch:` before it for fresh ones
    task: str  # its kind and training file
    best_score: float | None  # the best validation score, the `score_name` one
    modified: float  # the folder's last change, seconds since the epoch
    score_name: str  # the metric that chose its best checkpoint: macro-F1, or entity F1 for entity tags

    @property
    def resumable(self) -> bool:
        return self.state in RESUMABLE


def finetune_runs(root: str | Path) -> Listed[FinetuneRun]:
    """The fine-tuning runs directly under `root`, newest first, and those left out, each with why (a task.json
    that is damaged, unreadable or of another version)."""
    found, left_out = [], []
    for run in list_runs(root):
        try:
            listed = finetune_run(run.path)
        except CheckpointError as exc:
            left_out.append(LeftOut(run.path, str(exc)))
            continue
        if listed is not None:
            found.append(listed)
    return Listed(tuple(found), tuple(left_out))


def finetune_run(path: str | Path) -> FinetuneRun | None:
    """The fine-tuning run in `path`, or None when it holds a pre-training run; a task.json that cannot be read
    as a task is refused (`RecordError`, a CheckpointError naming the file and the field)."""
    run = RunDir(path)
    task = run.task
    if task is None:
        return None
    return FinetuneRun(
        run.path,
        _state(run),
        _model(run),
        f"{task.kind} · {task.train.name}",
        _best_score(run),
        run.path.stat().st_mtime,
        main_score_name(task.kind, task.labels),
    )


def _state(run: RunDir) -> str:
    """How the run ended (or that it has not): "stopped early" only when it stopped before its last step, whatever
    an older version wrote."""
    state = summarize(run).state
    if state != "stopped early":
        return state
    records = run.records(StartedRecord, FinishedRecord)
    total = next((r.total_steps for r in reversed(records) if isinstance(r, StartedRecord)), None)
    finished = next((r.step for r in reversed(records) if isinstance(r, FinishedRecord)), 0)
    return state if total is None else ending(state, finished, total)


def last_test(path: str | Path) -> TestRecord | None:
    """The test scores a run wrote last (at its end, or when it was stopped), or None before any (a damaged test
    record is none)."""
    written = [r for r in RunDir(path).read_metrics() if r["type"] == "test"]
    return typed_record(written[-1], TestRecord) if written else None


def before_latest_start(path: str | Path) -> list[dict]:
    """A run's records before its latest start (a resume's): the curves it had drawn when it was resumed."""
    records = RunDir(path).read_metrics()
    starts = [i for i, record in enumerate(records) if record.get("type") == "started"]
    return records[: starts[-1]] if starts else records


def _model(run: RunDir) -> str:
    origin = run.origin
    if not origin:
        return "?"
    return model_name(str(origin.get("source", "?")), origin.get("kind") == "scratch")


def model_name(source: str, scratch: bool = False) -> str:
    """A model as the window names it: a run's name for its checkpoint, a Hub model's name, else the folder's;
    `scratch:` before it for fresh weights of its shape."""
    path = Path(source)
    if path.parent.name == CHECKPOINTS:  # a run's checkpoint
        name = path.parent.parent.name
    else:
        name = hub_name_of(path) or path.name
    return str(StartingModel(name, scratch))


def _best_score(run: RunDir) -> float | None:
    try:
        return float(read_json((run.path / BEST / "state.json").read_text(encoding="utf-8"))["score"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
