"""The comparisons in a runs folder as the window lists and reopens them: a comparison is a folder of run folders,
one per contender and seed (`compare.run_folder_name`), with `comparison.json` saying what it was asked to run.
Read back, it says how each of its runs ended, the test scores of those that ended by themselves (a run stopped
halfway is not weighed against finished ones), and its verdict once every run has finished. A run whose task.json
cannot be read is left out of it, and said; a comparison.json that cannot be read leaves the comparison out of the
list of comparisons, said."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.config.sections import MAX_SEED
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
from mlm_studio.core.finetune.tasks import MAX_SEEDS
from mlm_studio.core.runs.history import LeftOut, Listed
from mlm_studio.core.runs.records import TestRecord
from mlm_studio.core.runs.task_spec import FieldError, Fields
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.json_record import read_record, record_error

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
    left_out: tuple[LeftOut, ...] = ()  # its run folders that could not be read, each with why

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
        if self.left_out:
            said += f" Left out, as they cannot be read: {'; '.join(left.said() for left in self.left_out)}."
        return said

    @property
    def short_verdict(self) -> str:
        """The verdict in a few words, for a list."""
        helped = pretraining_helped(self.outcomes) if self.complete else None
        return "no verdict yet" if helped is None else "pre-training helped" if helped else "pre-training did not help"


def comparisons(root: str | Path) -> Listed[Comparison]:
    """The comparisons directly under `root`, newest first, and those left out, each with why (a comparison.json
    that cannot be read)."""
    root = Path(root)
    found, left_out = [], []
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            comparison = read_comparison(path) if path.is_dir() else None
        except CheckpointError as exc:
            left_out.append(LeftOut(path, str(exc)))
            continue
        if comparison is not None:
            found.append(comparison)
    return Listed(tuple(sorted(found, key=lambda c: c.modified, reverse=True)), tuple(left_out))


@dataclass(frozen=True)
class Asked:
    """What a comparison was asked to run, as its comparison.json says (read with every field checked)."""

    model: str
    first_seed: int
    seeds: int
    contenders: tuple[str, ...]


def read_comparison(path: str | Path) -> Comparison | None:
    """The comparison in `path`, or None when it holds none (a run folder, any other folder); a comparison.json
    that cannot be read is refused (`RecordError`, a CheckpointError naming the file and the field). Its run
    folders whose task.json cannot be read are left out of it, each with why."""
    path = Path(path)
    if (path / "config.toml").is_file():
        return None
    runs, left_out = _runs(path)
    asked = _asked(path)
    if not runs and not left_out and asked is None:
        return None
    seeds = asked.seeds if asked is not None else len({run.seed for run in runs} | {_seed(x.path) for x in left_out})
    labels = asked.contenders if asked is not None else {YOURS, SCRATCH_LABEL} | {r.contender.label for r in runs}
    yours = next((run for run in runs if run.contender.label == YOURS), None)
    details = finetune_run(yours.path) if yours is not None else None
    model = details.model if details is not None else Path(asked.model if asked is not None else "?").name
    modified = max([path.stat().st_mtime, *(run.path.stat().st_mtime for run in runs)])
    task = details.task if details else "?"
    return Comparison(path, model, task, seeds * len(labels), tuple(runs), modified, tuple(left_out))


def _runs(path: Path) -> tuple[list[ComparedRun], list[LeftOut]]:
    """The comparison's runs, and its run folders left out as they cannot be read, each with why."""
    found, left_out = [], []
    for folder in sorted(path.iterdir()):
        match = RUN_FOLDER.match(folder.name)
        label = CONTENDER_OF.get(match["contender"]) if match else None
        if not label or not (folder / "config.toml").is_file():
            continue
        try:
            run = finetune_run(folder)
        except CheckpointError as exc:
            left_out.append(LeftOut(folder, str(exc)))
            continue
        if run is not None:
            contender, seed = Contender(label, run.model), int(match["seed"])
            found.append(ComparedRun(contender, seed, folder, run.state, last_test(folder)))
    return sorted(found, key=lambda run: (run.seed, LABELS.index(run.contender.label))), left_out


def _seed(folder: Path) -> int:
    return int(RUN_FOLDER.match(folder.name)["seed"])


def _asked(path: Path) -> Asked | None:
    """What the comparison was asked to run; None for one written before it was recorded."""
    manifest = path / MANIFEST
    if not manifest.is_file():
        return None
    try:
        fields = Fields(read_record(manifest))
        labels = fields.texts("contenders")
        unknown = [label for label in labels if label not in LABELS]
        if unknown:
            raise FieldError(f'its "contenders" name {shown(unknown[0])}, not one of {", ".join(LABELS)}', foreign=True)
        first = fields.whole("first_seed", 0, MAX_SEED)
        return Asked(fields.text("model"), first, fields.whole("seeds", 1, MAX_SEEDS), labels)
    except FieldError as exc:
        raise record_error(manifest, str(exc), exc.foreign) from None
