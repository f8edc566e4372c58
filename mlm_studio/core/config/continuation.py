"""The recipe a run starts from when it continues pre-training a published model: a learning rate and warm-up
that adapt the model to a corpus without erasing what it learned.

The presets' recipe trains from scratch (learning rate 2e-3). The MLM guide the workbench follows ("MLM — Masked
Language Modeling: Complete Guide", Key Hyperparameters) gives 1e-4 to 3e-4 for pre-training and 2e-5 to 5e-5 for
fine-tuning, with a warm-up "essential for stability". A model that has learned is continued at the foot of the
pre-training range, 1e-4, for a BERT-base width (768), and more gently the wider it is: each step of Adam moves
every weight by about the learning rate, so a layer's output moves in proportion to its width. A narrower model
is not raised above 1e-4. Measured on a published sentence encoder (benchmarks/bench_continuation.py,
docs/performance.md): 60 steps at 2e-3 left its sentence vectors at cosine 0.1-0.3 to its own; this recipe keeps
them close while the corpus's masked accuracy rises.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ModelConfig, TrainConfig

FOOT_OF_PRE_TRAINING = 1e-4  # the guide's lowest pre-training learning rate
REFERENCE_WIDTH = 768  # BERT-base's hidden size, the width the guide's ranges are for
WARMUP_STEPS = 100  # the rate rises from zero over these steps while a new masked-LM head settles
FIELDS = ("learning_rate", "warmup_steps")  # the [training] fields the recipe sets


@dataclass(frozen=True)
class Continuation:
    """The continuation recipe for one model."""

    learning_rate: float
    warmup_steps: int
    width: int

    def describe(self) -> str:
        return (
            f"learning rate {self.learning_rate:.2g} with {self.warmup_steps} warm-up steps, the continuation recipe "
            f"for a published model of width {self.width} (a from-scratch rate would erase what it learned)"
        )


def continuation_recipe(model: ModelConfig) -> Continuation:
    """The learning rate and warm-up that continue `model`: 1e-4 at width 768 and below, less in proportion above."""
    rate = FOOT_OF_PRE_TRAINING * min(1.0, REFERENCE_WIDTH / model.hidden_size)
    return Continuation(float(f"{rate:.2g}"), WARMUP_STEPS, model.hidden_size)


def continued(config: RunConfig, given: Collection[str] = ()) -> tuple[RunConfig, str]:
    """`config` (its model the one continued) with the recipe's value for each of FIELDS that `given` (names such
    as "training.learning_rate": what the user set) lacks, and a sentence saying what was chosen ("" when the
    user set them all)."""
    recipe = continuation_recipe(config.model)
    chosen = {name: getattr(recipe, name) for name in FIELDS if f"training.{name}" not in given}
    if not chosen:
        return config, ""
    kept = [f"training.{name}" for name in FIELDS if name not in chosen]
    yours = f"; yours kept: {', '.join(kept)}" if kept else ""
    training = replace(config.training, **chosen)
    return replace(config, training=training), f"Continuing an imported model: {recipe.describe()}{yours}."


def from_scratch(config: RunConfig, scratch: TrainConfig) -> RunConfig:
    """`config` back to training a new model: each of FIELDS still at the continuation recipe's value takes
    `scratch`'s (what the user changed stays)."""
    recipe, training = continuation_recipe(config.model), config.training
    back = {name: getattr(scratch, name) for name in FIELDS if getattr(training, name) == getattr(recipe, name)}
    return replace(config, training=replace(training, **back))
