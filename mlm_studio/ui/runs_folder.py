"""The runs folder as every panel lists it, one value read once for them all (`RunsSnapshot`): the pre-training
runs' summaries, the fine-tuning runs, the comparisons and recipe searches, and the Hub models already in the local
cache. `RunsFolder` reads it, each run only when its files changed (`RunsListing`), on whichever thread calls it:
plain Python, no Qt, so the workspace reads it off the GUI thread."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mlm_studio.core.finetune.comparisons import Comparison, comparisons
from mlm_studio.core.finetune.recipe.result import RecipeSearch, searches
from mlm_studio.core.finetune.runs import FinetuneRun, finetune_run
from mlm_studio.core.models.hf_folder import has_known_family
from mlm_studio.core.runs.history import Listed, RunsListing, RunSummary, pretraining_summary
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.hub_cache import cached_models
from mlm_studio.core.training.branch_record import Branch, branch_of


@dataclass(frozen=True)
class RunsSnapshot:
    """What the runs folder `root` held when read: its pre-training runs, fine-tuning runs, comparisons and searches,
    each newest first with those left out, and the cached Hub models of a family MLM Studio has, as (name, snapshot
    folder), and the branch each pre-training run that is one is (by its folder). Not `read`: the folder's first
    reading has not arrived yet, and nothing is listed."""

    root: Path
    pretraining: Listed[RunSummary]
    finetuning: Listed[FinetuneRun]
    comparisons: Listed[Comparison]
    searches: Listed[RecipeSearch]
    hub_models: tuple[tuple[str, Path], ...]
    branches: Mapping[Path, Branch] = field(default_factory=dict)
    read: bool = True

    @classmethod
    def being_read(cls, root: Path) -> RunsSnapshot:
        """What a folder read for the first time lists until its reading arrives: nothing yet."""
        return cls(root, Listed(()), Listed(()), Listed(()), Listed(()), (), read=False)

    def with_checkpoint(self) -> tuple[RunSummary, ...]:
        """The pre-training runs that have a checkpoint: the models a chooser offers."""
        return tuple(run for run in self.pretraining.found if run.checkpoint_step > 0)


class RunsFolder:
    """Reads a runs folder into a `RunsSnapshot`, keeping what it read of each run until that run's files change."""

    def __init__(self) -> None:
        self._pretraining = RunsListing(_pretraining_run)
        self._finetuning = RunsListing(lambda run: finetune_run(run.path))

    def read(self, root: str | Path) -> RunsSnapshot:
        """What `root` holds now, each run read again only if its files changed since the last reading."""
        hub = tuple((name, folder) for name, folder in cached_models() if has_known_family(folder))
        runs = self._pretraining.refresh(root)
        pretraining = Listed(tuple(summary for summary, _ in runs.found), runs.left_out)
        branches = {summary.path: branch for summary, branch in runs.found if branch is not None}
        listed = pretraining, self._finetuning.refresh(root), comparisons(root), searches(root)
        return RunsSnapshot(Path(root), *listed, hub, branches)


def _pretraining_run(run: RunDir) -> tuple[RunSummary, Branch | None] | None:
    """A pre-training run's summary and the branch it is (None for a fine-tuning run)."""
    summary = pretraining_summary(run)
    if summary is None:
        return None
    try:
        return summary, branch_of(run)
    except CheckpointError:  # a damaged branch record: listed as a run of its own
        return summary, None
