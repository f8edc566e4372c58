"""The BERT family: the masked-LM with `transformers`' `BertForMaskedLM` parameter names, and how its
configuration reads and writes config.json. Its layers are RoBERTa's too (`roberta.py`)."""

from __future__ import annotations

import math
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


class BertEmbeddings(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        width = config.embedding_width()
        self.word_embeddings = nn.Embedding(config.vocab_size, width, padding_idx=config.pad_token_id)
        if config.option("position_embedding_type", "absolute") == "absolute":
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, width)
        else:
            self.register_buffer("sinusoid", _sinusoids(config.max_position_embeddings, width), False)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, width)
        self.LayerNorm = nn.LayerNorm(width, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def positions(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(L, H) position embeddings, the same for every row."""
        length = input_ids.shape[1]
        if hasattr(self, "position_embeddings"):
            return self.position_embeddings.weight[:length]
        return self.sinusoid[:length]

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Without segment ids, every token is of segment A."""
        table = self.token_type_embeddings
        types = table.weight[0] if token_type_ids is None else table(token_type_ids)
        x = self.word_embeddings(input_ids) + types + self.positions(input_ids)  # summed in transformers' order
        return self.dropout(self.LayerNorm(x))


def _sinusoids(positions: int, size: int) -> torch.Tensor:
    position = torch.arange(positions, dtype=torch.float).unsqueeze(1)
    frequency = torch.exp(torch.arange(0, size, 2, dtype=torch.float) * (-math.log(10000.0) / size))
    table = torch.zeros(positions, size)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)[:, : size // 2]
    return table


class BertSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.heads = config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        q, k, v = (split_heads(linear(x), self.heads) for linear in (self.query, self.key, self.value))
        return merge_heads(attention(q, k, v, mask, self.dropout_p if self.training else 0.0))


class BertSelfOutput(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)


class BertAttention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)


class BertIntermediate(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)


class BertOutput(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)


class BertLayer(nn.Module):
    """Attention then feed-forward, each in a residual branch with LayerNorm after (BERT) or before."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.pre_layer_norm = config.option("pre_layer_norm", False)
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, keep: torch.Tensor | None = None) -> torch.Tensor:
        """(B, L, H) → (B, L, H); with a (B, L) bool `keep`, only those positions' outputs, (N, H): every
        position still attends to all the others, but the rest of the layer runs on the kept rows alone."""
        att, ff = self.attention.output, self.output
        context = self.attention.self(att.LayerNorm(x) if self.pre_layer_norm else x, mask)
        if keep is not None:
            context, x = context[keep], x[keep]
        if self.pre_layer_norm:
            x = x + att.dropout(att.dense(context))
            return x + ff.dropout(ff.dense(F.gelu(self.intermediate.dense(ff.LayerNorm(x)))))
        x = att.LayerNorm(x + att.dropout(att.dense(context)))
        return ff.LayerNorm(x + ff.dropout(ff.dense(F.gelu(self.intermediate.dense(x)))))


class BertEncoder(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))
        if config.option("pre_layer_norm", False):
            self.final_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, keep: torch.Tensor | None = None) -> torch.Tensor:
        """With `keep`, the last layer computes only the kept positions (the only ones a sparse head reads)."""
        last = len(self.layer) - 1
        for number, layer in enumerate(self.layer):
            x = layer(x, mask, keep if number == last else None)
        return self.final_layer_norm(x) if hasattr(self, "final_layer_norm") else x


class BertModel(nn.Module):
    """Embeddings then layers; embeddings narrower than the layers (ELECTRA's) are projected to their width."""

    def __init__(self, config: ModelConfig, embeddings: type[BertEmbeddings] = BertEmbeddings) -> None:
        super().__init__()
        self.embeddings = embeddings(config)
        if config.embedding_width() != config.hidden_size:
            self.embeddings_project = nn.Linear(config.embedding_width(), config.hidden_size)
        self.encoder = BertEncoder(config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        keep: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(B, L) ids, optional (B, L) bool mask (False on padding) and segment ids → (B, L, H) hidden states, or
        (N, H) at the positions of a (B, L) bool `keep`."""
        x = self.embeddings(input_ids, token_type_ids)
        if hasattr(self, "embeddings_project"):
            x = self.embeddings_project(x)
        return self.encoder(x, padding_mask(attention_mask), keep)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(F.gelu(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.bias = self.decoder.bias  # one parameter under both Hugging Face names

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.transform(x))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.predictions = BertLMPredictionHead(config)


class BertForMaskedLM(MaskedLM):
    """The encoder and the MLM head; the decoder's weight is the word-embedding matrix."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertOnlyMLMHead(config)
        self.apply(lambda module: init_like_bert(module, config.initializer_range))
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def hidden(self, input_ids, attention_mask=None, keep=None) -> torch.Tensor:
        return self.bert(input_ids, attention_mask, keep)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.cls.predictions(hidden)


# --- the family's Hugging Face side ----------------------------------------------------------------------
SEQUENCE_HEAD = "pooler"  # its classifier's layout (core/finetune/heads.py)
# `BertConfig`'s defaults, for config.json files that leave a field out.
BERT_DEFAULTS = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
}


def from_hf(raw: dict[str, Any], family: str = "bert", defaults: dict[str, Any] = BERT_DEFAULTS) -> ModelConfig:
    """The configuration of a `transformers` BERT (or RoBERTa, with its defaults) from config.json values."""
    position = raw.get("position_embedding_type", "absolute")
    if position != "absolute":
        raise ConfigError(f"uses {position} position embeddings; MLM Studio's {family} learns absolute ones")
    values = {name: raw.get(name, default) for name, default in defaults.items()}
    if values["pad_token_id"] is None:
        values["pad_token_id"] = defaults["pad_token_id"]
    return ModelConfig(family=family, **values)


def to_hf(model: ModelConfig, architecture: str = "BertForMaskedLM") -> dict[str, Any]:
    """config.json for `BertForMaskedLM` (or `RobertaForMaskedLM`), every field of its configuration spelled out."""
    values = {name: value for name, value in model.values().items() if name in BERT_DEFAULTS}
    return {
        "architectures": [architecture],
        "model_type": model.family,
        **values,
        "position_embedding_type": "absolute",
        "tie_word_embeddings": True,
        "classifier_dropout": None,
        "use_cache": True,
        "torch_dtype": "float32",
    }


def export_problems(model: ModelConfig) -> list[str]:
    """Why `transformers`' BERT would compute something else than this model (none: it exports)."""
    reasons = []
    if model.pre_layer_norm:
        reasons.append("it puts LayerNorm before each sub-layer (pre-LayerNorm), BERT after")
    if model.position_embedding_type != "absolute":
        reasons.append("it uses fixed sinusoidal positions, BERT learned ones")
    return reasons
