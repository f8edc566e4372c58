"""A run's whole configuration and its files: `config.toml` written and read, JSON configs and `--set` values.

`RunConfig` gathers the sections of `sections` (model, data, masking, tokenizer, training) and is what a run
folder's `config.toml` holds. `ModelConfig` uses the field names of Hugging Face's `BertConfig`, so a model can
be exported and imported by renaming nothing.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomli_w

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.sections import (
    SECTIONS,
    UNTIL_THE_BUDGET_IS_SPENT,
    ConfigError,
    DataConfig,
    MaskingConfig,
    ModelConfig,
    TokenizerConfig,
    TrainConfig,
    generator_config,
)
from mlm_studio.core.shown import MAX_WHOLE_NUMBER, one_line, shown
from mlm_studio.core.storage.files import atomic_write_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


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
        if self.training.objective == "electra" and self.model.family != "electra":
            raise ConfigError(
                f"{{0}} electra trains an ELECTRA model: set {{1}} to electra (not {self.model.family})",
                ("training.objective", "model.family"),
            )
        length, positions = self.data.max_seq_len, self.model.max_tokens()
        if length > positions:
            offset = "" if positions == self.model.max_position_embeddings else " less the padding offset"
            raise ConfigError(
                f"{{0}} ({length}) must not exceed {{1}}{offset} ({positions})",
                ("data.max_seq_len", "model.max_position_embeddings"),
            )
        if self.training.objective == "electra":
            self._check_generator()

    def _check_generator(self) -> None:
        """ELECTRA's generator, `generator_size` times as wide as the model, must itself be a model that can be
        built; if not, the size is at fault, not the model's fields."""
        size = self.training.generator_size
        try:
            generator_config(self.model, size)
        except ConfigError as exc:
            problem = exc.naming([name.replace("model.", "its ") for name in exc.fields])
            raise ConfigError(
                f"{{0}} ({size:g}) makes the generator too small ({problem}); raise {{0}}",
                ("training.generator_size",),
            ) from None

    def training_memory_bytes(self) -> int:
        """Peak resident memory of a process that trains this configuration in fp32 on a CPU: the interpreter,
        PyTorch, the tokenizer and the data (a fixed share), fp32 weights, gradients and Adam's two moments, and
        the activations the backward pass keeps with their working memory. Per layer and token the activations
        are 16 × hidden plus the feed-forward's width as its weights imply (twice the intermediate size, three
        times when gated), and the attention scores; the head's sparse logits count once (the loss's backward
        writes their gradient over them). ELECTRA's generator adds its layers' weights and activations, scaled
        by its width. The fixed share and the activations' factor are fitted to the peak of every preset and
        family (benchmarks/bench_memory.py, docs/performance.md)."""
        process, working = 343 * 2**20, 1.23  # the fitted fixed share, and factor on the activations
        m, t = self.model, self.training
        states = 16 * m.parameter_count()  # weights, gradients, two moments: 4 bytes each
        tokens = t.batch_size * self.data.max_seq_len
        layers, hidden = m.num_hidden_layers, m.hidden_size
        feed_forward = m.non_embedding_parameter_count() / layers / hidden - 4 * hidden  # its width, from its weights
        per_layer = tokens * (16 * hidden + feed_forward) * 4
        attention = t.batch_size * m.num_attention_heads * self.data.max_seq_len**2 * 4 * 2
        head = int(tokens * self.masking.rate) * m.vocab_size * 4  # sparse logits (the backward overwrites them)
        activations = layers * (per_layer + attention) + head
        if t.objective == "electra":  # the generator: as deep, generator_size times as wide
            activations += layers * per_layer * t.generator_size
            states += int(16 * layers * 12 * (hidden * t.generator_size) ** 2)
        return int(process + states + working * activations)

    def steps_for(self, train_blocks: int) -> int:
        """Optimizer steps of this run for a training set of `train_blocks` blocks."""
        t = self.training
        if t.time_budget > 0:
            return UNTIL_THE_BUDGET_IS_SPENT
        if t.epochs > 0:
            per_step = t.batch_size * t.grad_accumulation
            return max(1, math.ceil(t.epochs * train_blocks / per_step))
        return t.max_steps

    def with_objective(self, objective: str) -> RunConfig:
        """This configuration trained with `objective`; ELECTRA's turns the model into an ELECTRA of its size."""
        model = self.model.as_family("electra") if objective == "electra" else self.model
        return replace(self, model=model, training=replace(self.training, objective=objective))

    def with_vocabulary(self, vocab_size: int, pad_id: int) -> RunConfig:
        """This configuration for a tokenizer of `vocab_size` pieces whose padding token is `pad_id`."""
        return replace(self, model=replace(self.model, vocab_size=vocab_size, pad_token_id=pad_id))

    # --- TOML ---------------------------------------------------------------------------------------
    def to_toml(self) -> str:
        """The configuration as TOML that `from_toml` reads back to an equal configuration."""
        return tomli_w.dumps(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The configuration as TOML-like values: the preset and each section's fields."""
        return {"preset": self.preset, **{name: getattr(self, name).values() for name in SECTIONS}}

    @classmethod
    def from_toml(cls, text: str, source: str = "config", complete: bool = False) -> RunConfig:
        return cls.from_dict(_parsed(tomllib.loads, text, source, "TOML"), source, complete)

    @classmethod
    def from_dict(
        cls,
        raw: dict[str, Any],
        source: str = "config",
        complete: bool = False,
        presets: Callable[[str], RunConfig] | None = None,
    ) -> RunConfig:
        """A configuration from TOML-like values; missing fields take their defaults unless `complete` (a run's
        own file, which always holds every section). With `presets` (a name's preset, raising ConfigError for a
        name it does not know), a file naming a preset other than "custom" starts from that preset's values."""
        if not isinstance(raw, dict):
            raise ConfigError(f"{source} must hold a table (a JSON object) with the sections of a configuration")
        unknown = _names(set(raw) - set(SECTIONS) - {"preset"})
        if unknown:
            raise ConfigError(f"{source}: unknown section(s) {one_line(', '.join(unknown))}")
        missing = [f"[{name}]" for name in SECTIONS if name not in raw]
        if complete and missing:
            raise ConfigError(f"{source} is incomplete: {', '.join(missing)} missing")
        parts: dict[str, Any] = {"preset": _preset_name(raw.get("preset", "custom"), source)}
        start = _named_preset(presets, parts["preset"], source)
        for section, kind in SECTIONS.items():
            values = raw.get(section, {})
            if not isinstance(values, dict):
                raise ConfigError(f"{source}: [{section}] must be a table")
            known = kind.field_defaults()
            extra = _names(set(values) - set(known))
            if extra:
                raise ConfigError(f"{source}: unknown field(s) in [{section}]: {one_line(', '.join(extra))}")
            typed = {k: _coerce(v, type(known[k]), f"{section}.{k}", source) for k, v in values.items()}
            if start is not None:
                typed = {**_preset_section(start, section, typed), **typed}
            try:
                parts[section] = kind(**typed)
            except ConfigError as exc:
                raise exc.within(source) from exc
        try:
            return cls(**parts)
        except ConfigError as exc:
            raise exc.within(source) from exc

    def with_values(self, values: dict[str, Any], source: str = "--set") -> RunConfig:
        """This configuration with `values` ({"training.learning_rate": 1e-3, …}) changed, checked as a TOML
        file's values are (the same messages, said of `source`). A new `model.family` keeps the fields both
        families have and starts the new family's others from their defaults."""
        raw = self.to_dict()
        family = values.get("model.family", self.model.family)
        if isinstance(family, str) and family != self.model.family and family in FAMILIES:
            try:
                raw["model"] = self.model.as_family(family).values()
            except ConfigError as exc:
                raise exc.within(source) from exc
        for key, value in values.items():
            section, _, name = key.partition(".")
            if section not in SECTIONS or not name:
                raise ConfigError(
                    f"{shown(key)} is not a setting; write section.field, e.g. training.learning_rate", (), source
                )
            if name not in SECTIONS[section].field_defaults():
                close = setting_meant(name, section)
                said = f"; did you mean {close}?" if close else ""
                raise ConfigError(f"unknown field {shown(name)} in [{section}]{said}", (), source)
            raw[section][name] = value
        return RunConfig.from_dict(raw, source, complete=True)

    def save(self, path: str | Path) -> Path:
        """Write the TOML atomically."""
        return atomic_write_text(path, self.to_toml())

    @classmethod
    def load(
        cls, path: str | Path, complete: bool = False, presets: Callable[[str], RunConfig] | None = None
    ) -> RunConfig:
        """A configuration from a TOML file, or a JSON file with the same sections (`presets` as `from_dict`)."""
        return cls.from_dict(_file_table(Path(path)), Path(path).name, complete, presets)


SHORT_NAMES = {"lr": "learning_rate", "steps": "max_steps", "bs": "batch_size"}  # written for a field's name


def setting_meant(name: str, section: str = "") -> str:
    """The setting ("training.max_steps") a field name stands for (in `section`, else in any): itself, a short
    name for it, or a close spelling ("-" for "_" too); "" when none is close."""
    name = name.replace("-", "_").lower()
    name = SHORT_NAMES.get(name, name)
    fields = {
        f"{part}.{known}": known for part, kind in SECTIONS.items() if part == section or not section
        for known in kind.field_defaults()
    }  # fmt: skip
    exact = [setting for setting, known in fields.items() if known == name]
    close = difflib.get_close_matches(name, list(fields.values()), n=1, cutoff=0.75)
    found = exact or [setting for setting, known in fields.items() if known in close]
    return found[0] if found else ""


def written_fields(path: str | Path) -> frozenset[str]:
    """The settings ("training.learning_rate", …) a configuration file writes itself; the others come from its
    preset or the defaults."""
    table = _file_table(Path(path))
    sections = table.items() if isinstance(table, dict) else ()
    return frozenset(f"{s}.{name}" for s, values in sections if isinstance(values, dict) for name in values)


def _file_table(path: Path) -> Any:
    """A configuration file's TOML or JSON as it is written; unreadable or invalid is a `ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:  # the path once: a name the system refused as too long can be any length
        raise ConfigError(f"cannot read {one_line(str(path), 300)} ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {one_line(str(path), 300)} ({exc})") from exc
    if path.suffix.lower() != ".json":
        return _parsed(tomllib.loads, text, path.name, "TOML")
    return _parsed(_read_json, text, path.name, "JSON")


def value_from_text(text: str) -> Any:
    """A value typed on a command line, read as TOML reads it (1e-3, 512, true), else as the text itself."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except (ValueError, RecursionError):  # not TOML, or a number or nesting TOML reads only in part
        return text


def _parsed(read: Callable[[str], Any], text: str, source: str, kind: str) -> Any:
    """`text` as `read` parses it; a syntax error, a nesting too deep or a number too long is a `ConfigError`."""
    try:
        return read(text)
    except ConfigError as exc:
        raise exc.within(source) from None
    except RecursionError:
        raise ConfigError(f"{source} nests lists or tables too deeply (a configuration has two levels)") from None
    except ValueError as exc:  # a syntax error, or a number longer than Python converts
        digits = max(re.findall(r"\d+", text), key=len, default="")
        if isinstance(exc, (json.JSONDecodeError, tomllib.TOMLDecodeError)) or len(digits) < 1000:
            raise ConfigError(f"{source} is not valid {kind} ({exc})") from None
        line = text.count("\n", 0, text.index(digits)) + 1
        raise ConfigError(
            f"{source}, line {line}: a number of {len(digits):,} digits; no setting takes more than 18"
        ) from None


def _read_json(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_unique_keys)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys each appear once (JSON itself would keep the last of a repeated key)."""
    table: dict[str, Any] = {}
    for key, value in pairs:
        if key in table:
            raise ConfigError(f"{shown(key)} appears twice in one object; keep one of its values")
        table[key] = value
    return table


def _names(keys: set[Any]) -> list[str]:
    """Keys a message lists, sorted, each printable (a lone surrogate escaped)."""
    return sorted(str(key).encode("utf-8", "backslashreplace").decode("utf-8") for key in keys)


def _named_preset(presets: Callable[[str], RunConfig] | None, name: str, source: str) -> RunConfig | None:
    """The preset a file names, when `presets` is given and the name is not "custom"."""
    if presets is None or name == "custom":
        return None
    try:
        return presets(name)
    except ConfigError as exc:
        raise exc.within(source) from exc


def _preset_section(start: RunConfig, section: str, given: dict[str, Any]) -> dict[str, Any]:
    """The preset's values of `section` that a file's `given` values complete (its model as the family the file
    names, when it names another)."""
    part = getattr(start, section)
    if section == "model" and given.get("family", part.family) != part.family:
        part = part.as_family(given["family"])
    return part.values()


def _preset_name(value: Any, source: str) -> str:
    """The preset a configuration names: any text a file can hold (it is a label, never a path)."""
    if not isinstance(value, str):
        raise ConfigError(f"preset must be text, not {type(value).__name__} ({shown(value)})", (), source)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"preset holds a character that is not text ({shown(value)})", (), source) from None
    return value


def _coerce(value: Any, kind: type, name: str, source: str) -> Any:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(value, int) and number and abs(value) >= MAX_WHOLE_NUMBER:
        raise ConfigError(f"is too large: {shown(value)}", (name,), source)
    if kind is float and isinstance(value, int) and number:
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"must be {kind.__name__}, not {type(value).__name__} ({shown(value)})", (name,), source)
    return value
