"""The sections of a run's configuration (model, data, masking, tokenizer, training), each validated on creation.

Every problem is a `ConfigError` that names the fields it concerns as `section.field`, so the window can outline
them and speak its own words. This module needs neither PyTorch nor `tokenizers`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

import numpy as np

POSITION_TYPES = ("absolute", "sinusoidal")
FAMILY_NAMES = ("bert", "roberta", "distilbert", "modernbert", "electra")  # as `transformers`' model_type says them
# Fields only some families have; every other model field means the same in each.
FAMILY_FIELDS = {
    "type_vocab_size": ("bert", "roberta", "electra"),
    "embedding_size": ("electra",),
    "position_embedding_type": ("bert",),
    "pre_layer_norm": ("bert",),
    "local_attention": ("modernbert",),
    "global_attn_every_n_layers": ("modernbert",),
    "global_rope_theta": ("modernbert",),
    "local_rope_theta": ("modernbert",),
}
SCHEDULES = ("linear", "cosine", "constant")
PRECISIONS = ("fp32", "bf16", "fp16")
STRATEGIES = ("token", "whole_word", "span")
OBJECTIVES = ("mlm", "electra")  # masked-LM; ELECTRA's replaced-token detection
UNTIL_THE_BUDGET_IS_SPENT = 10**9  # the step count of a run that a time budget ends
MAX_SEED = 2**32 - 1
MAX_TIME_BUDGET = 366 * 24 * 3600.0
MIN_VOCAB = 5 + 64  # the special tokens and a small alphabet
MAX_VOCAB = 2**20


class ConfigError(ValueError):
    """A configuration is invalid: `problem` says what is wrong with `fields` (each `section.field`); it either
    follows their names or places them itself as {0}, {1}…"""

    def __init__(self, problem: str, fields: tuple[str, ...] = (), source: str = "") -> None:
        self.problem, self.fields, self.source = problem, fields, source
        message = self.naming(fields)
        super().__init__(f"{source}: {message}" if source else message)

    def naming(self, names: tuple[str, ...] | list[str]) -> str:
        """The problem said with these names for the fields (the window uses its labels)."""
        if "{0}" not in self.problem:
            return f"{join_words(names)} {self.problem}" if names else self.problem
        text = self.problem
        for index, name in enumerate(names):
            text = text.replace(f"{{{index}}}", name)
        return text

    def within(self, source: str) -> ConfigError:
        """The same error, said of a file or an option."""
        return ConfigError(self.problem, self.fields, source)


def join_words(words: tuple[str, ...] | list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join(filter(None, (", ".join(words[:-1]), words[-1]))) if words else ""


class Section:
    """A validated part of the configuration; `SECTION` is its name in `config.toml`."""

    SECTION: ClassVar[str] = ""

    def _require(self, condition: bool, problem: str, *names: str) -> None:
        if not condition:
            raise ConfigError(problem, tuple(f"{self.SECTION}.{name}" for name in names))

    def _check_types(self) -> None:
        """Every field holds a value of its default's type (an int where a float is wanted is fine), and every
        number is finite: a value that passes validation can be used."""
        for f in fields(self):  # type: ignore[arg-type]
            value, wanted = getattr(self, f.name), type(f.default)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            fits = isinstance(value, wanted) and (wanted is bool or not isinstance(value, bool))
            self._require(fits or (wanted is float and number), f"must be {wanted.__name__}, not {value!r}", f.name)
            self._require(not number or math.isfinite(value), f"must be a finite number, not {value!r}", f.name)

    def _require_range(self, name: str, low: float, high: float) -> None:
        value = getattr(self, name)
        self._require(low <= value <= high, f"must be between {low:,} and {high:,}, not {value:,}", name)


# Sizes a model may have: beyond these no machine could allocate it (BERT-large is 1,024 wide, 24 layers).
_MODEL_SIZES = (
    ("vocab_size", 8, 2**20),
    ("hidden_size", 8, 16_384),
    ("num_hidden_layers", 1, 256),
    ("num_attention_heads", 1, 256),
    ("intermediate_size", 1, 65_536),
    ("max_position_embeddings", 8, 131_072),
    ("type_vocab_size", 1, 1_024),
)


@dataclass(frozen=True)
class ModelConfig(Section):
    """An encoder with a masked-LM head of one family, in `BertConfig`'s words (each family's config.json names
    are translated on import and export); fields of other families are left at their defaults."""

    SECTION: ClassVar[str] = "model"
    family: str = "bert"  # one of FAMILY_NAMES
    vocab_size: int = 8000
    hidden_size: int = 256
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    intermediate_size: int = 1024
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    position_embedding_type: str = "absolute"  # learned ("absolute", as BERT) or fixed "sinusoidal"
    pre_layer_norm: bool = False  # LayerNorm before each sub-layer instead of after (not exportable to BERT)
    local_attention: int = 128  # ModernBERT: tokens a local layer sees (half before, half after)
    global_attn_every_n_layers: int = 3  # ModernBERT: layers 0, n, 2n… attend globally, the others locally
    global_rope_theta: float = 160_000.0  # ModernBERT: rotary base of the global layers
    local_rope_theta: float = 10_000.0  # ModernBERT: rotary base of the local layers
    embedding_size: int = 0  # ELECTRA: width of the embeddings, projected to the hidden size (0: the hidden size)

    def __post_init__(self) -> None:
        self._check_types()
        self._require(
            self.family in FAMILY_NAMES, f"must be one of {', '.join(FAMILY_NAMES)}, not {self.family!r}", "family"
        )
        for name, families in FAMILY_FIELDS.items():
            default = getattr(ModelConfig, name)
            self._require(
                self.family in families or getattr(self, name) == default,
                f"applies to {' and '.join(families)} models only; a {self.family} model keeps {default!r}",
                name,
            )
        for name, low, high in _MODEL_SIZES:
            self._require_range(name, low, high)
        self._require(
            self.hidden_size % self.num_attention_heads == 0,
            f"{{0}} ({self.hidden_size}) must be a multiple of {{1}} ({self.num_attention_heads})",
            "hidden_size",
            "num_attention_heads",
        )
        self._require(self.hidden_act == "gelu", f"must be 'gelu', not {self.hidden_act!r}", "hidden_act")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            self._require(0.0 <= value < 1.0, f"must be in [0, 1), not {value}", name)
        self._require(self.initializer_range > 0, "must be positive", "initializer_range")
        self._require(0 < self.layer_norm_eps < 1, "must be between 0 and 1", "layer_norm_eps")
        self._require(0 <= self.pad_token_id < self.vocab_size, "must be an id of the vocabulary", "pad_token_id")
        self._require(
            self.position_embedding_type in POSITION_TYPES,
            f"must be one of {', '.join(POSITION_TYPES)}, not {self.position_embedding_type!r}",
            "position_embedding_type",
        )
        self._require(
            self.embedding_size == 0 or 8 <= self.embedding_size <= 16_384,
            f"must be 0 (the hidden size) or between 8 and 16,384, not {self.embedding_size:,}",
            "embedding_size",
        )
        self._require_range("local_attention", 2, 131_072)
        self._require_range("global_attn_every_n_layers", 1, 256)
        for name in ("global_rope_theta", "local_rope_theta"):
            self._require(getattr(self, name) > 1, f"must be above 1, not {getattr(self, name)}", name)
        self._require(
            self.max_tokens() >= 8,
            f"leaves {self.max_tokens()} positions after the padding offset; raise {{0}} or lower {{1}}",
            "max_position_embeddings",
            "pad_token_id",
        )

    def as_family(self, family: str) -> ModelConfig:
        """This model as one of `family`: the sizes kept, fields the family lacks back at their defaults."""
        defaults = {name: getattr(ModelConfig, name) for name in FAMILY_FIELDS if not family_has(family, name)}
        return replace(self, family=family, **defaults)

    def uses(self, name: str) -> bool:
        """Whether this model's family has the field `name`."""
        return family_has(self.family, name)

    def embedding_width(self) -> int:
        """The width of the embeddings: the hidden size, unless an ELECTRA model sets its own."""
        return self.embedding_size or self.hidden_size

    def max_tokens(self) -> int:
        """The longest sequence the model reads: RoBERTa numbers positions from the padding id + 1."""
        offset = self.pad_token_id + 1 if self.family == "roberta" else 0
        return self.max_position_embeddings - offset

    def parameter_count(self) -> int:
        """Trainable parameters (the decoder shares the word embeddings)."""
        return self._embedding_parameters() + self.non_embedding_parameter_count() + self.vocab_size

    def non_embedding_parameter_count(self) -> int:
        """Parameters of the layers and the head's transform: what the compute of a token scales with."""
        h, f, n = self.hidden_size, self.intermediate_size, self.num_hidden_layers
        if self.family == "modernbert":  # no biases; gated feed-forward; no norm before the first attention
            return n * (4 * h * h + 3 * h * f + 2 * h) - h + h + (h * h + h)  # layers, final norm, head
        layer = 4 * (h * h + h) + 2 * h + (h * f + f) + (f * h + h) + 2 * h
        final = 2 * h if self.pre_layer_norm else 0
        e = self.embedding_width()
        return n * layer + final + (h * e + e + 2 * e)  # the head: transform (to the embeddings' width), LayerNorm

    def _embedding_parameters(self) -> int:
        h = self.hidden_size
        if self.family == "modernbert":
            return self.vocab_size * h + h  # the words and a LayerNorm without bias
        e = self.embedding_width()
        learned = self.position_embedding_type == "absolute"
        positions = self.max_position_embeddings * e if learned else 0
        types = self.type_vocab_size * e if self.uses("type_vocab_size") else 0
        projection = e * h + h if e != h else 0
        return self.vocab_size * e + positions + types + 2 * e + projection


@dataclass(frozen=True)
class DataConfig(Section):
    """How the tokenized corpus becomes training blocks."""

    SECTION: ClassVar[str] = "data"
    max_seq_len: int = 128  # tokens per block, [CLS] and [SEP] included
    packing: bool = True  # pack documents into full blocks; else one document per (padded) block
    validation_fraction: float = 0.05  # share of documents held out for evaluation
    split_seed: int = 0  # decides which documents are held out

    def __post_init__(self) -> None:
        self._check_types()
        self._require_range("max_seq_len", 8, 8192)
        self._require_range("validation_fraction", 0.0, 0.5)
        self._require_range("split_seed", 0, MAX_SEED)


@dataclass(frozen=True)
class MaskingConfig(Section):
    """How tokens are chosen for prediction and what happens to them."""

    SECTION: ClassVar[str] = "masking"
    rate: float = 0.15  # probability that a token is selected for prediction
    mask_fraction: float = 0.8  # of the selected: replaced by [MASK]
    random_fraction: float = 0.1  # of the selected: replaced by a random token
    keep_fraction: float = 0.1  # of the selected: left unchanged
    strategy: str = "token"  # "token" | "whole_word" | "span"
    span_p: float = 0.2  # span strategy: geometric parameter of the span length in words
    max_span: int = 10  # span strategy: longest span in words

    def __post_init__(self) -> None:
        self._check_types()
        self._require(0.0 < self.rate < 1.0, f"must be between 0 and 1 (exclusive), not {self.rate}", "rate")
        shares = ("mask_fraction", "random_fraction", "keep_fraction")
        for name in shares:
            self._require_range(name, 0.0, 1.0)
        total = self.mask_fraction + self.random_fraction + self.keep_fraction
        self._require(abs(total - 1.0) <= 1e-6, f"must sum to 1, not {total:.4g}", *shares)
        self._require(
            self.strategy in STRATEGIES, f"must be one of {', '.join(STRATEGIES)}, not {self.strategy!r}", "strategy"
        )
        self._require(0.0 < self.span_p <= 1.0, f"must be in (0, 1], not {self.span_p}", "span_p")
        self._require_range("max_span", 1, 64)

    def span_length_probabilities(self) -> np.ndarray:
        """P(length = 1..max_span) of the truncated, renormalised geometric law of span lengths."""
        lengths = np.arange(1, self.max_span + 1)
        weights = self.span_p * (1.0 - self.span_p) ** (lengths - 1)
        return weights / weights.sum()


@dataclass(frozen=True)
class TokenizerConfig(Section):
    """How a WordPiece vocabulary is trained."""

    SECTION: ClassVar[str] = "tokenizer"
    vocab_size: int = 8000  # pieces including the special tokens and the alphabet
    min_frequency: int = 2  # a pair must occur this often to be merged
    lowercase: bool = True  # lowercase and strip accents (BERT "uncased")

    def __post_init__(self) -> None:
        self._check_types()
        self._require_range("vocab_size", MIN_VOCAB, MAX_VOCAB)
        self._require(self.min_frequency >= 1, f"must be at least 1, not {self.min_frequency}", "min_frequency")


@dataclass(frozen=True)
class TrainConfig(Section):
    """Optimisation, schedule, evaluation, checkpoints and hardware."""

    SECTION: ClassVar[str] = "training"
    batch_size: int = 32  # blocks per micro-batch
    grad_accumulation: int = 1  # micro-batches per optimizer step
    learning_rate: float = 5e-4
    warmup_steps: int = 100
    schedule: str = "linear"  # decay after warm-up: linear | cosine | constant
    weight_decay: float = 0.01  # not applied to biases and LayerNorm weights
    adam_beta1: float = 0.9
    adam_beta2: float = 0.98
    adam_epsilon: float = 1e-6
    max_grad_norm: float = 1.0  # 0 turns clipping off
    max_steps: int = 2000  # optimizer steps; `epochs` overrides it when set
    epochs: float = 0.0  # passes over the training blocks; 0 means use max_steps
    time_budget: float = 0.0  # seconds; when set, training ends when they are spent, the schedule following the clock
    eval_interval: int = 200  # steps between evaluations
    eval_blocks: int = 256  # validation blocks per evaluation (0: all of them)
    checkpoint_interval: int = 200  # steps between checkpoints (the playground reads the latest)
    keep_checkpoints: int = 2  # the most recent kept, besides the best by validation loss
    log_interval: int = 10  # steps between step records
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda | cuda:N | mps
    precision: str = "fp32"  # fp32 | bf16 | fp16
    compile: bool = False  # torch.compile the model
    max_nonfinite_steps: int = 5  # consecutive non-finite losses before training stops
    objective: str = "mlm"  # "mlm" | "electra" (replaced-token detection, an ELECTRA model's)
    generator_size: float = 0.25  # ELECTRA: the generator's width as a fraction of the discriminator's
    detection_weight: float = 50.0  # ELECTRA: weight of the discriminator's loss against the generator's

    def __post_init__(self) -> None:
        self._check_types()
        for name in ("batch_size", "grad_accumulation"):
            self._require_range(name, 1, 65_536)
        self._require_range("max_steps", 1, UNTIL_THE_BUDGET_IS_SPENT)
        for name in ("eval_interval", "checkpoint_interval", "log_interval", "keep_checkpoints", "max_nonfinite_steps"):
            self._require(getattr(self, name) >= 1, f"must be at least 1, not {getattr(self, name)}", name)
        self._require(0 < self.learning_rate < 1, f"must be between 0 and 1, not {self.learning_rate}", "learning_rate")
        self._require(self.warmup_steps >= 0, "must not be negative", "warmup_steps")
        self._require(
            self.schedule in SCHEDULES, f"must be one of {', '.join(SCHEDULES)}, not {self.schedule!r}", "schedule"
        )
        self._require(0 <= self.weight_decay < 1, f"must be in [0, 1), not {self.weight_decay}", "weight_decay")
        for name in ("adam_beta1", "adam_beta2"):
            self._require(0 <= getattr(self, name) < 1, f"must be in [0, 1), not {getattr(self, name)}", name)
        self._require(self.adam_epsilon > 0, "must be positive", "adam_epsilon")
        self._require(self.max_grad_norm >= 0, "must not be negative", "max_grad_norm")
        self._require_range("epochs", 0, 1_000_000)
        self._require(
            0 <= self.time_budget <= MAX_TIME_BUDGET,
            f"must be between 0 and 366 days, not {self.time_budget}",
            "time_budget",
        )
        self._require(self.eval_blocks >= 0, "must not be negative", "eval_blocks")
        self._require_range("seed", 0, MAX_SEED)
        self._require(
            _valid_device(self.device), f"must be auto, cpu, cuda, cuda:N or mps, not {self.device!r}", "device"
        )
        self._require(self.precision in PRECISIONS, f"must be one of {', '.join(PRECISIONS)}", "precision")
        self._require(
            self.objective in OBJECTIVES, f"must be one of {', '.join(OBJECTIVES)}, not {self.objective!r}", "objective"
        )
        self._require(0 < self.generator_size <= 1, f"must be in (0, 1], not {self.generator_size}", "generator_size")
        self._require(0 < self.detection_weight <= 10_000, "must be between 0 and 10,000", "detection_weight")


def family_has(family: str, name: str) -> bool:
    """Whether models of `family` have the model field `name`."""
    return family in FAMILY_FIELDS.get(name, FAMILY_NAMES)


def _valid_device(name: str) -> bool:
    if name in ("auto", "cpu", "cuda", "mps"):
        return True
    return name.startswith("cuda:") and name[5:].isdigit()


SECTIONS: dict[str, Any] = {
    kind.SECTION: kind for kind in (ModelConfig, DataConfig, MaskingConfig, TokenizerConfig, TrainConfig)
}
