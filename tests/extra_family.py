"""A model family that only the tests register: BERT's layers with one field of its own (a scale on the logits),
described by one registry entry and this module, as a new family would be."""

from dataclasses import replace
from typing import Any

import torch

from mlm_studio.core.config.families import SEGMENT_TYPES, Family, FamilyField, encoder_parameters
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.models import bert

SCALED_BERT = Family(
    "scaled-bert",
    "Scaled BERT",
    "BERT with its logits scaled",
    __name__,
    "ScaledBertForMaskedLM",
    "bert",
    lambda model: encoder_parameters(model, positions=True, types=model.type_vocab_size, pre_norm=False),
    fields=(SEGMENT_TYPES, FamilyField("logit_scale", 1.0, "Logit scale", "Multiplies the logits", 0.01, 100.0)),
)


class ScaledBertForMaskedLM(bert.BertForMaskedLM):
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return super().logits(hidden) * self.config.logit_scale


def from_hf(raw: dict[str, Any]) -> ModelConfig:
    return replace(bert.from_hf(raw, "scaled-bert"), logit_scale=float(raw.get("logit_scale", 1.0)))


def to_hf(model: ModelConfig) -> dict[str, Any]:
    return {**bert.to_hf(model, "ScaledBertForMaskedLM"), "logit_scale": model.logit_scale}
