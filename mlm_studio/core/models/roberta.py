"""The RoBERTa family (CamemBERT and XLM-RoBERTa share it): BERT's layers, learned positions numbered from the
padding id + 1 (padding itself takes the padding id's row), one segment type, and its own head, all under
`transformers`' `RobertaForMaskedLM` parameter names."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.models import bert
from mlm_studio.core.models.bert import BERT_DEFAULTS, BertEmbeddings, BertModel
from mlm_studio.core.models.encoder import MaskedLM, init_like_bert

SEQUENCE_HEAD = "tanh_projection"  # its classifier's layout (core/finetune/heads.py)

ROBERTA_DEFAULTS = {**BERT_DEFAULTS, "vocab_size": 50265, "pad_token_id": 1}  # `RobertaConfig`'s own


class RobertaEmbeddings(BertEmbeddings):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.position_embeddings.padding_idx = config.pad_token_id

    def positions(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(B, L, H): token i of a row without padding sits at position padding id + 1 + i; padding at the
        padding id."""
        real = input_ids.ne(self.padding_idx)
        numbers = torch.cumsum(real, dim=1) * real + self.padding_idx
        return self.position_embeddings(numbers)


class RobertaLMHead(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.bias = self.decoder.bias  # one parameter under both Hugging Face names

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.layer_norm(F.gelu(self.dense(x))))


class RobertaForMaskedLM(MaskedLM):
    """RoBERTa's encoder and head; the decoder's weight is the word-embedding matrix."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.roberta = BertModel(config, RobertaEmbeddings)
        self.lm_head = RobertaLMHead(config)
        self.apply(lambda module: init_like_bert(module, config.initializer_range))
        self.lm_head.decoder.weight = self.roberta.embeddings.word_embeddings.weight

    def hidden(self, input_ids, attention_mask=None, keep=None) -> torch.Tensor:
        return self.roberta(input_ids, attention_mask, keep)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden)


def from_hf(raw: dict[str, Any]) -> ModelConfig:
    return bert.from_hf(raw, "roberta", ROBERTA_DEFAULTS)


def to_hf(model: ModelConfig) -> dict[str, Any]:
    return bert.to_hf(model, "RobertaForMaskedLM")
