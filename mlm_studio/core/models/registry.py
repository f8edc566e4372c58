"""The model families MLM Studio trains, imports and exports, registered in one place.

A family is one module: its masked-LM with `transformers`' parameter names and how its configuration reads and
writes config.json. Everything else (the trainer, prediction, probes, import and export, the Configuration
panel) asks this registry, never a family's classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.models import bert, distilbert, electra, modernbert, roberta
from mlm_studio.core.models.encoder import MaskedLM
from mlm_studio.core.training.replaced_tokens import ReplacedTokenDetection


@dataclass(frozen=True)
class Family:
    """What MLM Studio knows of one family of encoders."""

    model_type: str  # as `transformers`' config.json says it
    title: str  # as people say it
    prefix: str  # the encoder's attribute: its weights' names start with it, the head's do not
    build: Callable[[ModelConfig], MaskedLM]  # the masked-LM, freshly initialised
    from_hf: Callable[[dict[str, Any]], ModelConfig]  # its configuration from config.json (ConfigError if unusable)
    to_hf: Callable[[ModelConfig], dict[str, Any]]  # config.json for a configuration
    export_problems: Callable[[ModelConfig], list[str]] = lambda model: []  # why transformers would differ


FAMILIES: dict[str, Family] = {
    family.model_type: family
    for family in (
        Family(
            "bert", "BERT", "bert", bert.BertForMaskedLM, bert.bert_from_hf, bert.bert_to_hf, bert.bert_export_problems
        ),
        Family(
            "roberta",
            "RoBERTa",
            "roberta",
            roberta.RobertaForMaskedLM,
            roberta.roberta_from_hf,
            roberta.roberta_to_hf,
        ),
        Family(
            "distilbert",
            "DistilBERT",
            "distilbert",
            distilbert.DistilBertForMaskedLM,
            distilbert.distilbert_from_hf,
            distilbert.distilbert_to_hf,
            distilbert.distilbert_export_problems,
        ),
        Family(
            "modernbert",
            "ModernBERT",
            "model",
            modernbert.ModernBertForMaskedLM,
            modernbert.modernbert_from_hf,
            modernbert.modernbert_to_hf,
        ),
        Family(
            "electra",
            "ELECTRA",
            "electra",
            electra.ElectraForMaskedLM,
            electra.electra_from_hf,
            electra.electra_to_hf,
        ),
    )
}

# Config.json model types that are RoBERTa's architecture under another name.
ALIASES = {"camembert": "roberta", "xlm-roberta": "roberta"}


def family_of(config: ModelConfig) -> Family:
    """The family a model configuration belongs to."""
    return FAMILIES[config.family]


def build_model(config: ModelConfig) -> MaskedLM:
    """The masked-LM of `config`'s family, freshly initialised."""
    return family_of(config).build(config)


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
