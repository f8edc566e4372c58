"""A recipe search read back from its folder (`search.py` runs one): each candidate learning rate's
validation scores over the seeds it ran, the epoch each run was best at and the test score of each, and, once every
run it plans has ended by itself, the chosen recipe: the best mean validation score among the candidates that ran
every seed, ties going to fewer epochs. A run stopped halfway is not weighed against finished ones.

Its runs are known by what they trained (`trials.py`), and the runs it plans past the first seed by the first seed's
scores: a run it did not plan (a learning rate outside the better half) is left out and said, as is a folder that
is none of its trials; a search.json that cannot be read leaves the search out of the list of searches, said."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.recipe.searched import PLAN, Searched, read_plan, recipe_options
from mlm_studio.core.finetune.recipe.trials import TIE, Trial, search_trials
from mlm_studio.core.finetune.request import StartingModel
from mlm_studio.core.finetune.runs import ENDED, model_name
from mlm_studio.core.finetune.scores import MACRO_F1
from mlm_studio.core.runs.history import LeftOut, Listed
from mlm_studio.core.storage.checkpoint import CheckpointError


def better_half_size(candidates: int) -> int:
    """The candidates successive halving keeps after the first seed."""
    return math.ceil(candidates / 2)


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
    def best_epochs(self) -> list[float]:
        """The epochs its runs that beat the majority class were best at, in seed order."""
        return [t.best_epoch for t in self.trials if t.learned and t.best_epoch is not None]

    @property
    def learned(self) -> bool:
        """Whether any of its runs beat the majority class (a candidate none of whose runs did is never chosen)."""
        return any(t.learned for t in self.trials)

    @property
    def cost(self) -> float:
        """What ties are decided by: the median epoch its runs that learned were best at (so stopped early)."""
        return statistics.median(self.best_epochs) if self.best_epochs else math.inf

    def to_json(self) -> dict:
        return {
            "learning_rate": self.learning_rate,
            "seeds": [t.seed for t in self.trials],
            "validation": self.validation,
            "validation_mean": self.mean if self.trials else None,
            "validation_sd": self.spread,
            "best_epochs": [t.best_epoch if t.learned else None for t in self.trials],
            "beat_majority": [t.learned for t in self.trials],
            "never_beat_majority": bool(self.trials) and not self.learned,
            "test": self.test,
            "test_accuracy": [t.test_accuracy for t in self.trials],
            "test_mean": statistics.fmean(self.test) if self.trials else None,
        }


def ranked(candidates: list[Candidate], seed: int | None = None) -> list[Candidate]:
    """Best first by mean validation score (of `seed`'s runs alone, when given), ties to the earlier best epoch;
    candidates without a finished run last."""

    def only(candidate: Candidate) -> Candidate:
        kept = tuple(t for t in candidate.trials if seed is None or t.seed == seed)
        return Candidate(candidate.learning_rate, kept)

    def key(candidate: Candidate) -> tuple:
        weighed = only(candidate)
        return (not weighed.trials, -round(weighed.mean, TIE) if weighed.trials else 0, weighed.cost)

    return sorted(candidates, key=key)


def better_half(candidates: list[Candidate], first_seed: int) -> list[float]:
    """The learning rates successive halving runs again: the better half by the first seed's runs (those without a
    finished one last, still filling the half)."""
    return [c.learning_rate for c in ranked(candidates, seed=first_seed)[: better_half_size(len(candidates))]]


@dataclass(frozen=True)
class RecipeSearch:
    """A search's plan (its `search.json`) and runs, and what they add up to."""

    path: Path
    plan: Searched
    trials: tuple[Trial, ...]  # its runs, known by what they trained, in the order it makes them
    strays: tuple[LeftOut, ...]  # the run folders in it that are none of its trials, each with why
    modified: float

    @property
    def model(self) -> str:
        return self.plan.model

    @property
    def model_name(self) -> str:
        """The model as the window names it (`model` is the spec it was given: a path, or a Hub name)."""
        model = StartingModel.of(self.model)
        return model_name(model.name, model.fresh)

    @property
    def task(self) -> str:
        return f"{self.plan.task} · {self.plan.train.path.name}"

    @property
    def score_name(self) -> str:
        """The validation score that chose (macro-F1, entity F1 for entity tags, answers' F1)."""
        return self.trials[0].score_name if self.trials else MACRO_F1

    @property
    def expected(self) -> int:
        rates = len(self.plan.learning_rates)
        return rates + better_half_size(rates) * (self.plan.seeds - 1)

    def trial(self, learning_rate: float, seed: int) -> Trial | None:
        """The run that trained `learning_rate` with `seed`, wherever its folder is; None before it began."""
        return next((t for t in self.trials if (t.learning_rate, t.seed) == (learning_rate, seed)), None)

    @property
    def half(self) -> list[float] | None:
        """The learning rates it runs with each further seed; None until every first-seed run has ended (by
        itself or failing) with its records whole."""
        first = [self.trial(rate, self.plan.first_seed) for rate in self.plan.learning_rates]
        if any(t is None or t.missing or t.state not in (*ENDED, "failed") for t in first):
            return None
        return better_half(self._candidates(first), self.plan.first_seed)

    @property
    def planned(self) -> list[tuple[float, int]] | None:
        """The runs it makes, in order: every learning rate with the first seed, then the better half with each
        further one; None while the better half is not known."""
        half = self.half
        if half is None:
            return None
        first = [(rate, self.plan.first_seed) for rate in self.plan.learning_rates]
        return first + [(rate, seed) for seed in self.plan.seed_range[1:] for rate in half]

    @property
    def unplanned(self) -> list[Trial]:
        """Its runs of a learning rate outside the better half, past the first seed: not weighed."""
        planned = self.planned
        return [] if planned is None else [t for t in self.trials if (t.learning_rate, t.seed) not in planned]

    @property
    def left_out(self) -> list[LeftOut]:
        """The run folders it does not weigh, each with why: its runs it did not plan, and those none of its trials."""
        why = "is not among the better half by the first seed"
        return [LeftOut(t.path, f"{t.name} {why}") for t in self.unplanned] + list(self.strays)

    @property
    def candidates(self) -> list[Candidate]:
        """Each learning rate of the grid with its planned runs that finished, in the grid's order."""
        unplanned = self.unplanned
        return self._candidates([t for t in self.trials if t not in unplanned])

    def _candidates(self, trials: list[Trial | None]) -> list[Candidate]:
        counted = [t for t in trials if t is not None and t.counts]
        return [Candidate(lr, tuple(t for t in counted if t.learning_rate == lr)) for lr in self.plan.learning_rates]

    @property
    def counted(self) -> int:
        return sum(len(c.trials) for c in self.candidates)

    @property
    def complete(self) -> bool:
        planned = self.planned
        return planned is not None and all((t := self.trial(*run)) is not None and t.counts for run in planned)

    @property
    def state(self) -> str:
        return "complete" if self.complete else f"{self.counted} of {self.expected} runs finished"

    @property
    def baseline(self) -> float | None:
        """The majority class's validation score, as its runs recorded it; None where none did."""
        return next((t.baseline for t in self.trials if t.baseline is not None), None)

    @property
    def chosen(self) -> Candidate | None:
        """The recipe chosen once every run it plans has finished: the best of the candidates that ran the most
        seeds and beat the majority class; None until then, and where none of them did."""
        if not self.complete:
            return None
        most = max(len(c.trials) for c in self.candidates)
        learned = [c for c in self.candidates if len(c.trials) == most and c.learned]
        return ranked(learned)[0] if learned else None

    def recipe(self) -> tuple[str, FinetuneOptions] | None:
        """The model and options that train the chosen recipe again as the search's runs trained: its learning rate
        over the searched schedule (`max_epochs`), stopped early with the best weights kept, the options search.json
        does not record as the first seed's run had them, and the first seed: that seed's run once more. None while
        none is chosen."""
        chosen = self.chosen
        if chosen is None:
            return None
        spec, options = recipe_options(self.plan, chosen.learning_rate, self.plan.max_epochs)
        return spec, replace(options, **chosen.trials[0].unrecorded)

    @property
    def schedule(self) -> str:
        """How each of its runs trained and which weights it kept, in words: what its chosen recipe repeats."""
        fixed, epochs = self.plan.fixed, self.plan.max_epochs
        every = f"every {fixed['eval_interval']:,} steps" if fixed["eval_interval"] else "every epoch"
        patience = fixed["patience"]
        return (
            f"a {epochs}-epoch schedule, evaluated {every} and stopped early after {patience} "
            f"evaluation{'s' * (patience != 1)} without a better validation score, keeping the best weights"
        )

    @property
    def verdict(self) -> str:
        """The chosen recipe in a sentence: the learning rate, the schedule its runs trained with, the epoch each
        seed's best weights came from, the scores; until then, how many runs have finished and which did not; and
        the runs it left out, with why."""
        chosen, unplanned = self.chosen, self.unplanned
        left = "; ".join(f"{left.path.name} ({left.reason})" for left in self.left_out)
        left_said = f" Left out: {left}." if left else ""
        majority = f"the majority class scores {self.baseline:.1%}" if self.baseline is not None else ""
        if chosen is None and self.complete:
            return (
                f"No recipe chosen: no learning rate beat the majority class (validation {self.score_name} "
                f"{self.baseline:.1%}) in {self.plan.max_epochs} epochs; a longer schedule or other learning rates "
                f"may.{left_said}"
            )
        if chosen is None:
            said = f"No recipe chosen until all {self.expected} runs have finished: {self.counted} have."
            missing = [f"{t.name} ({t.path.name}: {t.missing})" for t in self.trials if t.missing]
            stopped = [t.name for t in self.trials if not t.counts and not t.missing and t not in unplanned]
            said += f" Not weighed, as they did not finish: {'; '.join(stopped)}." if stopped else ""
            said += f" Not weighed, as their records are missing: {'; '.join(missing)}." if missing else ""
            return said + left_said
        spread = f" ± {chosen.spread:.1%}" if chosen.spread is not None else ""
        seeds = len(chosen.trials)
        test = f"test {statistics.fmean(chosen.test):.1%}" + (f"; {majority}" if majority else "")
        return (
            f"Chosen recipe: learning rate {chosen.learning_rate:g} over {self.schedule} ({best_said(chosen)}) — "
            f"validation {self.score_name} {chosen.mean:.1%}{spread} over {seeds} seed{'s' * (seeds > 1)} "
            f"({test}).{left_said}"
        )

    def table(self) -> str:
        """The search as a terminal table: each candidate's best epochs (or that it never beat the majority class),
        validation score (mean ± sd), test score and each seed's scores; the chosen one marked."""
        chosen = self.chosen
        name = self.score_name
        lines = [f"  {'lr':>7}  {'best epochs':<19}  {'validation ' + name:>22}  {'test ' + name:>15}  per seed "
                 f"(validation / test)"]  # fmt: skip
        for c in self.candidates:
            spread = f" ± {c.spread:.1%}" if c.spread is not None else ""
            validation = f"{c.mean:.1%}{spread}" if c.trials else "n/a"
            test = f"{statistics.fmean(c.test):.1%}" if c.trials else "n/a"
            seeds = "  ".join(f"{t.seed}: {t.validation:.1%} / {t.test:.1%}{'' if t.learned else ' (majority)'}"
                              for t in c.trials)  # fmt: skip
            mark = "*" if chosen is not None and c.learning_rate == chosen.learning_rate else " "
            lines.append(f"{mark} {c.learning_rate:>7g}  {epochs_shown(c):<19}  {validation:>22}  {test:>15}  {seeds}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        chosen, fixed = self.chosen, self.plan.fixed
        recipe = {"learning_rate": chosen.learning_rate, "epochs": self.plan.max_epochs} if chosen else None
        return {
            "search": str(self.path.resolve()),
            "model": self.model,
            "task": self.task,
            "score": self.score_name,
            "complete": self.complete,
            "finished": self.counted,
            "total": self.expected,
            "majority_baseline": self.baseline,
            "candidates": [c.to_json() for c in self.candidates],
            "chosen": None
            if recipe is None
            else {
                **recipe,
                "patience": fixed["patience"],
                "eval_interval": fixed["eval_interval"],
                "seed": self.plan.first_seed,
            },
            "verdict": self.verdict,
            "left_out": [{"folder": str(left.path), "reason": left.reason} for left in self.left_out],
        }


def epochs_shown(candidate: Candidate) -> str:
    """The epochs a candidate's runs were best at ("9, 5"), "never beat majority" where none beat the majority
    class, "–" before any finished."""
    if not candidate.trials:
        return "–"
    if not candidate.learned:
        return "never beat majority"
    return ", ".join(f"{t.best_epoch:g}" if t.learned else "majority" for t in candidate.trials)


def best_said(candidate: Candidate) -> str:
    """Where each of a candidate's runs took its best weights, in words: "seed 0 best at epoch 9, seed 1 at 5"."""
    said = [
        f"seed {t.seed} best at epoch {t.best_epoch:g}" if t.learned else f"seed {t.seed} never beat the majority class"
        for t in candidate.trials
    ]
    return ", ".join(said)


def read_search(path: str | Path) -> RecipeSearch | None:
    """The search in `path`, or None when it holds none (no `search.json`); a search.json that cannot be read is
    refused (`RecordError`, a CheckpointError naming the file and the field)."""
    path = Path(path)
    if not (path / PLAN).is_file():
        return None
    plan = read_plan(path)
    trials, left_out = search_trials(path, plan)
    modified = max([path.stat().st_mtime, *(t.path.stat().st_mtime for t in trials)])
    return RecipeSearch(path, plan, tuple(trials), tuple(left_out), modified)


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
