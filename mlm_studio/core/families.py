"""The model families MLM Studio trains, imports and exports, registered in one place.

A family is one module: its configuration, its modules with `transformers`' parameter names, and how its
configuration reads and writes config.json. Everything else (the trainer, prediction, probes, import and export,
the Configuration panel) asks this registry, never a family's classes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from mlm_studio.core import model as bert
from mlm_studio.core.settings import ModelConfig


@dataclass(frozen=True)
class Family:
    """What MLM Studio knows of one family of encoders."""

    model_type: str  # as `transformers`' config.json says it
    title: str  # as people say it
    config: type  # its configuration section
    build: Callable[[Any], nn.Module]  # the masked-LM, parameters named as `transformers` names them
    from_hf: Callable[[dict[str, Any]], Any]  # its configuration from config.json (ConfigError when unusable)
    to_hf: Callable[[Any], dict[str, Any]]  # config.json for a configuration
    export_problems: Callable[[Any], list[str]]  # why `transformers` would compute something else


BERT = Family(
    model_type="bert",
    title="BERT",
    config=ModelConfig,
    build=bert.BertForMaskedLM,
    from_hf=bert.bert_from_hf,
    to_hf=bert.bert_to_hf,
    export_problems=bert.bert_export_problems,
)
FAMILIES: dict[str, Family] = {family.model_type: family for family in (BERT,)}


def family_of(config: Any) -> Family:
    """The family a model configuration belongs to."""
    for family in FAMILIES.values():
        if type(config) is family.config:
            return family
    raise TypeError(f"no model family takes a {type(config).__name__}")


def build_model(config: Any) -> nn.Module:
    """The masked-LM of `config`'s family, freshly initialised."""
    return family_of(config).build(config)
