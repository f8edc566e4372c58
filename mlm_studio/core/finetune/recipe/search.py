"""The recipe search: which learning rate, and how many epochs, fine-tune a model best on a task, judged on the
validation split. Each candidate learning rate is a real fine-tuning run (`prepare_finetuner`, as a comparison's
contenders are) to `max_epochs`, evaluated every epoch and stopped early, so one run also tells the best epoch
count. Successive halving over seeds: every candidate with the first seed, the better half with each further one.
The chosen recipe is the best mean validation score among the candidates that ran every seed, ties going to the
cheaper one (fewer epochs).

A search's folder holds one run folder per candidate and seed (`lr0.0001-seed0`) and `search.json`, what it
searches: the model and its fingerprint, the task files and theirs, the grid, the seeds and the fixed options. Run
again on the same folder, it continues that search (a finished run is read back, a stopped one resumed) and
refuses any other, before writing anything. Its runs are known by what they trained, not by their folders' names
(`trials.py`): a run whose records are missing, or a folder a run is to go into that holds another, is refused in a
sentence before anything is trained. `result.py` reads a search back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import NamedTuple

from mlm_studio.core.data.builtin_corpus import fingerprint
from mlm_studio.core.data.labelled import TaskError
from mlm_studio.core.finetune.options import FinetuneOptions, OptionError, check_seeds
from mlm_studio.core.finetune.recipe.result import RecipeSearch, better_half_size, read_search
from mlm_studio.core.finetune.recipe.searched import FIXED, MAX_EPOCHS, PLAN, recipe_options
from mlm_studio.core.finetune.recipe.trials import trial_folder
from mlm_studio.core.finetune.request import StartingModel, model_fingerprint
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.finetune.tasks import MAX_SEEDS, SEARCH_MAX_EPOCHS, SEARCH_RATES, SEARCH_SEEDS
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import Record, WarningRecord
from mlm_studio.core.runs.task_spec import SPLITS
from mlm_studio.core.storage.files import atomic_write_json
from mlm_studio.core.storage.json_record import RecordError, read_record

SEARCH_RULES = {
    # rates that print alike (to 6 digits) would be two rows of the table that read as one: refused as equal, shown
    # as they print
    "learning_rates": (lambda v: v and len({f"{x:g}" for x in v}) == len(v) and all(0 < x < 1 for x in v),
                       "one or more different values, each more than 0 and less than 1"),
    "max_epochs": (lambda v: 1 <= v <= MAX_EPOCHS, f"between 1 and {MAX_EPOCHS:,}"),
    "seeds": (lambda v: 1 <= v <= MAX_SEEDS, f"between 1 and {MAX_SEEDS}"),
}  # fmt: skip


class SearchRefused(TaskError):
    """A search folder that holds another search (or other files): nothing was written."""


class Tried(NamedTuple):
    """One record of a search's run, with the candidate and seed it belongs to, and which run of how many it is."""

    learning_rate: float
    seed: int
    run: int  # 1 for the first run of the search
    runs: int  # the runs the search makes in all
    record: Record


@dataclass(frozen=True)
class SearchPlan:
    """What a search tries: each of `learning_rates` to `max_epochs` with `seeds` seeds (from `options.seed`), the
    rest of `options` fixed."""

    spec: str
    options: FinetuneOptions
    learning_rates: tuple[float, ...] = SEARCH_RATES
    max_epochs: int = SEARCH_MAX_EPOCHS
    seeds: int = SEARCH_SEEDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", str(StartingModel.of(self.spec).located()))  # as its task files: absolute
        object.__setattr__(self, "learning_rates", tuple(float(lr) for lr in self.learning_rates))
        for field, (allowed, rule) in SEARCH_RULES.items():
            if not allowed(getattr(self, field)):
                value = getattr(self, field)
                shown = ",".join(f"{v:g}" for v in value) if field == "learning_rates" else value
                raise OptionError(field, rule, shown)
        check_seeds(self.options.seed, self.seeds)

    @property
    def runs(self) -> int:
        """The runs it makes: every candidate once, the better half once per further seed."""
        return len(self.learning_rates) + better_half_size(len(self.learning_rates)) * (self.seeds - 1)

    def trial_options(self, learning_rate: float, seed: int) -> FinetuneOptions:
        """A candidate's options with `seed`: the held-out examples those of the first seed, for every run."""
        split = self.options.held_out_by
        return replace(self.options, learning_rate=learning_rate, epochs=self.max_epochs, seed=seed, split_seed=split)

    def identity(self) -> dict:
        """What the search is, as `search.json` keeps it and a rerun must match: in the order a refusal names."""
        files = {
            name: {"path": str(Path(path).resolve()), "sha256": fingerprint(Path(path))} if path else None
            for name, path in zip(SPLITS, (self.options.train, self.options.validation, self.options.test), strict=True)
        }
        columns = asdict(self.options.columns) if self.options.columns else None
        return {
            "model": str(self.spec),
            "model fingerprint": model_fingerprint(StartingModel.of(self.spec)),
            "task": self.options.task,
            **{f"{name} file": value for name, value in files.items()},
            "columns": columns,
            "learning rates": list(self.learning_rates),
            "max epochs": self.max_epochs,
            "first seed": self.options.seed,
            "seeds": self.seeds,
            "held-out examples' seed": self.options.held_out_by,
            "fixed options": {name: getattr(self.options, name) for name in FIXED},
        }


def check_folder(root: Path, plan: SearchPlan) -> dict:
    """The plan's identity, after checking that `root` is new, empty or holds this very search; refused
    (SearchRefused) in one sentence naming what differs, before anything is written."""
    identity = plan.identity()
    written = root / PLAN
    if written.is_file():
        try:
            before = read_record(written)
        except RecordError as exc:
            raise SearchRefused(f"{exc}; start a new search in another folder") from None
        before = before if isinstance(before, dict) else {}
        if isinstance(before.get("model"), str):  # recorded as typed, by an earlier version: where it is from here
            before["model"] = str(StartingModel.of(before["model"]).located())
        for key, value in identity.items():
            if before.get(key) != value:
                raise SearchRefused(
                    f"{root} holds another search: its {key} {_shown(before.get(key))}, not {_shown(value)}; give "
                    "the same options to continue it, or another folder to start a new search"
                )
    elif root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir()):
        raise SearchRefused(f"{root} holds files and no search; start a new search in a new or empty folder")
    return identity


def _shown(value: object) -> str:
    """A value of a search's identity as a refusal says it, cut to about 80 characters."""
    if isinstance(value, list):
        text = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    elif isinstance(value, dict) and "path" in value:
        text = f"{Path(value['path']).name} (fingerprint {str(value['sha256'])[:12]})"
    elif isinstance(value, str) and len(value) == 64:
        text = f"fingerprint {value[:12]}"
    else:
        text = "none" if value is None else str(value)
    return text if len(text) <= 80 else text[:79] + "…"


def search(plan: SearchPlan, root: str | Path, control: TrainingControl | None = None) -> Iterator[Tried]:
    """Run (or continue) the search `plan` in `root`: every candidate with the first seed, then the better half
    (by that seed's validation score) with each further seed; every record of every run, said by whom. A stop
    requested through `control` ends it after the current run has checkpointed; run again, it continues there."""
    root = Path(root)
    identity = check_folder(root, plan)
    control = control or TrainingControl()
    for number in range(plan.runs):
        found = read_search(root)  # None before its first run: the folder is new or empty
        learning_rate, seed = _next_run(plan, found, number)
        tried = partial(Tried, learning_rate, seed, number + 1, plan.runs)
        trial = found.trial(learning_rate, seed) if found is not None else None
        if trial is not None and trial.missing:
            raise SearchRefused(
                f"{trial.path} cannot be weighed: {trial.missing}; move the folder out of {root} and run the search "
                f"again to train {trial.name} anew"
            )
        if trial is not None and trial.counts:
            yield tried(WarningRecord(0, f"{trial.path.name} has finished already; its scores are read back"))
            continue
        if trial is not None:
            tuner = prepare_finetuner(trial.path, control=control)
        else:
            path = _new_folder(root, found, learning_rate, seed)
            tuner = prepare_finetuner(path, plan.spec, plan.trial_options(learning_rate, seed), control)
        if not (root / PLAN).is_file():
            atomic_write_json(root / PLAN, identity)
        for record in tuner.run():
            yield tried(record)
        if tuner.control.stop_requested:
            return


def _next_run(plan: SearchPlan, found: RecipeSearch | None, number: int) -> tuple[float, int]:
    """The learning rate and seed of the search's run `number` (from 0): every learning rate with the first seed,
    then the better half (by the first seed's runs, as the folder tells them) with each further seed."""
    rates, first = plan.learning_rates, plan.options.seed
    if number < len(rates):
        return rates[number], first
    half = found.half if found is not None else None
    if half is None:  # each first-seed run has just ended or failed: only a folder changed meanwhile lacks one
        said = found.verdict if found is not None else "its first run is not there"
        raise SearchRefused(f"the better half of the search's learning rates cannot be chosen: {said}")
    later = number - len(rates)
    return half[later % len(half)], first + 1 + later // len(half)


def _new_folder(root: Path, found: RecipeSearch | None, learning_rate: float, seed: int) -> Path:
    """The folder a run of `learning_rate` with `seed` begins in; refused (SearchRefused) when it holds another run,
    which the search never trains over."""
    path = trial_folder(root, learning_rate, seed)
    if not (path / "config.toml").is_file():
        return path
    trials, left_out = (found.trials, found.left_out) if found is not None else ((), [])
    held = next((f"the run of {t.name} (as its records say)" for t in trials if t.path == path), None) or next(
        (f"a run that is not it ({left.reason})" for left in left_out if left.path == path), "another run"
    )
    raise SearchRefused(
        f"{path} is where the search trains lr {learning_rate:g}, seed {seed}, but it holds {held}; move that "
        f"folder out of {root} and run the search again"
    )


def plan_of(found: RecipeSearch) -> SearchPlan:
    """The plan a search's folder was made with (its `search.json`): to continue the search where it stopped."""
    plan = found.plan
    spec, options = recipe_options(plan, plan.learning_rates[0], plan.max_epochs)
    return SearchPlan(spec, options, plan.learning_rates, plan.max_epochs, plan.seeds)
