"""Models built from a configuration: a family's masked-LM, or what a run trains (ELECTRA's generator and
discriminator together), and the parts of what a run trains that fill masks and that tasks read."""

from __future__ import annotations

from torch import nn

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.models.encoder import MaskedLM
from mlm_studio.core.models.replaced_tokens import ReplacedTokenDetection


def build_model(config: ModelConfig) -> MaskedLM:
    """The masked-LM of `config`'s family, freshly initialised."""
    return FAMILIES[config.family].masked_lm()(config)


def build_trained(config: RunConfig) -> nn.Module:
    """What a run trains, freshly initialised: its family's masked-LM, or for ELECTRA's objective the generator
    and discriminator together."""
    t = config.training
    if t.objective == "electra":
        return ReplacedTokenDetection(config.model, t.generator_size, t.detection_weight)
    return build_model(config.model)


def masked_lm_of(trained: nn.Module) -> MaskedLM:
    """The masked-LM of what a run trains (an ELECTRA run's generator): what fills in masks."""
    return trained.generator if isinstance(trained, ReplacedTokenDetection) else trained


def encoder_of(trained: nn.Module) -> nn.Module:
    """The model whose representations a run is for (an ELECTRA run's discriminator): what tasks read."""
    return trained.discriminator if isinstance(trained, ReplacedTokenDetection) else trained
