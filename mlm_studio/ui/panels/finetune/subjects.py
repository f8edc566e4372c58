"""What the Fine-tune panel says about what it shows: the run (or a comparison's contender and seed, or a search's
learning rate and seed) that its curves, test scores and mistakes belong to, and status lines that name each
score's metric and step."""

from __future__ import annotations

from pathlib import Path

from mlm_studio.core.finetune.compare import Said, contenders
from mlm_studio.core.finetune.comparisons import Comparison
from mlm_studio.core.finetune.recipe.result import RecipeSearch
from mlm_studio.core.finetune.recipe.search import Tried
from mlm_studio.core.finetune.runs import FinetuneRun, finetune_run
from mlm_studio.core.finetune.scores import main_score, score_field
from mlm_studio.core.runs.records import FinishedRecord, TestRecord
from mlm_studio.core.storage.checkpoint import CheckpointError


def run_subject(path: Path) -> str:
    """ "Run 2024…-finetune: late on task.csv (classification)": the run a tab shows, its model and task."""
    run = _listed(path)
    if run is None:
        return f"Run {path.name}"
    kind, _, task = run.task.partition(" · ")
    return f"Run {path.name}: {run.model} on {task} ({kind})"


def _listed(path: Path) -> FinetuneRun | None:
    """The run as the runs list tells it; None when its task.json cannot be read (the tab that reads it says why)."""
    try:
        return finetune_run(path)
    except CheckpointError:
        return None


def contender_subject(said: Said, path: Path) -> str:
    """ "from scratch, seed 2: run from-scratch-seed2 of comparison 2024…-compare": a comparison's run."""
    return f"{said.contender.label}, seed {said.seed}: run {path.name} of comparison {path.parent.name}"


def trial_subject(tried: Tried, path: Path) -> str:
    """ "lr 0.0001, seed 1: run lr0.0001-seed1 of recipe search 2024…-search": a search's run."""
    return f"lr {tried.learning_rate:g}, seed {tried.seed}: run {path.name} of recipe search {path.parent.name}"


def comparison_subject(comparison: Comparison) -> str:
    """What the single-run tabs say while a comparison they do not show is reopened."""
    return (
        f"No single run: comparison {comparison.path.name} ({len(comparison.runs)} runs) is on the Comparison tab; "
        "choose a run in the Runs tab to see its curves, scores and mistakes"
    )


def search_subject(found: RecipeSearch) -> str:
    """What the single-run tabs say while a recipe search they do not show is reopened."""
    return (
        f"No single run: recipe search {found.path.name} ({len(found.trials)} runs) is on the Recipe tab; choose a "
        "run in the Runs tab to see its curves, scores and mistakes"
    )


def scored(test: TestRecord) -> str:
    """ "test macro-F1 81.0% with the best checkpoint (step 36) restored"."""
    name = score_field(test)[1]
    return f"test {name} {main_score(test):.1%} with {test.weights_said}"


def finished_line(finished: FinishedRecord, total_steps: int, test: TestRecord | None) -> str:
    """ "Finished (completed) at step 54 of 54: test macro-F1 81.0% with the best checkpoint (step 36) restored"."""
    of = f" of {total_steps:,}" if total_steps else ""  # a run read back whole, its start not said again
    line = f"Finished ({finished.reason}) at step {finished.step:,}{of}"
    return f"{line}: {scored(test)}" if test is not None else line


def shown_run_line(path: Path, test: TestRecord | None, total_steps: int | None) -> str:
    """The status of a run read from its folder: how it ended, at which step, and its test score."""
    run = _listed(path)
    state = run.state if run is not None else "?"
    if test is None:
        return f"{path.name}: {state}, no test scores yet: resume it to finish"
    of = f" of {total_steps:,}" if total_steps else ""
    return f"{path.name}: {state} at step {test.step:,}{of}; {scored(test)}"


def comparison_plan(model: str | None, seeds: int) -> str:
    """What Compare will run, said before it does: the contenders × seeds, each as long as one Start."""
    if not model:
        return "Compare your model with the same architecture from scratch over several seeds: choose a model first"
    found = contenders(model)
    names = ", ".join(c.label for c in found)
    return (
        f"Fine-tune {len(found)} contenders ({names}) × {seeds} seeds = {len(found) * seeds} runs, one after another, "
        "each with this recipe and the same split, so about as long as Start takes, times "
        f"{len(found) * seeds}; then their test scores side by side and a verdict on whether pre-training helped"
    )
