"""What the Training panel says of a run in words: how its training ended, and what its empty plots are waiting
for."""

from __future__ import annotations

from pathlib import Path

from mlm_studio.core.runs.history import evaluation_said
from mlm_studio.core.runs.records import EvalRecord, FinishedRecord

NO_PROBES = (
    "This run has no cloze probes. Add sentences with [MASK] and their expected word on the Probes tab before "
    "starting a run: each word's rank is drawn here at every evaluation."
)


def finished_message(record: FinishedRecord, name: str, last_eval: EvalRecord | None) -> str:
    """ "Training stopped at step 98 (name); validation loss 6.365, accuracy 12.0% at step 75. …": the validation
    figures with the step of the evaluation they are from (`last_eval`, the run's latest, where the record does not
    say it)."""
    step = record.val_step if record.val_step is not None else (last_eval.step if last_eval is not None else None)
    if record.val_loss is None and record.val_accuracy is None:
        evaluation = "no evaluation"
    elif step is None:
        evaluation = f"validation loss {record.val_loss:.3f} (its step not recorded)"
    else:
        evaluation = evaluation_said(record.val_loss, record.val_accuracy, step)
    return f"Training {record.reason} at step {record.step:,} ({name}); {evaluation}. Try the model in the Playground."


def hints(shown: Path | None, live: bool, probes: int) -> dict[str, str]:
    """By plot, what it says while empty: for no run, the run being trained (`live`) or a run opened, which has
    `probes` cloze probes (for no run: the Probes tab's)."""
    words = f"{probes} cloze probe{'s' if probes != 1 else ''}"
    are, were = ("is", "was") if probes == 1 else ("are", "were")
    if shown is None:
        loss = "No run shown: Start trains one, Open on the Runs tab shows one."
        probe = (
            f"No run shown. The {words} on the Probes tab {are} scored at each evaluation of the next run: each "
            "expected word's rank is drawn here."
            if probes
            else "No run shown, and no cloze probes: add sentences with [MASK] and their expected word on the Probes "
            "tab before starting a run; each word's rank is drawn here at every evaluation."
        )
    elif live:
        loss = "The curves begin with the first logged step."
        probe = f"This run's {words} {are} scored at its first evaluation: each expected word's rank is drawn here."
    else:
        loss = "This run has no logged step."
        probe = f"This run's {words} {were} never scored: it has no evaluation."
    return {"loss": loss, "probes": probe if probes or shown is None else NO_PROBES}
