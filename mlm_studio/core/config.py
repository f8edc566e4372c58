"""Model and training configuration: validated dataclasses, presets, and TOML files.

`ModelConfig` uses the field names of Hugging Face's `BertConfig`, so a model can be exported and imported
by renaming nothing. `RunConfig` gathers everything a run needs (model, data, masking, tokenizer, training)
and is what a run folder's `config.toml` holds.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from mlm_studio.core.dataset import DataConfig
from mlm_studio.core.files import atomic_write_text
from mlm_studio.core.masking import MaskingConfig
from mlm_studio.core.tokenizer import TokenizerConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

POSITION_TYPES = ("absolute", "sinusoidal")
UNTIL_THE_BUDGET_IS_SPENT = 10**9  # the step count of a run that a time budget ends
SCHEDULES = ("linear", "cosine", "constant")
PRECISIONS = ("fp32", "bf16", "fp16")


class ConfigError(ValueError):
    """A configuration is invalid; the message names the field and what is allowed."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _check_types(config: Any) -> None:
    """Every field holds a value of its default's type (an int where a float is wanted is fine), and every
    number is finite: a value that passes validation can be used."""
    for f in fields(config):
        value, wanted = getattr(config, f.name), type(f.default)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        fits = isinstance(value, wanted) and (wanted is bool or not isinstance(value, bool))
        _check(fits or (wanted is float and number), f"{f.name} must be {wanted.__name__}, not {value!r}")
        _check(not number or math.isfinite(value), f"{f.name} must be a finite number, not {value!r}")


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
MAX_SEED = 2**32 - 1
MAX_TIME_BUDGET = 366 * 24 * 3600.0


@dataclass(frozen=True)
class ModelConfig:
    """A BERT encoder with a masked-LM head, in `BertConfig`'s words."""

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

    def __post_init__(self) -> None:
        _check_types(self)
        for name, low, high in _MODEL_SIZES:
            value = getattr(self, name)
            _check(low <= value <= high, f"{name} must be between {low:,} and {high:,}, not {value:,}")
        _check(
            self.hidden_size % self.num_attention_heads == 0,
            f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads ({self.num_attention_heads})",
        )
        _check(self.hidden_act == "gelu", f"hidden_act must be 'gelu', not {self.hidden_act!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            _check(0.0 <= value < 1.0, f"{name} must be in [0, 1), not {value}")
        _check(self.initializer_range > 0, "initializer_range must be positive")
        _check(0 < self.layer_norm_eps < 1, "layer_norm_eps must be between 0 and 1")
        _check(0 <= self.pad_token_id < self.vocab_size, "pad_token_id must be an id of the vocabulary")
        _check(
            self.position_embedding_type in POSITION_TYPES,
            f"position_embedding_type must be one of {', '.join(POSITION_TYPES)}, not {self.position_embedding_type!r}",
        )

    def parameter_count(self) -> int:
        """Trainable parameters (the decoder shares the word embeddings)."""
        h, v, f, n = self.hidden_size, self.vocab_size, self.intermediate_size, self.num_hidden_layers
        positions = self.max_position_embeddings * h if self.position_embedding_type == "absolute" else 0
        embeddings = v * h + positions + self.type_vocab_size * h + 2 * h
        layer = 4 * (h * h + h) + 2 * h + (h * f + f) + (f * h + h) + 2 * h
        head = h * h + h + 2 * h + v  # transform, its LayerNorm, decoder bias
        final = 2 * h if self.pre_layer_norm else 0
        return embeddings + n * layer + head + final

    def non_embedding_parameter_count(self) -> int:
        h = self.hidden_size
        positions = self.max_position_embeddings * h if self.position_embedding_type == "absolute" else 0
        return self.parameter_count() - self.vocab_size * h - positions - self.type_vocab_size * h - self.vocab_size


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation, schedule, evaluation, checkpoints and hardware."""

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

    def __post_init__(self) -> None:
        _check_types(self)
        for name in ("batch_size", "grad_accumulation", "max_steps", "eval_interval", "checkpoint_interval"):
            _check(getattr(self, name) >= 1, f"{name.replace('_', ' ')} must be at least 1, not {getattr(self, name)}")
        for name in ("batch_size", "grad_accumulation"):
            _check(getattr(self, name) <= 65_536, f"{name.replace('_', ' ')} must be at most 65,536")
        _check(self.max_steps <= UNTIL_THE_BUDGET_IS_SPENT, f"max steps must be at most {UNTIL_THE_BUDGET_IS_SPENT:,}")
        for name in ("log_interval", "keep_checkpoints", "max_nonfinite_steps"):
            _check(getattr(self, name) >= 1, f"{name.replace('_', ' ')} must be at least 1")
        _check(0 < self.learning_rate < 1, f"learning rate must be between 0 and 1, not {self.learning_rate}")
        _check(self.warmup_steps >= 0, "warm-up steps must not be negative")
        _check(self.schedule in SCHEDULES, f"schedule must be one of {', '.join(SCHEDULES)}, not {self.schedule!r}")
        _check(0 <= self.weight_decay < 1, f"weight decay must be in [0, 1), not {self.weight_decay}")
        _check(0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1, "Adam betas must be in [0, 1)")
        _check(self.adam_epsilon > 0, "Adam epsilon must be positive")
        _check(self.max_grad_norm >= 0, "gradient clipping norm must not be negative")
        _check(0 <= self.epochs <= 1e6, f"epochs must be between 0 and 1,000,000, not {self.epochs}")
        _check(
            0 <= self.time_budget <= MAX_TIME_BUDGET,
            f"time budget must be between 0 and 366 days, not {self.time_budget}",
        )
        _check(self.eval_blocks >= 0, "evaluation blocks must not be negative")
        _check(0 <= self.seed <= MAX_SEED, f"seed must be between 0 and {MAX_SEED:,}, not {self.seed}")
        _check(_valid_device(self.device), f"device must be auto, cpu, cuda, cuda:N or mps, not {self.device!r}")
        _check(self.precision in PRECISIONS, f"precision must be one of {', '.join(PRECISIONS)}")


def _valid_device(name: str) -> bool:
    if name in ("auto", "cpu", "cuda", "mps"):
        return True
    return name.startswith("cuda:") and name[5:].isdigit()


@dataclass(frozen=True)
class RunConfig:
    """Everything a training run needs; saved as the run's `config.toml`."""

    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    masking: MaskingConfig = field(default_factory=MaskingConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    training: TrainConfig = field(default_factory=TrainConfig)
    preset: str = "custom"

    def __post_init__(self) -> None:
        _check(
            self.data.max_seq_len <= self.model.max_position_embeddings,
            f"sequence length ({self.data.max_seq_len}) must not exceed max_position_embeddings "
            f"({self.model.max_position_embeddings})",
        )

    def training_memory_bytes(self) -> int:
        """A rough estimate of training memory: fp32 weights, gradients and Adam moments, plus activations."""
        m, t = self.model, self.training
        states = 16 * m.parameter_count()  # weights, gradients, two moments: 4 bytes each
        tokens = t.batch_size * self.data.max_seq_len
        per_layer = tokens * (16 * m.hidden_size + 2 * m.intermediate_size) * 4  # kept for the backward pass
        attention = t.batch_size * m.num_attention_heads * self.data.max_seq_len**2 * 4 * 2
        head = int(tokens * self.masking.rate) * m.vocab_size * 4 * 2  # sparse logits and their gradient
        return states + m.num_hidden_layers * (per_layer + attention) + head

    def steps_for(self, train_blocks: int) -> int:
        """Optimizer steps of this run for a training set of `train_blocks` blocks."""
        t = self.training
        if t.time_budget > 0:
            return UNTIL_THE_BUDGET_IS_SPENT
        if t.epochs > 0:
            per_step = t.batch_size * t.grad_accumulation
            return max(1, math.ceil(t.epochs * train_blocks / per_step))
        return t.max_steps

    def with_vocab_size(self, vocab_size: int) -> RunConfig:
        return replace(self, model=replace(self.model, vocab_size=vocab_size))

    # --- TOML ---------------------------------------------------------------------------------------
    def to_toml(self) -> str:
        lines = [f"preset = {_toml_value(self.preset)}"]
        for section in SECTIONS:
            lines.append(f"\n[{section}]")
            for key, value in asdict(getattr(self, section)).items():
                lines.append(f"{key} = {_toml_value(value)}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_toml(cls, text: str, source: str = "config", complete: bool = False) -> RunConfig:
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source} is not valid TOML ({exc})") from exc
        return cls.from_dict(raw, source, complete)

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str = "config", complete: bool = False) -> RunConfig:
        """A configuration from TOML-like values; missing fields take their defaults unless `complete` (a run's
        own file, which always holds every section)."""
        unknown = sorted(set(raw) - set(SECTIONS) - {"preset"})
        if unknown:
            raise ConfigError(f"{source}: unknown section(s) {', '.join(unknown)}")
        missing = [f"[{name}]" for name in SECTIONS if name not in raw]
        if complete and missing:
            raise ConfigError(f"{source} is incomplete: {', '.join(missing)} missing")
        parts: dict[str, Any] = {"preset": str(raw.get("preset", "custom"))}
        for section, kind in SECTIONS.items():
            values = raw.get(section, {})
            if not isinstance(values, dict):
                raise ConfigError(f"{source}: [{section}] must be a table")
            known = {f.name: f.type for f in fields(kind)}
            extra = sorted(set(values) - set(known))
            if extra:
                raise ConfigError(f"{source}: unknown field(s) in [{section}]: {', '.join(extra)}")
            defaults = kind()
            typed = {k: _coerce(v, type(getattr(defaults, k)), f"{section}.{k}", source) for k, v in values.items()}
            try:
                parts[section] = kind(**typed)
            except ValueError as exc:
                raise ConfigError(f"{source}: [{section}] {exc}") from exc
        try:
            return cls(**parts)
        except ValueError as exc:
            raise ConfigError(f"{source}: {exc}") from exc

    def save(self, path: str | Path) -> Path:
        """Write the TOML atomically."""
        return atomic_write_text(path, self.to_toml())

    @classmethod
    def load(cls, path: str | Path, complete: bool = False) -> RunConfig:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path} ({exc})") from exc
        return cls.from_toml(text, path.name, complete)


SECTIONS = {
    "model": ModelConfig,
    "data": DataConfig,
    "masking": MaskingConfig,
    "tokenizer": TokenizerConfig,
    "training": TrainConfig,
}


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _coerce(value: Any, kind: type, name: str, source: str) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{source}: {name} must be {kind.__name__}, not {type(value).__name__} ({value!r})")
    return value


def _preset_model(layers: int, hidden: int) -> ModelConfig:
    return ModelConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=4 * hidden,
    )


# quickstart: chosen by measurement on the built-in corpus (2-core CPU, 6 minutes; see README): a small model
# that takes many steps beats a larger one that takes few, and without dropout it learns faster.
QUICKSTART = RunConfig(
    model=replace(_preset_model(2, 128), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    training=TrainConfig(learning_rate=2e-3, warmup_steps=100, max_steps=2000, eval_interval=200),
    preset="quickstart",
)

PRESETS: dict[str, RunConfig] = {
    "quickstart": QUICKSTART,
    "tiny": RunConfig(model=_preset_model(2, 128), preset="tiny"),
    "mini": RunConfig(model=_preset_model(4, 256), preset="mini"),
    "small": RunConfig(model=_preset_model(4, 512), preset="small"),
    "medium": RunConfig(model=_preset_model(8, 512), preset="medium"),
    "base": RunConfig(model=_preset_model(12, 768), preset="base"),
}


def preset(name: str) -> RunConfig:
    """A named preset; raises ConfigError listing the names for an unknown one."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
