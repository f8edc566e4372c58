"""A recipe search's trials, each known by what it trained, never by its folder's name: the learning rate and seed
its config.toml records, and the task, files, split, recipe and model its task.json records, checked against what
the search searches (`Searched`). A run folder in a search's folder that is not one of its trials (another learning
rate, seed, task, recipe or model; a second run of one trial; a task.json asking what its config.toml did not
train; a record that cannot be read) is left out, with why. A trial whose metrics.jsonl no longer holds what it
wrote (emptied, cut, or its start's record damaged) keeps what is missing (`Trial.missing`): it is never weighed
as a run that scored nothing, and the search refuses to go on past it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mlm_studio.core.finetune.recipe.searched import FIXED, Searched
from mlm_studio.core.finetune.runs import ENDED, finetune_run
from mlm_studio.core.finetune.scores import MACRO_F1, score_field
from mlm_studio.core.finetune.tuner import BEST
from mlm_studio.core.runs.history import LeftOut
from mlm_studio.core.runs.records import StartedRecord, TestRecord, ValidationRecord, typed_record
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.task_spec import TaskSpec
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.checkpoint import CheckpointError, read_state

TIE = 6  # decimals of a validation score two runs (or candidates' means) must share to tie


def trial_folder(root: Path, learning_rate: float, seed: int) -> Path:
    """The folder a search makes a candidate's run with `seed` in: `lr0.0001-seed2` (the grid's rates print apart,
    so each has its own)."""
    return root / f"lr{learning_rate:g}-seed{seed}"


@dataclass(frozen=True)
class Trial:
    """One candidate's run with one seed, as its records tell."""

    learning_rate: float  # as its config.toml records it
    seed: int
    path: Path
    state: str  # as `FinetuneRun.state`
    validation: float | None  # the best validation score
    best_epoch: float | None  # the epoch it was reached at
    test: float | None  # the test score with those weights (the same metric)
    test_accuracy: float | None
    missing: str = ""  # what its metrics.jsonl lacks of what the run wrote, in words; "" when it holds it all
    score_name: str = MACRO_F1  # the validation score that chose its best weights
    baseline: float | None = None  # that score of the majority class (`LabelKind.baseline`); None: not recorded
    # the options it trained with that its search does not record: what training its recipe again must repeat
    unrecorded: dict = field(default_factory=dict)

    @property
    def counts(self) -> bool:
        return self.state in ENDED and not self.missing and self.validation is not None and self.test is not None

    @property
    def learned(self) -> bool:
        """Whether its best validation score beat the majority class's (to `TIE` decimals); a run that never did
        has no best epoch to tell. True where the run recorded no such score (answers, or an older run)."""
        if self.baseline is None:
            return True
        return self.validation is not None and round(self.validation, TIE) > round(self.baseline, TIE)

    @property
    def name(self) -> str:
        return f"lr {self.learning_rate:g}, seed {self.seed}"


def search_trials(root: Path, searched: Searched) -> tuple[list[Trial], list[LeftOut]]:
    """The trials of the search in `root`, in the order it makes them (seed by seed, the grid's order), and the run
    folders there left out, each with why."""
    found: dict[tuple[float, int], Trial] = {}
    left_out = []
    for folder in sorted(root.iterdir()):
        if not (folder / "config.toml").is_file():
            continue
        try:
            trial = _trial(folder, searched)
        except CheckpointError as exc:
            left_out.append(LeftOut(folder, str(exc)))
            continue
        if isinstance(trial, str):
            left_out.append(LeftOut(folder, trial))
            continue
        key = (trial.learning_rate, trial.seed)
        other = found.get(key)
        if other is not None:  # the trial is the run in its own folder, else the first found
            kept, dropped = (trial, other) if trial.path == trial_folder(root, *key) else (other, trial)
            left_out.append(LeftOut(dropped.path, f"it trained {dropped.name}, as {kept.path.name} did: one is a copy"))
            trial = kept
        found[key] = trial
    order = {rate: index for index, rate in enumerate(searched.learning_rates)}
    return sorted(found.values(), key=lambda t: (t.seed, order[t.learning_rate])), left_out


def _trial(folder: Path, searched: Searched) -> Trial | str:
    """The trial in `folder`, or why it is none of the search's (a RecordError when a record cannot be read)."""
    run = RunDir(folder)
    listed = finetune_run(folder)
    if listed is None:
        return "it holds a pre-training run, not one of the search's fine-tuning runs"
    training = run.config.training
    why = _not_searched(run.task, training.learning_rate, training.seed, training.epochs, searched)
    if why:
        return why
    records = run.read_metrics()
    tests = [r for r in records if r["type"] == "test"]
    test = typed_record(tests[-1], TestRecord) if tests else None
    best_step = test.best_step if test is not None else _best_step(run)
    chosen = [r for r in records if r["type"] == "validation" and r["step"] == best_step]
    best = typed_record(chosen[-1], ValidationRecord) if chosen else None
    starts = [r for r in records if r["type"] == "started"]
    started = typed_record(starts[-1], StartedRecord) if starts else None
    if _weights_written(run) and not any(r["type"] == "started" for r in records):
        missing = "its metrics.jsonl holds no record of the steps it trained"
    elif tests and test is None:
        missing = "the test scores in its metrics.jsonl are damaged"
    elif listed.state in ENDED and test is None:
        missing = "its metrics.jsonl lacks the test scores it ended with"
    elif started is None and starts and "baseline" in starts[-1]:  # one that says whether it beat the majority class
        missing = "the record of its start in its metrics.jsonl is damaged"
    elif best_step and best is None:
        missing = f"its metrics.jsonl lacks the validation scores of its best step ({best_step:,})"
    else:
        missing = ""
    return Trial(
        training.learning_rate,
        training.seed,
        folder,
        listed.state,
        _score(best),
        best.epoch if best is not None else None,
        _score(test),
        test.accuracy if test is not None else None,
        missing,
        listed.score_name,
        started.baseline if started is not None else None,
        _unrecorded(run.task, training.grad_accumulation),
    )


def _unrecorded(task: TaskSpec, grad_accumulation: int) -> dict:
    """The FinetuneOptions a run trained with that search.json does not fix: the micro-batches of a step, and a
    question answerer's windows and answer length."""
    answering = {"doc_stride": task.doc_stride, "max_answer_length": task.max_answer_length}
    return {"grad_accumulation": grad_accumulation, **{k: v for k, v in answering.items() if v is not None}}


def _not_searched(task: TaskSpec, learning_rate: float, seed: int, epochs: float, searched: Searched) -> str:
    """Why a fine-tuning run that trained `learning_rate` with `seed` for `epochs` is none of the search's trials;
    "" when it is one."""
    if learning_rate not in searched.learning_rates:
        rates = ", ".join(f"{rate:g}" for rate in searched.learning_rates)
        return f"it trained learning rate {learning_rate:g} (its config.toml), none of the search's ({rates})"
    if seed not in searched.seed_range:
        last = searched.seed_range[-1]
        return f"it trained seed {seed} (its config.toml), none of the search's ({searched.first_seed} to {last})"
    request = task.request or {}
    for name, trained in (("learning_rate", learning_rate), ("seed", seed)):  # None asked: the measured default
        if request.get(name) is not None and request[name] != trained:
            return (
                f"its records disagree: its task.json asked {name} {shown(request[name])}, its config.toml trained "
                f"{trained:g}"
            )
    recorded = {
        "task": (task.kind, searched.task),
        **{
            f"{name} file": (path, None if file is None else file.path)
            for (name, path), file in zip(task.files.items(), searched.files.values(), strict=True)
        },
        "columns": (task.columns, searched.columns),
        "held-out examples' seed": (task.split_seed, searched.held_out_seed),
        "max epochs": (epochs, searched.max_epochs),
        **{name: (value, searched.fixed[name]) for name, value in _fixed_of(task, request).items()},
    }
    if isinstance(request.get("model"), str):  # `model_identity`: where it was, # and its fingerprint's start
        fingerprint = request["model"].rpartition("#")[2]
        recorded["model fingerprint"] = (fingerprint, searched.model_fingerprint[: len(fingerprint)])
    for name, (there, searching) in recorded.items():
        if there != searching:
            return f"it was made for another search: its {name} {_said(there)}, the search's {_said(searching)}"
    return ""


def _fixed_of(task: TaskSpec, request: dict) -> dict:
    """The options a search fixes, as a run records them: asked (its request), or for a run made before requests
    were recorded, those its task.json holds."""
    if request:
        return {name: request.get(name) for name in FIXED}
    return {"pooling": task.pooling, "freeze_layers": task.freeze_layers, "patience": task.patience}


def _said(value: object) -> str:
    if isinstance(value, Path):
        return value.name
    return "none" if value is None else shown(value)


def _weights_written(run: RunDir) -> bool:
    return run.latest_checkpoint() is not None or (run.path / BEST / "state.json").is_file()


def _best_step(run: RunDir) -> int:
    """The step of the best weights a run resumes with (its latest checkpoint's), 0 before any or when that cannot be
    read (a resume says why)."""
    latest = run.latest_checkpoint()
    try:
        step = read_state(latest).get("best_step", 0) if latest is not None else 0
    except CheckpointError:
        return 0
    return step if isinstance(step, int) and not isinstance(step, bool) else 0


def _score(record: TestRecord | ValidationRecord | None) -> float | None:
    """A record's main score: answers' F1 or entity F1 where it was measured, else macro-F1."""
    return None if record is None else getattr(record, score_field(record)[0])
