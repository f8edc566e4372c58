"""One prediction's attribution at every checkpoint of a run, oldest first: which words carried the answer as it
formed (a probe's expected word, or any candidate of a text)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.evaluation.explain.attributions import Attribution, Explainer, OutputNotFinite
from mlm_studio.core.evaluation.explain.choices import DEFAULT_METHOD
from mlm_studio.core.evaluation.subject import refuse_fine_tuned
from mlm_studio.core.models.build import build_trained, masked_lm_of
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.run_folder import resolve_checkpoint
from mlm_studio.core.storage.checkpoint import CheckpointError, checkpoint_finite, load_weights


@dataclass(frozen=True)
class Formed:
    """A checkpoint's attribution, or why it has none (its weights unreadable, or not finite numbers, or its
    output not one)."""

    step: int
    attribution: Attribution | None
    problem: str = ""


def attributions_over_checkpoints(
    source: str | Path,
    text: str,
    candidate: int | str,
    mask: int = 0,
    method: str = DEFAULT_METHOD,
    progress: Progress | None = None,
    pieces: Sequence[int] = (),
    position: int = -1,
) -> list[Formed]:
    """The attribution of `candidate` at the `mask`-th [MASK] of `text` (or, given `pieces`, at piece `position`
    of that block, a held-out block as the model was shown it) at each checkpoint of the run at `source` (a run
    folder or one of its checkpoints), oldest first."""
    progress = progress or Progress()
    run, _ = resolve_checkpoint(source)
    refuse_fine_tuned(run)
    trained = build_trained(run.config)
    model = masked_lm_of(trained)
    checkpoints = run.checkpoints()
    formed = []
    for number, checkpoint in enumerate(checkpoints):
        progress.check()
        progress.report(number, len(checkpoints), f"Explaining at {checkpoint.name}")
        step = int(checkpoint.name.split("-")[1])
        if not checkpoint_finite(checkpoint, unreadable=True):
            formed.append(Formed(step, None, "its weights are not finite numbers"))
            continue
        try:
            load_weights(checkpoint, trained)
        except CheckpointError:
            formed.append(Formed(step, None, "its weights file cannot be read (being written, or damaged)"))
            continue
        # an ELECTRA run's answers are its generator's: its discriminator predicts no word
        generator = ", its generator" if model is not trained else ""
        explainer = Explainer(model, run.tokenizer, f"{run.name} / {checkpoint.name}{generator}")
        try:
            if pieces:
                explained = explainer.explain_pieces(pieces, position, candidate, method, mask=mask)
            else:
                explained = explainer.explain(text, candidate, mask, method)
        except OutputNotFinite:
            formed.append(Formed(step, None, "its output is not a finite number"))
            continue
        formed.append(Formed(step, explained))
    progress.report(len(checkpoints), len(checkpoints), "Explained at every checkpoint")
    return formed
