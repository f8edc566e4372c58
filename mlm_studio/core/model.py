"""The BERT family: the masked-LM with Hugging Face `BertForMaskedLM` parameter names, and how its
configuration reads and writes `transformers`' config.json.

Attention runs through `scaled_dot_product_attention`. In training the vocabulary projection is computed
only at the positions that carry a label (sparse prediction): with 15% masking that skips 85% of the
largest matrix multiply of a small model, and gives the same loss as the dense head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from mlm_studio.core.config import ConfigError, ModelConfig
from mlm_studio.core.masking import IGNORE_INDEX


@dataclass
class MLMOutput:
    loss: torch.Tensor | None  # mean cross-entropy over labelled positions
    logits: torch.Tensor  # (N, V) at labelled positions when labels are given, else (B, L, V)
    labels: torch.Tensor | None  # (N,) the labels those logits predict


class Dropout(nn.Dropout):
    """Dropout that, on the CPU, draws its mask 16 bits at a time from 64-bit random integers: about 3× faster
    than PyTorch's Bernoulli sampling there, which takes a fifth of a training step. The drop probability is
    rounded to a multiple of 1/65536 and the kept values scaled to keep the expectation exact."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    threshold = round(p * 65536)
    bits = torch.empty((x.numel() + 3) // 4, dtype=torch.int64, device=x.device).random_(-(2**63), 2**63 - 1)
    keep = bits.view(torch.int16)[: x.numel()].view(x.shape) >= threshold - 32768
    return x * keep.to(x.dtype).mul_(65536 / (65536 - threshold))


class BertEmbeddings(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        if config.position_embedding_type == "absolute":
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        else:
            self.register_buffer("sinusoid", _sinusoids(config.max_position_embeddings, config.hidden_size), False)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        length = input_ids.shape[1]
        if hasattr(self, "position_embeddings"):
            positions = self.position_embeddings.weight[:length]  # (L, H)
        else:
            positions = self.sinusoid[:length]
        types = (
            self.token_type_embeddings.weight[0]
            if token_type_ids is None
            else self.token_type_embeddings(token_type_ids)
        )
        x = self.word_embeddings(input_ids) + types + positions  # (B, L, H), summed in transformers' order
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
        b, length, h = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, length, self.heads, h // self.heads).transpose(1, 2)  # (B, nh, L, hs)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        p = self.dropout_p if self.training else 0.0
        if p > 0 and x.device.type == "cpu":  # what SDPA does there, with the faster dropout
            scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)  # (B, nh, L, L); scaling q is cheaper
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            y = dropout(scores.softmax(-1), p, True) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)  # (B, nh, L, hs)
        return y.transpose(1, 2).reshape(b, length, h)


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
        self.pre_layer_norm = config.pre_layer_norm
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
        if config.pre_layer_norm:
            self.final_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, keep: torch.Tensor | None = None) -> torch.Tensor:
        """With `keep`, the last layer computes only the kept positions (the only ones a sparse head reads)."""
        last = len(self.layer) - 1
        for number, layer in enumerate(self.layer):
            x = layer(x, mask, keep if number == last else None)
        return self.final_layer_norm(x) if hasattr(self, "final_layer_norm") else x


class BertModel(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, keep: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B, L) ids and optional (B, L) bool mask (False on padding) → (B, L, H) hidden states, or (N, H) at
        the positions of a (B, L) bool `keep`."""
        mask = None if attention_mask is None else attention_mask[:, None, None, :].bool()  # (B, 1, 1, L)
        return self.encoder(self.embeddings(input_ids), mask, keep)


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


class BertForMaskedLM(nn.Module):
    """The encoder and the MLM head; the decoder's weight is the word-embedding matrix."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.cls = BertOnlyMLMHead(config)
        self.apply(self._init_weights)
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, std)
            if module.padding_idx is not None:
                nn.init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        dense: bool = False,
    ) -> MLMOutput:
        """With `labels`, logits and loss only where a label is set (unless `dense`); without, every position.
        Sparse, the last layer and the head run only at the labelled positions: the same loss, less work."""
        head = self.cls.predictions
        if labels is None:
            return MLMOutput(None, head(self.bert(input_ids, attention_mask)), None)
        if dense:
            logits = head(self.bert(input_ids, attention_mask))  # (B, L, V)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX)
            return MLMOutput(loss, logits, labels)
        selected = labels != IGNORE_INDEX  # (B, L)
        targets = labels[selected]  # (N,)
        logits = head(self.bert(input_ids, attention_mask, keep=selected))  # (N, V)
        loss = F.cross_entropy(logits.float(), targets) if len(targets) else logits.sum() * 0.0
        return MLMOutput(loss, logits, targets)

    def predict_at(self, input_ids: torch.Tensor, positions: torch.Tensor, attention_mask=None) -> torch.Tensor:
        """Logits (N, V) at the (N, 2) [row, column] `positions` only (the last layer runs there alone)."""
        length = input_ids.shape[1]
        flat, order = (positions[:, 0] * length + positions[:, 1]).unique(return_inverse=True)
        keep = torch.zeros(input_ids.numel(), dtype=torch.bool, device=input_ids.device)
        keep[flat] = True
        hidden = self.bert(input_ids, attention_mask, keep=keep.view(input_ids.shape))  # rows in `flat` order
        return self.cls.predictions(hidden[order])


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Optimizer parameter groups: weight decay on matrices, none on biases, LayerNorm and embeddings' norms."""
    decay, no_decay, seen = [], [], set()
    for name, parameter in model.named_parameters():
        if id(parameter) in seen or not parameter.requires_grad:
            continue
        seen.add(id(parameter))
        (no_decay if parameter.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


# --- the family's Hugging Face side ----------------------------------------------------------------------
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


def bert_from_hf(raw: dict[str, Any]) -> ModelConfig:
    """The configuration of a `transformers` BERT from its config.json values."""
    position = raw.get("position_embedding_type", "absolute")
    if position != "absolute":
        raise ConfigError(f"uses {position} position embeddings; MLM Studio's BERT learns absolute ones")
    values = {name: raw.get(name, default) for name, default in BERT_DEFAULTS.items()}
    if values["pad_token_id"] is None:
        values["pad_token_id"] = 0
    return ModelConfig(**values)


def bert_to_hf(model: ModelConfig) -> dict[str, Any]:
    """config.json for `BertForMaskedLM`, every `BertConfig` field spelled out."""
    values = {f.name: getattr(model, f.name) for f in fields(model) if f.name in BERT_DEFAULTS}
    return {
        "architectures": ["BertForMaskedLM"],
        "model_type": "bert",
        **values,
        "position_embedding_type": "absolute",
        "tie_word_embeddings": True,
        "classifier_dropout": None,
        "use_cache": True,
        "torch_dtype": "float32",
    }


def bert_export_problems(model: ModelConfig) -> list[str]:
    """Why `transformers`' BERT would compute something else than this model (none: it exports)."""
    reasons = []
    if model.pre_layer_norm:
        reasons.append("it puts LayerNorm before each sub-layer (pre-LayerNorm), BERT after")
    if model.position_embedding_type != "absolute":
        reasons.append("it uses fixed sinusoidal positions, BERT learned ones")
    return reasons
