"""The comparisons in a runs folder as the window lists and reopens them: a comparison is a folder of run folders,
one per contender and seed (`compare.run_folder_name`), with `comparison.json` saying what it was asked to run.
Read back, it says how each of its runs ended, the test scores of those that ended by themselves (a run stopped
halfway is not weighed against finished ones), and its verdict once every run has finished."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.finetune.compare import (
    MANIFEST,
    SCRATCH_LABEL,
    STARTING,
    YOURS,
    Contender,
    Outcome,
    Said,
    outcomes,
    pretraining_helped,
    run_folder_name,
    score_name,
    verdict,
)
from mlm_studio.core.finetune.runs import ENDED, finetune_run, last_test
from mlm_studio.core.runs.records import TestRecord
from mlm_studio.core.storage.json_text import read_json

LABELS = (YOURS, STARTING, SCRATCH_LABEL)  # in the order a comparison runs them
RUN_FOLDER = re.compile(r"^(?P<contender>[a-z-]+)-seed(?P<seed>\d+)$")
CONTENDER_OF = {run_folder_name(label, 0).removesuffix("-seed0"): label for label in LABELS}


@dataclass(frozen=True)
class ComparedRun:
    """One contender's run with one seed, as its folder tells."""

    contender: Contender  # its spec: the model the run started from, as the runs list names it
    seed: int
    path: Path
    state: str  # as `FinetuneRun.state`: completed, stopped early, stopped, failed, interrupted
    test: TestRecord | None  # the test scores it wrote last

    @property
    def counts(self) -> bool:
        """Whether its test scores are weighed: it ended by itself (not stopped halfway) and was scored."""
        return self.state in ENDED and self.test is not None

    @property
    def name(self) -> str:
        return f"{self.contender.label}, seed {self.seed}"


@dataclass(frozen=True)
class Comparison:
    """A comparison's runs, in the order it ran them (seed by seed), and what they add up to."""

    path: Path
    model: str  # your model, as the runs list names it
    task: str  # its kind and training file
    expected: int  # the runs it was asked for: contenders × seeds
    runs: tuple[ComparedRun, ...]
    modified: float  # its last change, seconds since the epoch

    @property
    def counted(self) -> list[ComparedRun]:
        return [run for run in self.runs if run.counts]

    @property
    def outcomes(self) -> list[Outcome]:
        """Each contender's test scores over the seeds of its runs that finished."""
        return outcomes(Said(run.contender, run.seed, run.test) for run in self.counted)

    @property
    def score_name(self) -> str:
        return score_name(self.outcomes)

    @property
    def complete(self) -> bool:
        return len(self.counted) >= self.expected

    @property
    def state(self) -> str:
        return "complete" if self.complete else f"{len(self.counted)} of {self.expected} runs finished"

    @property
    def verdict(self) -> str:
        """The verdict once every run has finished; until then, how many have, and which were stopped halfway."""
        if self.complete:
            return verdict(self.outcomes, self.score_name)
        said = f"No verdict until all {self.expected} runs have finished: {len(self.counted)} have."
        stopped = [run.name for run in self.runs if not run.counts]
        if stopped:
            said += f" Not weighed, as they did not finish: {'; '.join(stopped)}."
        return said

    @property
    def short_verdict(self) -> str:
        """The verdict in a few words, for a list."""
        helped = pretraining_helped(self.outcomes) if self.complete else None
        return "no verdict yet" if helped is None else "pre-training helped" if helped else "pre-training did not help"


def comparisons(root: str | Path) -> list[Comparison]:
    """The comparisons directly under `root`, newest first."""
    root = Path(root)
    found = [read_comparison(path) for path in root.iterdir() if path.is_dir()] if root.is_dir() else []
    return sorted((c for c in found if c is not None), key=lambda c: c.modified, reverse=True)


def read_comparison(path: str | Path) -> Comparison | None:
    """The comparison in `path`, or None when it holds none (a run folder, any other folder)."""
    path = Path(path)
    if (path / "config.toml").is_file():
        return None
    runs = _runs(path)
    manifest = _manifest(path)
    if not runs and not manifest:
        return None
    seeds = manifest.get("seeds")
    if not isinstance(seeds, int) or seeds < 1:
        seeds = len({run.seed for run in runs})
    labels = manifest.get("contenders")
    if not isinstance(labels, list) or not labels:
        labels = {YOURS, SCRATCH_LABEL} | {run.contender.label for run in runs}
    yours = next((run for run in runs if run.contender.label == YOURS), None)
    details = finetune_run(yours.path) if yours is not None else None
    model = details.model if details is not None else Path(str(manifest.get("model", "?"))).name
    modified = max([path.stat().st_mtime, *(run.path.stat().st_mtime for run in runs)])
    return Comparison(path, model, details.task if details else "?", seeds * len(labels), tuple(runs), modified)


def _runs(path: Path) -> list[ComparedRun]:
    found = []
    for folder in path.iterdir():
        match = RUN_FOLDER.match(folder.name)
        label = CONTENDER_OF.get(match["contender"]) if match else None
        run = finetune_run(folder) if label and (folder / "config.toml").is_file() else None
        if run is not None:
            contender, seed = Contender(label, run.model), int(match["seed"])
            found.append(ComparedRun(contender, seed, folder, run.state, last_test(folder)))
    return sorted(found, key=lambda run: (run.seed, LABELS.index(run.contender.label)))


def _manifest(path: Path) -> dict:
    """What the comparison was asked to run; {} for one written before it was recorded, or a damaged record."""
    try:
        manifest = read_json((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}
