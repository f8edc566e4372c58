"""The ModernBERT family under `transformers`' `ModernBertForMaskedLM` parameter names: pre-LayerNorm layers
without biases, rotary positions (one base for global layers, another for local ones), every n-th layer
attending globally and the others within a sliding window, a GeGLU feed-forward, a final norm and its head."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from mlm_studio.core.config.sections import ConfigError, ModelConfig
from mlm_studio.core.models.encoder import Dropout, MaskedLM, attention, merge_heads, padding_mask
from mlm_studio.core.shown import shown

# its classifiers' layout (core/finetune/heads.py)
SEQUENCE_HEAD = TOKEN_HEAD = QA_HEAD = "prediction_head"

# `ModernBertConfig`'s defaults, in its names, for config.json files that leave a field out.
DEFAULTS = {
    "vocab_size": 50368,
    "hidden_size": 768,
    "intermediate_size": 1152,
    "num_hidden_layers": 22,
    "num_attention_heads": 12,
    "max_position_embeddings": 8192,
    "initializer_range": 0.02,
    "norm_eps": 1e-5,
    "pad_token_id": 50283,
    "local_attention": 128,
    "global_attn_every_n_layers": 3,
    "global_rope_theta": 160_000.0,
    "local_rope_theta": 10_000.0,
    "mlp_dropout": 0.0,
    "attention_dropout": 0.0,
}
CUTOFF = 2.0  # initial weights are a normal truncated at this many standard deviations
# What MLM Studio's ModernBERT is built with: (config.json name, value)
FIXED = (
    ("hidden_activation", "gelu"),
    ("classifier_activation", "gelu"),
    ("norm_bias", False),
    ("attention_bias", False),
    ("mlp_bias", False),
    ("classifier_bias", False),
    ("decoder_bias", True),
)


def _norm(config: ModelConfig) -> nn.LayerNorm:
    return nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=False)


def is_global(config: ModelConfig, number: int) -> bool:
    return number % config.global_attn_every_n_layers == 0


class ModernBertEmbeddings(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.norm = _norm(config)
        self.drop = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.drop(self.norm(self.tok_embeddings(input_ids)))


class ModernBertAttention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.heads = config.num_attention_heads
        self.dropout_p = config.attention_probs_dropout_prob
        self.Wqkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.Wo = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def context(self, x: torch.Tensor, rotary: tuple[torch.Tensor, torch.Tensor], mask) -> torch.Tensor:
        """The heads' attention output before `Wo`, queries and keys rotated by their positions."""
        b, length, h = x.shape
        qkv = self.Wqkv(x).view(b, length, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        q, k = _rotated(qkv[:2], *rotary)  # both at once
        return merge_heads(attention(q, k, qkv[2], mask, self.dropout_p if self.training else 0.0))


def _rotated(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding, `x · cos + rotate_half(x) · sin` with rotate_half's negation folded into
    `signed_sin` (the same values), in `x`'s precision: bf16 queries and keys stay bf16."""
    half = x.shape[-1] // 2
    swapped = torch.cat((x[..., half:], x[..., :half]), dim=-1)
    return torch.addcmul(x * cos.to(x.dtype), swapped, signed_sin.to(x.dtype))


class ModernBertMLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.Wi = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.drop = Dropout(config.hidden_dropout_prob)
        self.Wo = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        value, gate = self.Wi(x).chunk(2, dim=-1)
        return self.Wo(self.drop(F.gelu(value) * gate))


class ModernBertEncoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, number: int) -> None:
        super().__init__()
        self.attn_norm = _norm(config) if number else nn.Identity()  # the embeddings' norm serves the first
        self.attn = ModernBertAttention(config)
        self.mlp_norm = _norm(config)
        self.mlp = ModernBertMLP(config)
        self.drop = Dropout(config.attention_probs_dropout_prob)

    def forward(self, x, rotary, mask, keep: torch.Tensor | None = None) -> torch.Tensor:
        """(B, L, H) → (B, L, H), or the (N, H) rows of a (B, L) bool `keep` (attention still sees all)."""
        context = self.attn.context(self.attn_norm(x), rotary, mask)
        if keep is not None:
            context, x = context[keep], x[keep]
        x = x + self.drop(self.attn.Wo(context))
        return x + self.mlp(self.mlp_norm(x))


class ModernBertModel(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = ModernBertEmbeddings(config)
        self.layers = nn.ModuleList(ModernBertEncoderLayer(config, n) for n in range(config.num_hidden_layers))
        self.final_norm = _norm(config)
        size = config.hidden_size // config.num_attention_heads
        for kind, base in (("global", config.global_rope_theta), ("local", config.local_rope_theta)):
            frequencies = 1.0 / base ** (torch.arange(0, size, 2, dtype=torch.float) / size)
            self.register_buffer(f"{kind}_inv_freq", frequencies, persistent=False)

    def _rotary(self, kind: str, length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin) of each position's angles, sin negated on the first half (`_rotated`)."""
        angles = torch.arange(length, device=device, dtype=torch.float)[:, None] * getattr(self, f"{kind}_inv_freq")
        sin = angles.sin()
        return torch.cat((angles, angles), dim=-1).cos(), torch.cat((-sin, sin), dim=-1)  # (L, hs) each

    def forward(self, input_ids, attention_mask=None, keep=None) -> torch.Tensor:
        length, device = input_ids.shape[1], input_ids.device
        padding = padding_mask(attention_mask)  # (B, 1, 1, L) or None
        offsets = torch.arange(length, device=device)
        band = (offsets[:, None] - offsets[None, :]).abs() <= self.config.local_attention // 2  # (L, L)
        local = band if padding is None else band & padding
        rotary = {kind: self._rotary(kind, length, device) for kind in ("global", "local")}
        x = self.embeddings(input_ids)
        last = len(self.layers) - 1
        for number, layer in enumerate(self.layers):
            kind = "global" if is_global(self.config, number) else "local"
            x = layer(x, rotary[kind], padding if kind == "global" else local, keep if number == last else None)
        return self.final_norm(x)


class ModernBertPredictionHead(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.norm = _norm(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(F.gelu(self.dense(x)))


class ModernBertForMaskedLM(MaskedLM):
    """ModernBERT's encoder and head; the decoder's weight is the word-embedding matrix."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.model = ModernBertModel(config)
        self.head = ModernBertPredictionHead(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self._initialise()
        self.decoder.weight = self.model.embeddings.tok_embeddings.weight

    def _initialise(self) -> None:
        """`transformers`' scheme: truncated normals, the layers' output projections scaled down by depth."""
        std = self.config.initializer_range
        out = std / math.sqrt(2.0 * self.config.num_hidden_layers)
        for name, parameter in self.named_parameters():
            if parameter.ndim < 2:
                nn.init.ones_(parameter) if "norm" in name else nn.init.zeros_(parameter)
            else:
                scale = out if name.endswith(("Wo.weight", "dense.weight")) else std
                nn.init.trunc_normal_(parameter, 0.0, scale, -CUTOFF * scale, CUTOFF * scale)

    def hidden(self, input_ids, attention_mask=None, keep=None) -> torch.Tensor:
        return self.model(input_ids, attention_mask, keep)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.head(hidden))


def from_hf(raw: dict[str, Any]) -> ModelConfig:
    """The configuration of a `transformers` ModernBERT from config.json, in either the layer-type form of
    recent `transformers` (`layer_types`, `rope_parameters`) or the earlier one (`global_rope_theta`, …)."""
    for name, value in FIXED:
        if raw.get(name, value) != value:
            raise ConfigError(f"sets {name} to {shown(raw[name])}; MLM Studio's ModernBERT has {shown(value)}")
    values = {name: raw.get(name, default) for name, default in DEFAULTS.items()}
    values.update(_layer_pattern(raw, values))
    hidden_dropout = values.pop("mlp_dropout")
    if raw.get("embedding_dropout", hidden_dropout) != hidden_dropout:
        raise ConfigError("has different embedding and feed-forward dropouts; MLM Studio's ModernBERT has one")
    return ModelConfig(
        family="modernbert",
        layer_norm_eps=values.pop("norm_eps"),
        hidden_dropout_prob=hidden_dropout,
        attention_probs_dropout_prob=values.pop("attention_dropout"),
        **values,
    )


def _layer_pattern(raw: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Global-layer spacing and rotary bases from `layer_types` and `rope_parameters`, where given (each checked
    to have the shape `transformers` writes before it is read)."""
    found: dict[str, Any] = {}
    types = raw.get("layer_types")
    if types:
        if not isinstance(types, list) or not all(isinstance(kind, str) for kind in types):
            raise ConfigError(f"has layer_types {shown(types)}; a list of layer kinds was expected")
        spacing = next((n for n, kind in enumerate(types) if n and kind == "full_attention"), len(types))
        expected = ["full_attention" if n % spacing == 0 else "sliding_attention" for n in range(len(types))]
        if types != expected or len(types) != values["num_hidden_layers"]:
            raise ConfigError("has a pattern of global and local layers other than every n-th layer global")
        found["global_attn_every_n_layers"] = spacing
    rope = raw.get("rope_parameters") or {}
    if not isinstance(rope, dict):
        raise ConfigError(f"has rope_parameters {shown(rope)}; an object by layer kind was expected")
    for kind, name in (("full_attention", "global_rope_theta"), ("sliding_attention", "local_rope_theta")):
        parameters = rope.get(kind) or {}
        if not isinstance(parameters, dict):
            raise ConfigError(f"has rope_parameters.{kind} {shown(parameters)}; an object was expected")
        if parameters.get("rope_type", "default") != "default":
            raise ConfigError(f"scales its rotary positions ({shown(parameters['rope_type'])}); MLM Studio's do not")
        if "rope_theta" in parameters:
            found[name] = parameters["rope_theta"]  # the configuration checks it is a finite number
    return found


def to_hf(model: ModelConfig) -> dict[str, Any]:
    """config.json in both forms, so that `transformers` releases before and after layer types read it."""
    n = model.num_hidden_layers
    return {
        "architectures": ["ModernBertForMaskedLM"],
        "model_type": "modernbert",
        "vocab_size": model.vocab_size,
        "hidden_size": model.hidden_size,
        "intermediate_size": model.intermediate_size,
        "num_hidden_layers": n,
        "num_attention_heads": model.num_attention_heads,
        "max_position_embeddings": model.max_position_embeddings,
        "initializer_range": model.initializer_range,
        "initializer_cutoff_factor": CUTOFF,
        "norm_eps": model.layer_norm_eps,
        "pad_token_id": model.pad_token_id,
        "local_attention": model.local_attention,
        "global_attn_every_n_layers": model.global_attn_every_n_layers,
        "global_rope_theta": model.global_rope_theta,
        "local_rope_theta": model.local_rope_theta,
        "layer_types": ["full_attention" if is_global(model, number) else "sliding_attention" for number in range(n)],
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": model.global_rope_theta},
            "sliding_attention": {"rope_type": "default", "rope_theta": model.local_rope_theta},
        },
        "embedding_dropout": model.hidden_dropout_prob,
        "mlp_dropout": model.hidden_dropout_prob,
        "attention_dropout": model.attention_probs_dropout_prob,
        **dict(FIXED),
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    }
