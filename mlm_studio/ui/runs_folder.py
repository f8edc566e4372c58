"""The runs folder as every panel lists it, one value read once for them all (`RunsSnapshot`): the pre-training
runs' summaries, the fine-tuning runs, the comparisons and recipe searches, and the Hub models already in the local
cache. `RunsFolder` reads it, each run only when its files changed (`RunsListing`), on whichever thread calls it:
plain Python, no Qt, so the workspace reads it off the GUI thread."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.finetune.comparisons import Comparison, comparisons
from mlm_studio.core.finetune.recipe.result import RecipeSearch, searches
from mlm_studio.core.finetune.runs import FinetuneRun, finetune_run
from mlm_studio.core.models.hf_folder import has_known_family
from mlm_studio.core.runs.history import Listed, RunsListing, RunSummary, pretraining_summary
from mlm_studio.core.storage.hub_cache import cached_models


@dataclass(frozen=True)
class RunsSnapshot:
    """What the runs folder `root` held when read: its pre-training runs, fine-tuning runs, comparisons and searches,
    each newest first with those left out, and the cached Hub models of a family MLM Studio has, as (name, snapshot
    folder)."""

    root: Path
    pretraining: Listed[RunSummary]
    finetuning: Listed[FinetuneRun]
    comparisons: Listed[Comparison]
    searches: Listed[RecipeSearch]
    hub_models: tuple[tuple[str, Path], ...]

    def with_checkpoint(self) -> tuple[RunSummary, ...]:
        """The pre-training runs that have a checkpoint: the models a chooser offers."""
        return tuple(run for run in self.pretraining.found if run.checkpoint_step > 0)


class RunsFolder:
    """Reads a runs folder into a `RunsSnapshot`, keeping what it read of each run until that run's files change."""

    def __init__(self) -> None:
        self._pretraining = RunsListing(pretraining_summary)
        self._finetuning = RunsListing(lambda run: finetune_run(run.path))

    def read(self, root: str | Path) -> RunsSnapshot:
        """What `root` holds now, each run read again only if its files changed since the last reading."""
        hub = tuple((name, folder) for name, folder in cached_models() if has_known_family(folder))
        listed = self._pretraining.refresh(root), self._finetuning.refresh(root), comparisons(root), searches(root)
        return RunsSnapshot(Path(root), *listed, hub)
