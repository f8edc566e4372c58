"""The DistilBERT family: BERT's post-LayerNorm layers without segment embeddings, under `transformers`'
`DistilBertForMaskedLM` parameter names (`q_lin`, `sa_layer_norm`, `vocab_projector`…), and its config.json
(`dim`, `n_layers`, `hidden_dim`…)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from mlm_studio.core.config.sections import ConfigError, ModelConfig
from mlm_studio.core.models.encoder import (
    Dropout,
    MaskedLM,
    attention,
    init_like_bert,
    merge_heads,
    padding_mask,
    split_heads,
)

SEQUENCE_HEAD = "pre_classifier"  # its heads' layouts (core/finetune/heads.py)
QA_HEAD = "dropout_span"

LAYER_NORM_EPS = 1e-12  # fixed in `transformers`' DistilBERT
# config.json name: (ours, `DistilBertConfig`'s default)
NAMES = {
    "vocab_size": ("vocab_size", 30522),
    "dim": ("hidden_size", 768),
    "n_layers": ("num_hidden_layers", 6),
    "n_heads": ("num_attention_heads", 12),
    "hidden_dim": ("intermediate_size", 3072),
    "dropout": ("hidden_dropout_prob", 0.1),
    "attention_dropout": ("attention_probs_dropout_prob", 0.1),
    "max_position_embeddings": ("max_position_embeddings", 512),
    "initializer_range": ("initializer_range", 0.02),
    "pad_token_id": ("pad_token_id", 0),
    "activation": ("hidden_act", "gelu"),
}


class Embeddings(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = self.position_embeddings.weight[: input_ids.shape[1]]
        return self.dropout(self.LayerNorm(self.word_embeddings(input_ids) + positions))


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.heads = config.num_attention_heads
        self.dropout_p = config.attention_probs_dropout_prob
        self.q_lin, self.k_lin, self.v_lin, self.out_lin = (
            nn.Linear(config.hidden_size, config.hidden_size) for _ in range(4)
        )

    def context(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """The heads' attention output before `out_lin`."""
        q, k, v = (split_heads(linear(x), self.heads) for linear in (self.q_lin, self.k_lin, self.v_lin))
        return merge_heads(attention(q, k, v, mask, self.dropout_p if self.training else 0.0))


class FFN(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.lin1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.lin2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.lin2(F.gelu(self.lin1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.attention = MultiHeadSelfAttention(config)
        self.sa_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.ffn = FFN(config)
        self.output_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, keep: torch.Tensor | None = None) -> torch.Tensor:
        """(B, L, H) → (B, L, H), or the (N, H) rows of a (B, L) bool `keep` (attention still sees all)."""
        context = self.attention.context(x, mask)
        if keep is not None:
            context, x = context[keep], x[keep]
        x = self.sa_layer_norm(self.attention.out_lin(context) + x)
        return self.output_layer_norm(self.ffn(x) + x)


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(TransformerBlock(config) for _ in range(config.num_hidden_layers))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, keep: torch.Tensor | None = None) -> torch.Tensor:
        last = len(self.layer) - 1
        for number, layer in enumerate(self.layer):
            x = layer(x, mask, keep if number == last else None)
        return x


class DistilBertModel(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.embeddings = Embeddings(config)
        self.transformer = Transformer(config)

    def forward(self, input_ids, attention_mask=None, keep=None) -> torch.Tensor:
        return self.transformer(self.embeddings(input_ids), padding_mask(attention_mask), keep)


class DistilBertForMaskedLM(MaskedLM):
    """DistilBERT's encoder and head; the projector's weight is the word-embedding matrix."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.distilbert = DistilBertModel(config)
        self.vocab_transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.vocab_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.vocab_projector = nn.Linear(config.hidden_size, config.vocab_size)
        self.apply(lambda module: init_like_bert(module, config.initializer_range))
        self.vocab_projector.weight = self.distilbert.embeddings.word_embeddings.weight

    def hidden(self, input_ids, attention_mask=None, keep=None) -> torch.Tensor:
        return self.distilbert(input_ids, attention_mask, keep)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.vocab_projector(self.vocab_layer_norm(F.gelu(self.vocab_transform(hidden))))


def from_hf(raw: dict[str, Any]) -> ModelConfig:
    if raw.get("sinusoidal_pos_embds"):
        raise ConfigError("uses fixed sinusoidal positions; MLM Studio's DistilBERT learns them")
    values = {ours: raw.get(theirs, default) for theirs, (ours, default) in NAMES.items()}
    if values["pad_token_id"] is None:
        values["pad_token_id"] = 0
    return ModelConfig(family="distilbert", layer_norm_eps=LAYER_NORM_EPS, **values)


def to_hf(model: ModelConfig) -> dict[str, Any]:
    return {
        "architectures": ["DistilBertForMaskedLM"],
        "model_type": "distilbert",
        **{theirs: getattr(model, ours) for theirs, (ours, _) in NAMES.items()},
        "sinusoidal_pos_embds": False,
        "qa_dropout": 0.1,
        "seq_classif_dropout": 0.2,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    }


def export_problems(model: ModelConfig) -> list[str]:
    if model.layer_norm_eps != LAYER_NORM_EPS:
        return [f"its LayerNorm ε is {model.layer_norm_eps:g}; DistilBERT's is fixed at {LAYER_NORM_EPS:g}"]
    return []
