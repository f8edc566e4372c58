"""The sections of a run's configuration (model, data, masking, tokenizer, training), each validated on creation.

Every problem is a `ConfigError` that names the fields it concerns as `section.field`, so the window can outline
them and speak its own words. Model families and their own fields come from `families.py`. This module
needs neither PyTorch nor `tokenizers`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

import numpy as np

from mlm_studio.core.config.families import FAMILIES, family_fields
from mlm_studio.core.errors import UserError
from mlm_studio.core.shown import MAX_WHOLE_NUMBER, shown

SCHEDULES = ("linear", "cosine", "constant")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
# where a run's metrics go besides its metrics.jsonl: the `transformers` Trainer's `report_to` names
REPORT_TO = ("tensorboard", "mlflow", "tensorboard+mlflow", "none")
STRATEGIES = ("token", "whole_word", "span")
OBJECTIVES = ("mlm", "electra")  # masked-LM; ELECTRA's replaced-token detection
UNTIL_THE_BUDGET_IS_SPENT = 10**9  # the step count of a run that a time budget ends
DEVICES = ("auto", "cpu", "cuda", "cuda:N", "mps")  # where to train or predict (N: a GPU's number)
MAX_GPU_INDEX = 127
MAX_SEED = 2**32 - 1
MAX_TIME_BUDGET = 366 * 24 * 3600.0
MIN_VOCAB = 5 + 64  # the special tokens and a small alphabet
MAX_VOCAB = 2**20


class ConfigError(UserError):
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


def join_words(words: tuple[str, ...] | list[str], last: str = "and") -> str:
    """`a`, `a and b`, `a, b and c` (or another word before the last)."""
    return f" {last} ".join(filter(None, (", ".join(words[:-1]), words[-1]))) if words else ""


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
            kind = wanted.__name__
            self._require(fits or (wanted is float and number), f"must be {kind}, not {shown(value)}", f.name)
            finite = not isinstance(value, float) or math.isfinite(value)  # an int is, however large
            self._require(finite, f"must be a finite number, not {shown(value)}", f.name)
            whole = number and isinstance(value, int)
            self._require(not whole or abs(value) < MAX_WHOLE_NUMBER, f"is too large: {shown(value)}", f.name)

    def values(self) -> dict[str, Any]:
        """Every field by name (what `config.toml` lists)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def field_defaults(cls) -> dict[str, Any]:
        """Every field this section may be given, by name, with its default."""
        return {f.name: f.default for f in fields(cls)}  # type: ignore[arg-type]

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
)


@dataclass(frozen=True, init=False)
class ModelConfig(Section):
    """An encoder with a masked-LM head of one family, in `BertConfig`'s words (each family's config.json names
    are translated on import and export). The fields below are every family's; a family's own fields (its
    registry entry's) are in `options` and read as attributes: `config.local_attention`."""

    SECTION: ClassVar[str] = "model"
    family: str = "bert"  # a registered family's model type
    vocab_size: int = 8000
    hidden_size: int = 256
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    intermediate_size: int = 1024
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    options: tuple[tuple[str, Any], ...] = ()  # (name, value) of each of the family's own fields, in its order

    def __init__(self, family: str = "bert", options: tuple[tuple[str, Any], ...] = (), **values: Any) -> None:
        shared = {n: d for n, d in ModelConfig.shared_defaults().items() if n != "family"}
        own = {**dict(options), **{name: values.pop(name) for name in list(values) if name not in shared}}
        for name, default in shared.items():
            object.__setattr__(self, name, values.get(name, default))
        object.__setattr__(self, "family", family)
        self._require(family in FAMILIES, f"must be one of {', '.join(FAMILIES)}, not {shown(family)}", "family")
        declared = FAMILIES[family].fields
        object.__setattr__(self, "options", tuple((f.name, own.pop(f.name, f.default)) for f in declared))
        self._check_strays(own)
        self.__post_init__()

    def _check_strays(self, strays: dict[str, Any]) -> None:
        """Fields of other families are accepted at their defaults only (a file lists every field it knew)."""
        known = family_fields()
        for name, value in strays.items():
            self._require(name in known, "is not a field of any model family", name)
            owners = [f.model_type for f in FAMILIES.values() if any(x.name == name for x in f.fields)]
            self._require(
                value == known[name].default,
                f"applies to {' and '.join(owners)} models only; a {self.family} model keeps "
                f"{shown(known[name].default)}",
                name,
            )

    def __getattr__(self, name: str) -> Any:
        for key, value in self.__dict__.get("options", ()):
            if key == name:
                return value
        raise AttributeError(f"a {self.__dict__.get('family')} model has no field {shown(name)}")

    def __post_init__(self) -> None:
        self._check_types()
        for name, low, high in _MODEL_SIZES:
            self._require_range(name, low, high)
        by_name = {f.name: f for f in FAMILIES[self.family].fields}
        for name, value in self.options:
            problem = by_name[name].problem(value)
            self._require(problem is None, problem or "", name)
        self._require(
            self.hidden_size % self.num_attention_heads == 0,
            f"{{0}} ({self.hidden_size}) must be a multiple of {{1}} ({self.num_attention_heads})",
            "hidden_size",
            "num_attention_heads",
        )
        self._require(self.hidden_act == "gelu", f"must be 'gelu', not {shown(self.hidden_act)}", "hidden_act")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            self._require(0.0 <= value < 1.0, f"must be in [0, 1), not {value}", name)
        self._require(self.initializer_range > 0, "must be positive", "initializer_range")
        self._require(0 < self.layer_norm_eps < 1, "must be between 0 and 1", "layer_norm_eps")
        self._require(0 <= self.pad_token_id < self.vocab_size, "must be an id of the vocabulary", "pad_token_id")
        self._require(
            self.max_tokens() >= 8,
            f"leaves {self.max_tokens()} positions after the padding offset; raise {{0}} or lower {{1}}",
            "max_position_embeddings",
            "pad_token_id",
        )

    def values(self) -> dict[str, Any]:
        """Every field by name, the family's own ones among them (what `config.toml` lists)."""
        return {**{name: getattr(self, name) for name in self.shared_defaults()}, **dict(self.options)}

    @classmethod
    def shared_defaults(cls) -> dict[str, Any]:
        """The fields every family has, by name, with their defaults."""
        return {f.name: f.default for f in fields(cls) if f.name != "options"}

    @classmethod
    def field_defaults(cls) -> dict[str, Any]:
        """Every field a model may be given, by name, with its default: the shared ones and every family's."""
        return {**cls.shared_defaults(), **{name: f.default for name, f in family_fields().items()}}

    def option(self, name: str, default: Any) -> Any:
        """The family field `name`, or `default` for a family without it."""
        return dict(self.options).get(name, default)

    def as_family(self, family: str) -> ModelConfig:
        """This model as one of `family`: the fields both have kept, the new family's others at their defaults."""
        kept = {name: value for name, value in self.values().items() if name != "family"}
        known = {f.name for f in FAMILIES[family].fields} if family in FAMILIES else set()
        return ModelConfig(
            family=family, **{n: v for n, v in kept.items() if n in self.shared_defaults() or n in known}
        )

    def uses(self, name: str) -> bool:
        """Whether this model has the field `name` (a shared field, or one of its family's)."""
        return name in self.values()

    def embedding_width(self) -> int:
        """The width of the embeddings: the hidden size, unless the family sets its own (ELECTRA)."""
        return self.option("embedding_size", 0) or self.hidden_size

    def max_tokens(self) -> int:
        """The longest sequence the model reads (RoBERTa numbers positions from the padding id + 1)."""
        return self.max_position_embeddings - FAMILIES[self.family].position_offset(self)

    def parameter_count(self) -> int:
        """Trainable parameters (the decoder shares the word embeddings and adds a bias)."""
        embedding, layers = FAMILIES[self.family].parameters(self)
        return embedding + layers + self.vocab_size

    def non_embedding_parameter_count(self) -> int:
        """Parameters of the layers and the head's transform: what the compute of a token scales with."""
        return FAMILIES[self.family].parameters(self)[1]


def generator_config(discriminator: ModelConfig, size: float) -> ModelConfig:
    """The generator of a discriminator: as deep, `size` times as wide (heads and feed-forward alike, heads of
    the discriminator's width), reading the same embeddings."""
    heads = max(1, round(discriminator.num_attention_heads * size))
    head_width = max(1, round(discriminator.hidden_size * size / heads))
    return replace(
        discriminator,
        hidden_size=heads * head_width,
        num_attention_heads=heads,
        intermediate_size=max(1, round(discriminator.intermediate_size * size)),
        embedding_size=discriminator.embedding_width(),
    )


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
            self.strategy in STRATEGIES,
            f"must be one of {', '.join(STRATEGIES)}, not {shown(self.strategy)}",
            "strategy",
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
    report_to: str = "tensorboard"  # besides metrics.jsonl: tensorboard | mlflow | tensorboard+mlflow | none
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda | cuda:N | mps
    precision: str = "auto"  # auto (bf16 where computed natively, else fp32) | fp32 | bf16 | fp16
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
            self.schedule in SCHEDULES, f"must be one of {', '.join(SCHEDULES)}, not {shown(self.schedule)}", "schedule"
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
            valid_device(self.device), f"must be {join_words(DEVICES, 'or')}, not {shown(self.device)}", "device"
        )
        self._require(self.precision in PRECISIONS, f"must be one of {', '.join(PRECISIONS)}", "precision")
        self._require(
            self.report_to in REPORT_TO,
            f"must be one of {', '.join(REPORT_TO)}, not {shown(self.report_to)}",
            "report_to",
        )
        self._require(
            self.objective in OBJECTIVES,
            f"must be one of {', '.join(OBJECTIVES)}, not {shown(self.objective)}",
            "objective",
        )
        self._require(0 < self.generator_size <= 1, f"must be in (0, 1], not {self.generator_size}", "generator_size")
        self._require(0 < self.detection_weight <= 10_000, "must be between 0 and 10,000", "detection_weight")


def valid_device(name: str) -> bool:
    """Whether `name` is one of `DEVICES`: cuda:N with N a number PyTorch can hold (it keeps a device's index in
    8 bits and silently wraps larger ones onto other GPUs)."""
    if name in ("auto", "cpu", "cuda", "mps"):
        return True
    index = re.fullmatch(r"cuda:(0|[1-9][0-9]{0,2})", name, re.ASCII)
    return index is not None and int(index.group(1)) <= MAX_GPU_INDEX


SECTIONS: dict[str, Any] = {
    kind.SECTION: kind for kind in (ModelConfig, DataConfig, MaskingConfig, TokenizerConfig, TrainConfig)
}
