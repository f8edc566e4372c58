"""A recipe search read back from its folder (`search.py` runs one): each candidate learning rate's
validation scores over the seeds it ran, the epoch each run was best at and the test score of each, and, once every
run has ended by itself, the chosen recipe: the best mean validation score among the candidates that ran every
seed, ties going to fewer epochs. A run stopped halfway is not weighed against finished ones. A run folder whose
task.json cannot be read is left out of it, said; a search.json that cannot be read leaves the search out of the list
of searches, said."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.finetune.recipe.searched import PLAN, Searched, read_plan
from mlm_studio.core.finetune.request import SCRATCH
from mlm_studio.core.finetune.runs import ENDED, finetune_run, model_name
from mlm_studio.core.finetune.scores import MACRO_F1, score_field
from mlm_studio.core.runs.history import LeftOut, Listed, typed_record
from mlm_studio.core.runs.records import TestRecord, ValidationRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError

TIE = 6  # decimals of a mean validation score two candidates must share to tie


def trial_folder(root: Path, learning_rate: float, seed: int) -> Path:
    """A candidate's run folder with `seed` in its search's folder: `lr0.0001-seed2`."""
    return root / f"lr{learning_rate:g}-seed{seed}"


def better_half_size(candidates: int) -> int:
    """The candidates successive halving keeps after the first seed."""
    return math.ceil(candidates / 2)


@dataclass(frozen=True)
class Trial:
    """One candidate's run with one seed, as its folder tells."""

    learning_rate: float
    seed: int
    path: Path
    state: str  # as `FinetuneRun.state`
    validation: float | None  # the best validation score
    best_epoch: float | None  # the epoch it was reached at
    test: float | None  # the test score with those weights (the same metric)
    test_accuracy: float | None

    @property
    def counts(self) -> bool:
        return self.state in ENDED and self.validation is not None and self.test is not None


@dataclass(frozen=True)
class Candidate:
    """A learning rate's runs that finished, in seed order."""

    learning_rate: float
    trials: tuple[Trial, ...]

    @property
    def validation(self) -> list[float]:
        return [t.validation for t in self.trials]

    @property
    def test(self) -> list[float]:
        return [t.test for t in self.trials]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.validation) if self.trials else -math.inf

    @property
    def spread(self) -> float | None:
        """The standard deviation of the validation scores over the seeds; None with one seed."""
        return statistics.stdev(self.validation) if len(self.trials) > 1 else None

    @property
    def epochs(self) -> int:
        """The recipe's epochs: the median epoch its runs were best at, rounded up (1 at least)."""
        best = [t.best_epoch for t in self.trials if t.best_epoch is not None]
        return max(1, math.ceil(statistics.median(best) - 1e-9)) if best else 0

    def to_json(self) -> dict:
        return {
            "learning_rate": self.learning_rate,
            "epochs": self.epochs,
            "seeds": [t.seed for t in self.trials],
            "validation": self.validation,
            "validation_mean": self.mean if self.trials else None,
            "validation_sd": self.spread,
            "best_epochs": [t.best_epoch for t in self.trials],
            "test": self.test,
            "test_accuracy": [t.test_accuracy for t in self.trials],
            "test_mean": statistics.fmean(self.test) if self.trials else None,
        }


def ranked(candidates: list[Candidate], seed: int | None = None) -> list[Candidate]:
    """Best first by mean validation score (of `seed`'s runs alone, when given), ties to fewer epochs; candidates
    without a finished run last."""

    def only(candidate: Candidate) -> Candidate:
        kept = tuple(t for t in candidate.trials if seed is None or t.seed == seed)
        return Candidate(candidate.learning_rate, kept)

    def key(candidate: Candidate) -> tuple:
        weighed = only(candidate)
        return (not weighed.trials, -round(weighed.mean, TIE) if weighed.trials else 0, weighed.epochs)

    return sorted(candidates, key=key)


@dataclass(frozen=True)
class RecipeSearch:
    """A search's plan (its `search.json`) and runs, and what they add up to."""

    path: Path
    plan: Searched
    trials: tuple[Trial, ...]  # every run folder it holds, in the order it ran them
    score_name: str  # the validation score that chose (macro-F1, or entity F1 for entity tags)
    modified: float
    left_out: tuple[LeftOut, ...] = ()  # its run folders that could not be read, each with why

    @property
    def model(self) -> str:
        return self.plan.model

    @property
    def model_name(self) -> str:
        """The model as the window names it (`model` is the spec it was given: a path, or a Hub name)."""
        spec = self.model
        return model_name(spec.removeprefix(SCRATCH), spec.startswith(SCRATCH))

    @property
    def task(self) -> str:
        return f"{self.plan.task} · {self.plan.train.path.name}"

    @property
    def expected(self) -> int:
        rates = len(self.plan.learning_rates)
        return rates + better_half_size(rates) * (self.plan.seeds - 1)

    @property
    def candidates(self) -> list[Candidate]:
        """Each learning rate of the grid with its runs that finished, in the grid's order."""
        counted = [t for t in self.trials if t.counts]
        return [Candidate(lr, tuple(t for t in counted if t.learning_rate == lr)) for lr in self.plan.learning_rates]

    @property
    def counted(self) -> int:
        return sum(t.counts for t in self.trials)

    @property
    def complete(self) -> bool:
        return self.counted >= self.expected

    @property
    def state(self) -> str:
        return "complete" if self.complete else f"{self.counted} of {self.expected} runs finished"

    @property
    def chosen(self) -> Candidate | None:
        """The recipe chosen once every run has finished: the best of the candidates that ran the most seeds."""
        if not self.complete:
            return None
        most = max(len(c.trials) for c in self.candidates)
        return ranked([c for c in self.candidates if len(c.trials) == most])[0]

    @property
    def verdict(self) -> str:
        """The chosen recipe in a sentence; until then, how many runs have finished and which did not."""
        chosen = self.chosen
        left = "; ".join(f"{left.path.name} ({left.reason})" for left in self.left_out)
        left_said = f" Left out: {left}." if left else ""
        if chosen is None:
            said = f"No recipe chosen until all {self.expected} runs have finished: {self.counted} have."
            stopped = [f"lr {t.learning_rate:g}, seed {t.seed}" for t in self.trials if not t.counts]
            return (
                said + (f" Not weighed, as they did not finish: {'; '.join(stopped)}." if stopped else "") + left_said
            )
        spread = f" ± {chosen.spread:.1%}" if chosen.spread is not None else ""
        seeds = len(chosen.trials)
        return (
            f"Chosen recipe: learning rate {chosen.learning_rate:g}, {chosen.epochs} epoch{'s' * (chosen.epochs != 1)}"
            f" — validation "
            f"{self.score_name} {chosen.mean:.1%}{spread} over {seeds} seed{'s' * (seeds > 1)} (test "
            f"{statistics.fmean(chosen.test):.1%}).{left_said}"
        )

    def table(self) -> str:
        """The search as a terminal table: each candidate's validation score (mean ± sd), best epochs, test scores
        and each seed's scores; the chosen one marked."""
        chosen = self.chosen
        name = self.score_name
        lines = [f"  {'lr':>7}  {'epochs':>6}  {'validation ' + name:>22}  {'test ' + name:>15}  per seed (validation"
                 f" / test)"]  # fmt: skip
        for c in self.candidates:
            spread = f" ± {c.spread:.1%}" if c.spread is not None else ""
            validation = f"{c.mean:.1%}{spread}" if c.trials else "n/a"
            test = f"{statistics.fmean(c.test):.1%}" if c.trials else "n/a"
            seeds = "  ".join(f"{t.seed}: {t.validation:.1%} / {t.test:.1%}" for t in c.trials)
            mark = "*" if chosen is not None and c.learning_rate == chosen.learning_rate else " "
            lines.append(f"{mark} {c.learning_rate:>7g}  {c.epochs or '-':>6}  {validation:>22}  {test:>15}  {seeds}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        chosen = self.chosen
        return {
            "search": str(self.path.resolve()),
            "model": self.model,
            "task": self.task,
            "score": self.score_name,
            "complete": self.complete,
            "finished": self.counted,
            "total": self.expected,
            "candidates": [c.to_json() for c in self.candidates],
            "chosen": {"learning_rate": chosen.learning_rate, "epochs": chosen.epochs} if chosen else None,
            "verdict": self.verdict,
            "left_out": [{"folder": str(left.path), "reason": left.reason} for left in self.left_out],
        }


def read_search(path: str | Path) -> RecipeSearch | None:
    """The search in `path`, or None when it holds none (no `search.json`); a search.json that cannot be read is
    refused (`RecordError`, a CheckpointError naming the file and the field), and its run folders whose task.json
    cannot be read are left out of it, each with why."""
    path = Path(path)
    if not (path / PLAN).is_file():
        return None
    plan = read_plan(path)
    trials, left_out, score_name = [], [], MACRO_F1
    for seed in plan.seed_range:
        for learning_rate in plan.learning_rates:
            folder = trial_folder(path, learning_rate, seed)
            try:
                run = finetune_run(folder) if (folder / "config.toml").is_file() else None
            except CheckpointError as exc:
                left_out.append(LeftOut(folder, str(exc)))
                continue
            if run is not None:
                trials.append(_trial(learning_rate, seed, folder, run.state))
                score_name = run.score_name
    modified = max([path.stat().st_mtime, *(t.path.stat().st_mtime for t in trials)])
    return RecipeSearch(path, plan, tuple(trials), score_name, modified, tuple(left_out))


def searches(root: str | Path) -> Listed[RecipeSearch]:
    """The searches directly under `root`, newest first, and those left out, each with why (a search.json that
    cannot be read)."""
    root = Path(root)
    found, left_out = [], []
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            search = read_search(path) if path.is_dir() else None
        except CheckpointError as exc:
            left_out.append(LeftOut(path, str(exc)))
            continue
        if search is not None:
            found.append(search)
    return Listed(tuple(sorted(found, key=lambda s: s.modified, reverse=True)), tuple(left_out))


def _trial(learning_rate: float, seed: int, folder: Path, state: str) -> Trial:
    """A run's best validation score, the epoch of it and its test score, from its metrics (a damaged record is
    none)."""
    records = RunDir(folder).read_metrics()
    tests = [r for r in records if r["type"] == "test"]
    test = typed_record(tests[-1], TestRecord) if tests else None
    best_step = test.best_step if test is not None else None
    chosen = [r for r in records if r["type"] == "validation" and r["step"] == best_step]
    best = typed_record(chosen[-1], ValidationRecord) if chosen else None
    return Trial(
        learning_rate,
        seed,
        folder,
        state,
        _score(best),
        best.epoch if best is not None else None,
        _score(test),
        test.accuracy if test is not None else None,
    )


def _score(record: TestRecord | ValidationRecord | None) -> float | None:
    """A record's main score: answers' F1 or entity F1 where it was measured, else macro-F1."""
    return None if record is None else getattr(record, score_field(record)[0])
