"""The ELECTRA family: BERT's layers under `transformers`' Electra names, embeddings of their own width (projected
to the hidden size when narrower), and its two heads — the generator's masked-LM head (`ElectraForMaskedLM`,
the family's masked-LM) and the discriminator's replaced-token head (`ElectraForPreTraining`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.models import bert
from mlm_studio.core.models.bert import BERT_DEFAULTS, BertModel
from mlm_studio.core.models.encoder import MaskedLM, init_like_bert

SEQUENCE_HEAD = "gelu_projection"  # its classifier's layout (core/finetune/heads.py)

# `ElectraConfig`'s defaults (ELECTRA-small's discriminator), for config.json files that leave a field out.
ELECTRA_DEFAULTS = {
    **BERT_DEFAULTS,
    "embedding_size": 128,
    "hidden_size": 256,
    "num_attention_heads": 4,
    "intermediate_size": 1024,
}
DISCRIMINATOR = "ElectraForPreTraining"
GENERATOR = "ElectraForMaskedLM"


class ElectraGeneratorPredictions(nn.Module):
    """The masked-LM head's transform: to the embeddings' width, GELU, LayerNorm."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.LayerNorm = nn.LayerNorm(config.embedding_width(), eps=config.layer_norm_eps)
        self.dense = nn.Linear(config.hidden_size, config.embedding_width())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(F.gelu(self.dense(x)))


class ElectraForMaskedLM(MaskedLM):
    """ELECTRA's encoder and masked-LM head (a generator's); the head's weight is the word-embedding matrix."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.electra = BertModel(config)
        self.generator_predictions = ElectraGeneratorPredictions(config)
        self.generator_lm_head = nn.Linear(config.embedding_width(), config.vocab_size)
        self.apply(lambda module: init_like_bert(module, config.initializer_range))
        self.generator_lm_head.weight = self.electra.embeddings.word_embeddings.weight

    def hidden(self, input_ids, attention_mask=None, keep=None) -> torch.Tensor:
        return self.electra(input_ids, attention_mask, keep)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.generator_lm_head(self.generator_predictions(hidden))


class ElectraDiscriminatorPredictions(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dense_prediction = nn.Linear(config.hidden_size, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dense_prediction(F.gelu(self.dense(x))).squeeze(-1)


class ElectraForPreTraining(nn.Module):
    """The discriminator: ELECTRA's encoder and a head giving each token's logit of having been replaced."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.electra = BertModel(config)
        self.discriminator_predictions = ElectraDiscriminatorPredictions(config)
        self.apply(lambda module: init_like_bert(module, config.initializer_range))

    def hidden(self, input_ids, attention_mask=None, keep=None) -> torch.Tensor:
        return self.electra(input_ids, attention_mask, keep)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, L) ids → (B, L) logits of "replaced"."""
        return self.discriminator_predictions(self.hidden(input_ids, attention_mask))


# --- the family's Hugging Face side ----------------------------------------------------------------------
def from_hf(raw: dict[str, Any]) -> ModelConfig:
    config = bert.from_hf(raw, "electra", ELECTRA_DEFAULTS)
    same_width = config.embedding_size == config.hidden_size
    return replace(config, embedding_size=0) if same_width else config  # 0 says "the hidden size"


def to_hf(model: ModelConfig, architecture: str = GENERATOR) -> dict[str, Any]:
    """config.json for `ElectraForMaskedLM` (or `ElectraForPreTraining`)."""
    return {**bert.to_hf(model, architecture), "embedding_size": model.embedding_width()}
