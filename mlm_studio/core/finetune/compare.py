"""The comparison that says whether pre-training paid off: the same task, budget, split and seeds for the user's
model, the model it started from (when it continued an imported one) and the same shape from scratch; the test
scores of each over several seeds, with their spread. Its folder holds one run folder per contender and seed, and
`comparison.json`, what it was asked to run (comparisons.py reads it all back)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from mlm_studio.core.data.labelled import TaskError
from mlm_studio.core.finetune.options import FinetuneOptions, check_seeds
from mlm_studio.core.finetune.request import StartingModel, request_differences
from mlm_studio.core.finetune.scores import ENTITY_F1, MACRO_F1, main_score
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import Record, TestRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.files import atomic_write_json
from mlm_studio.core.storage.json_text import read_json

YOURS, STARTING, SCRATCH_LABEL = "your model", "its starting model", "from scratch"
MANIFEST = "comparison.json"  # in a comparison's folder: its model, contenders and seeds


@dataclass(frozen=True)
class Contender:
    label: str  # as the table says it
    model: StartingModel


class Said(NamedTuple):
    """One record of a comparison, with the contender and the seed that said it."""

    contender: Contender
    seed: int
    record: Record


@dataclass
class Outcome:
    """A contender's test scores, one per seed."""

    contender: Contender
    accuracy: list[float] = field(default_factory=list)
    score: list[float] = field(default_factory=list)  # the score that chose each run's best checkpoint
    entities: bool = False  # that score is entity F1 (tags that mark entities), else macro-F1

    def to_json(self) -> dict:
        return {
            "label": self.contender.label,
            "model": str(self.contender.model),
            "accuracy": self.accuracy,
            "score": self.score,
            "accuracy_mean": statistics.fmean(self.accuracy) if self.accuracy else None,
            "score_mean": statistics.fmean(self.score) if self.score else None,
            "score_sd": statistics.stdev(self.score) if len(self.score) > 1 else None,
        }


def contenders(model: StartingModel | str) -> list[Contender]:
    """The user's model, what it started from (a run that continued an imported model), the same from scratch."""
    model = StartingModel.of(model)
    found = [Contender(YOURS, model)]
    source = RunDir(model.path).origin.get("source") if (model.path / "config.toml").is_file() else None
    if source:
        found.append(Contender(STARTING, StartingModel(str(source))))
    found.append(Contender(SCRATCH_LABEL, model.from_scratch()))
    return found


def compare(
    model: StartingModel | str, options: FinetuneOptions, root: Path, seeds: int, control: TrainingControl | None = None
) -> Iterator[Said]:
    """Fine-tune each contender with seeds `options.seed`, +1, … (the split fixed by the first), each in its own
    run folder under `root` (a folder there already is resumed); every record, said by whom and with which seed."""
    if options.task == "qa":
        raise TaskError("a comparison weighs classifiers and taggers; fine-tune a question answerer on its own")
    check_seeds(options.seed, seeds)
    model = StartingModel.of(model)
    everyone = contenders(model)
    own = {run_folder_name(c.label, seed) for c in everyone for seed in range(options.seed, options.seed + seeds)}
    refuse_another_folder(Path(root), options.seed, seeds, own)
    for seed in range(options.seed, options.seed + seeds):
        for contender in everyone:
            path = root / run_folder_name(contender.label, seed)
            seeded = replace(options, seed=seed, split_seed=options.held_out_by)
            if path.is_symlink():
                raise TaskError(f"{path} is a symbolic link; a comparison writes its runs only into its own folder")
            if (path / "config.toml").is_file():
                refuse_another_question(root, RunDir(path), contender.model, seeded)
                tuner = prepare_finetuner(path, control=control)
            else:
                tuner = prepare_finetuner(path, contender.model, seeded, control)
            if seed == options.seed and contender is everyone[0]:
                manifest = {"model": str(model), "first_seed": options.seed, "seeds": seeds}
                atomic_write_json(root / MANIFEST, {**manifest, "contenders": [c.label for c in everyone]})
            for record in tuner.run():
                yield Said(contender, seed, record)
            if tuner.control.stop_requested:
                return


def refuse_another_folder(root: Path, first_seed: int, seeds: int, own: set[str]) -> None:
    """A comparison goes into a new or empty folder (or one holding only its `own` run folders, made before a stop),
    or continues the one in `root` only with its model and seeds: else a TaskError naming what is there, before
    anything is written (its comparison.json is never rewritten for another question)."""
    manifest = root / MANIFEST
    if not manifest.is_file():
        held = sorted(p.name for p in root.iterdir() if p.name[0] != "." and p.name not in own) if root.is_dir() else []
        if held:
            raise TaskError(
                f"{root} already holds {shown(held[0])[1:-1]}{' and more' if len(held) > 1 else ''} and no "
                "comparison; a comparison goes into a new or empty folder: choose another"
            )
        return
    try:
        before = read_json(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TaskError(f"{manifest} cannot be read ({exc}); start the comparison in another folder") from None
    before = before if isinstance(before, dict) else {}
    asked = {"first_seed": first_seed, "seeds": seeds}  # its model and recipe: each run's own (see below)
    differ = [f"{name} {shown(before.get(name))} there, {shown(value)} asked" for name, value in asked.items()
              if before.get(name) != value]  # fmt: skip
    if differ:
        raise TaskError(
            f"{root} holds a comparison of other seeds ({'; '.join(differ)}); nothing was changed. Give the same "
            "--seed and --seeds to continue it, or another --out to start a new one"
        )


def refuse_another_question(root: Path, run: RunDir, model: StartingModel, options: FinetuneOptions) -> None:
    """A run already in a comparison's folder is continued only when it was made for what is asked now: else a
    TaskError naming what differs, before anything is written."""
    differences = request_differences(run, model, options)
    if differences:
        raise TaskError(
            f"{root} holds a comparison of something else ({run.name}: {'; '.join(differences)}); nothing was "
            "changed. Give another output folder to compare this, or the same model, task and recipe to continue it"
        )


def run_folder_name(label: str, seed: int) -> str:
    """The folder of a contender's run with `seed` in its comparison's folder: `from-scratch-seed2`."""
    return f"{re.sub(r'[^a-z]+', '-', label)}-seed{seed}"


def outcomes(results: Iterable[Said]) -> list[Outcome]:
    """The test scores of each contender, in the order they came."""
    found: dict[str, Outcome] = {}
    for contender, _, record in results:
        if isinstance(record, TestRecord):
            outcome = found.setdefault(contender.label, Outcome(contender))
            outcome.accuracy.append(record.accuracy)
            outcome.score.append(main_score(record))
            outcome.entities = record.entity_f1 is not None
    return list(found.values())


def table(found: list[Outcome], score_name: str) -> str:
    """The comparison as a terminal table: mean ± standard deviation over the seeds, and each seed's score."""
    width = max(len(o.contender.label) for o in found)
    lines = [f"{'model':<{width}}  {'accuracy':>15}  {score_name:>15}  per seed ({score_name})"]
    for outcome in found:
        lines.append(
            f"{outcome.contender.label:<{width}}  {_spread(outcome.accuracy):>15}  {_spread(outcome.score):>15}  "
            + " ".join(f"{value:.1%}" for value in outcome.score)
        )
    return "\n".join(lines)


def _spread(values: list[float]) -> str:
    if not values:
        return "n/a"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.1%} ± {sd:.1%}"


def score_name(found: list[Outcome]) -> str:
    """The score a comparison weighs: the one its runs chose their best checkpoints by (`main_score_name`)."""
    return ENTITY_F1 if any(outcome.entities for outcome in found) else MACRO_F1


def pretraining_helped(found: list[Outcome]) -> bool | None:
    """Whether your model's every seed beats every seed from scratch; None until both have a test score."""
    by_label = {outcome.contender.label: outcome for outcome in found if outcome.score}
    yours, scratch = by_label.get(YOURS), by_label.get(SCRATCH_LABEL)
    return None if yours is None or scratch is None else min(yours.score) > max(scratch.score)


def verdict(found: list[Outcome], score_name: str) -> str:
    """Whether pre-training helped, in one sentence: your model against the same architecture from scratch (and
    against its starting model, when it has one). Better or worse means on every seed (the lowest score of one
    above the highest of the other); where the seeds' scores overlap there is no clear difference."""
    helped = pretraining_helped(found)
    if helped is None:
        return "No verdict yet: your model and the one from scratch each need a test score; run the comparison on."
    by_label = {outcome.contender.label: outcome for outcome in found if outcome.score}
    yours = by_label[YOURS]
    said = (
        f"Pre-training {'helped' if helped else 'did not help'}: your model's {score_name} "
        f"{_against(yours, by_label[SCRATCH_LABEL], 'the same architecture from scratch')}"
    )
    start = by_label.get(STARTING)
    if start is not None:
        said += f", and {_against(yours, start, 'its starting model')}"
    return said + "."


def _against(mine: Outcome, other: Outcome, name: str) -> str:
    means = f"{statistics.fmean(mine.score):.1%} against {statistics.fmean(other.score):.1%} on average"
    if min(mine.score) > max(other.score):
        return f"is above {name}'s on every seed ({means})"
    if max(mine.score) < min(other.score):
        return f"is below {name}'s on every seed ({means})"
    return f"is not clearly different from {name}'s: the seeds' scores overlap ({means})"
