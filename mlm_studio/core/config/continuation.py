"""The recipe a run starts from when it continues pre-training a published model: a learning rate and warm-up
that adapt the model to a corpus without erasing what it learned.

The presets' recipe trains from scratch (learning rate 2e-3). The MLM guide the workbench follows ("MLM — Masked
Language Modeling: Complete Guide", Key Hyperparameters) gives 1e-4 to 3e-4 for pre-training and 2e-5 to 5e-5 for
fine-tuning, with a warm-up "essential for stability". A model that has learned is adapted, not trained anew, so
it continues at the middle of the fine-tuning range, 3e-5, below the pre-training range, for a BERT-base width
(768) and narrower, and in proportion lower for a wider model (each step of Adam moves every weight by about the
learning rate, so a layer's output moves in proportion to its width). Measured on a published sentence encoder
(all-MiniLM-L6-v2 continued 60 steps on Python's documentation, benchmarks/bench_continuation.py,
docs/performance.md): at 2e-3 its sentence vectors fell to cosine 0.14 to its own, at 1e-4 to 0.85, at 3e-5
they stayed at 0.97 while the corpus's masked accuracy rose as much as at 1e-4.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ModelConfig, TrainConfig

CONTINUATION_RATE = 3e-5  # the middle of the guide's fine-tuning range, for REFERENCE_WIDTH and narrower
REFERENCE_WIDTH = 768  # BERT-base's hidden size, the width the guide's ranges are for
WARMUP_STEPS = 100  # the rate rises from zero over these steps while a new masked-LM head settles
WARMUP_SHARE = 0.1  # and over at most this share of a run's steps, so that a short run reaches the peak rate
FIELDS = ("learning_rate", "warmup_steps")  # the [training] fields the recipe sets


@dataclass(frozen=True)
class Continuation:
    """The continuation recipe for one model."""

    learning_rate: float
    warmup_steps: int
    width: int
    steps: int | None = None  # the run's steps, when known before it starts

    def describe(self, fields: Collection[str] = FIELDS) -> str:
        """The recipe's values of `fields` in words."""
        capped = (
            f" (capped at {WARMUP_SHARE:.0%} of the run's {self.steps:,} steps, so that the rate reaches its peak)"
            if self.warmup_steps < WARMUP_STEPS
            else ""
        )
        parts = {
            "learning_rate": f"learning rate {self.learning_rate:.2g}",
            "warmup_steps": f"{self.warmup_steps} warm-up steps{capped}",
        }
        return (
            f"{' with '.join(parts[name] for name in FIELDS if name in fields)}, the continuation recipe for a "
            f"published model of width {self.width} (a from-scratch rate would erase what it learned)"
        )


def continuation_recipe(model: ModelConfig, steps: int | None = None) -> Continuation:
    """The learning rate and warm-up that continue `model`: 3e-5 at width 768 and below, less in proportion above;
    WARMUP_STEPS of warm-up, or WARMUP_SHARE of the run's `steps` when that is fewer."""
    rate = CONTINUATION_RATE * min(1.0, REFERENCE_WIDTH / model.hidden_size)
    warmup = WARMUP_STEPS if steps is None else min(WARMUP_STEPS, round(WARMUP_SHARE * steps))
    return Continuation(rate, warmup, model.hidden_size, steps)


def _known_steps(training: TrainConfig) -> int | None:
    """A run's steps when it is set to a number of them (not epochs of a corpus yet to be read, nor a duration)."""
    return training.max_steps if training.epochs == 0 and training.time_budget == 0 else None


def continued(config: RunConfig, given: Collection[str] = ()) -> tuple[RunConfig, str]:
    """`config` (its model the one continued) with the recipe's value for each of FIELDS that `given` (names such
    as "training.learning_rate": what the user set) lacks, and a sentence saying what was chosen ("" when the
    user set them all)."""
    recipe = continuation_recipe(config.model, _known_steps(config.training))
    chosen = {name: getattr(recipe, name) for name in FIELDS if f"training.{name}" not in given}
    if not chosen:
        return config, ""
    kept = [f"training.{name} {getattr(config.training, name):g} (yours)" for name in FIELDS if name not in chosen]
    yours = f"; used as set: {', '.join(kept)}" if kept else ""
    training = replace(config.training, **chosen)
    return replace(config, training=training), f"Continuing an imported model: {recipe.describe(chosen)}{yours}."


def from_scratch(config: RunConfig, scratch: TrainConfig) -> RunConfig:
    """`config` back to training a new model: each of FIELDS still at the continuation recipe's value takes
    `scratch`'s (what the user changed stays)."""
    recipe, training = continuation_recipe(config.model, _known_steps(config.training)), config.training
    back = {name: getattr(scratch, name) for name in FIELDS if getattr(training, name) == getattr(recipe, name)}
    return replace(config, training=replace(training, **back))
