"""Hugging Face folders imported (BERT, RoBERTa and its relatives, DistilBERT, ModernBERT, ELECTRA): `config.json`,
the weights and the tokenizer, each checked by type before use. An import reads `model.safetensors` (sharded or
not); a `pytorch_model.bin` is read only with `torch.load(weights_only=True)`, which refuses anything but tensors,
so a file that would run code when unpickled is rejected before it can. Export is `interop/export.py`.
"""

from __future__ import annotations

import pickle
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from mlm_studio.core.config.families import FAMILIES, Family, family_named, family_titles
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ConfigError, ModelConfig, TrainConfig, generator_config
from mlm_studio.core.data.tokenizer import MLMTokenizer, TokenizerError
from mlm_studio.core.models.build import build_model
from mlm_studio.core.models.electra import DISCRIMINATOR
from mlm_studio.core.models.replaced_tokens import ReplacedTokenDetection
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.checkpoint import CheckpointError, aliases, listed, load_state
from mlm_studio.core.storage.hub_cache import cached_model, looks_like_hub_name
from mlm_studio.core.storage.json_text import read_json
from mlm_studio.core.storage.lock import pointing

GENERATOR_FOLDER = "generator"  # an ELECTRA export's generator, beside its discriminator


class InteropError(CheckpointError):
    """A model cannot be exported or imported; the message says why and what to do."""


def is_hf_folder(path: str | Path) -> bool:
    """True for a folder with a Hugging Face `config.json` (and not an MLM Studio run or checkpoint)."""
    path = Path(path)
    return (path / "config.json").is_file() and not (path / "config.toml").is_file()


def architectures(path: str | Path) -> tuple[str, ...]:
    """The classes a folder's config.json names (BertForQuestionAnswering), none when it cannot be read."""
    try:
        named = _raw_config(Path(path)).get("architectures")
    except InteropError:
        return ()
    return tuple(name for name in named if isinstance(name, str)) if isinstance(named, list) else ()


def has_known_family(path: str | Path) -> bool:
    """True for a folder whose config.json names a family MLM Studio has (a GPT-2 in the Hub cache has none)."""
    try:
        kind = _raw_config(Path(path)).get("model_type")
    except InteropError:
        return False
    return isinstance(kind, str) and family_named(kind) is not None


# --- import ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportedModel:
    """A Hugging Face folder read into MLM Studio's model of its family, ready to fine-tune or to query."""

    folder: Path
    config: ModelConfig
    tokenizer: MLMTokenizer
    weights: dict[str, torch.Tensor]  # in MLM Studio's names, the head included
    fresh_head: bool  # the folder had no masked-LM head (or an ELECTRA discriminator no generator): initialised
    unused: tuple[str, ...]  # weights in the folder this model does not use (pooler, next-sentence head)
    generator_size: float = 0.0  # an ELECTRA discriminator's: its generator's width as a fraction of its own

    def run_config(self, config: RunConfig) -> RunConfig:
        """`config` training this model: its architecture, and ELECTRA's objective for a discriminator."""
        config = replace(config, model=self.config)
        if self.generator_size:
            config = config.with_objective("electra")
            config = replace(config, training=replace(config.training, generator_size=self.generator_size))
        return config

    def build_model(self) -> torch.nn.Module:
        """The model with the folder's weights: a masked-LM, or an ELECTRA discriminator with its generator."""
        model = _electra_pair(self.config, self.generator_size) if self.generator_size else build_model(self.config)
        load_state(self.weights, model, self.folder.name)
        return model

    def summary(self) -> str:
        m = self.config
        kind = f"{FAMILIES[m.family].title} discriminator" if self.generator_size else FAMILIES[m.family].title
        own = sum(t.numel() for n, t in self.weights.items() if n.startswith("discriminator."))
        count = own if self.generator_size else m.parameter_count()
        lines = [
            f"{self.folder.name}: {kind} {m.num_hidden_layers} layers × {m.hidden_size}, "
            f"{m.num_attention_heads} heads, {count:,} parameters, "
            f"{self.tokenizer.kind} vocabulary of {self.tokenizer.vocab_size:,} pieces, mask token "
            f"{self.tokenizer.specials.mask}."
        ]
        if self.generator_size:
            lines.append(
                f"Its generator is {self.generator_size:.3g} times as wide"
                + (" and starts from random weights (the folder has none)." if self.fresh_head else ".")
            )
        elif self.fresh_head:
            lines.append(
                "The folder holds an encoder without a masked-LM head: the head starts from random weights, so "
                "predictions mean nothing until it has trained."
            )
        if self.unused:
            lines.append(f"Not used for masked-LM (left out): {', '.join(self.unused)}.")
        return " ".join(lines)

    def origin(self) -> dict[str, Any]:
        return {"source": str(self.folder), "fresh_head": self.fresh_head, "unused": list(self.unused)}


def model_folder(source: str | Path) -> Path:
    """A model's folder: `source` itself, or a Hub name (`roberta-base`, `org/name`) already in the local Hugging
    Face cache."""
    folder = Path(source)
    if folder.is_symlink() and not folder.exists():
        raise InteropError(f"{source} is a link{pointing(folder)}; give the model's folder itself")
    if folder.is_dir() or folder.exists() or not looks_like_hub_name(source):
        return folder
    try:
        return cached_model(str(source))
    except (FileNotFoundError, ValueError) as exc:
        raise InteropError(str(exc)) from None


def import_model(source: str | Path) -> ImportedModel:
    """Read a Hugging Face model (a masked-LM, or an encoder alone) of a known family and its tokenizer, from a
    folder or the local Hub cache."""
    folder = model_folder(source)
    if not folder.is_dir():
        raise InteropError(f"{folder} is not a folder")
    raw = _raw_config(folder)
    config = _model_config(folder, raw)
    tokenizer = _tokenizer(folder)
    if tokenizer.vocab_size > config.vocab_size:
        raise InteropError(
            f"{folder.name}: the tokenizer has {tokenizer.vocab_size:,} pieces but the model only "
            f"{config.vocab_size:,}; they do not belong together"
        )
    tensors = _read_weights(folder)
    _check_size(folder, config, tensors)
    _check_finite(folder, tensors)
    architectures = raw.get("architectures")
    if isinstance(architectures, list) and DISCRIMINATOR in architectures:
        return _import_electra(folder, config, tokenizer, tensors)
    with torch.random.fork_rng():
        torch.manual_seed(0)  # a fresh head is the same on every import
        model = build_model(config)
    family = FAMILIES[config.family]
    weights, unused = _renamed(tensors, set(model.state_dict()), family.prefix)
    _check_belonging(folder, config, weights, unused)
    _check_tied(weights, model, family, folder)
    fresh = model.state_dict()
    tied = aliases(model)
    encoder = f"{family.prefix}."
    head = [n for n in fresh if not n.startswith(encoder) and not any(a.startswith(encoder) for a in tied.get(n, ()))]
    fresh_head = not any(n in weights for n in head)
    if fresh_head:
        weights.update({n: fresh[n].clone() for n in head})
    try:
        load_state(weights, model, folder.name)
    except CheckpointError as exc:
        raise InteropError(str(exc)) from exc
    return ImportedModel(folder, config, tokenizer, weights, fresh_head, tuple(unused))


def _check_size(folder: Path, config: ModelConfig, tensors: dict[str, torch.Tensor]) -> None:
    """A config.json that describes a far larger model than the weights beside it is refused before that model is
    built (a masked-LM head the folder lacks is a small part of a model)."""
    held = sum(t.numel() for t in tensors.values())
    if config.parameter_count() > 2 * held:
        raise InteropError(
            f"{folder.name}: config.json describes a model of {config.parameter_count():,} parameters but the "
            f"weights hold {held:,}; they do not belong together"
        )


def _check_finite(folder: Path, tensors: dict[str, torch.Tensor]) -> None:
    """Weights that hold NaN or infinity are refused: every result computed from them would be meaningless."""
    broken = [name for name, t in tensors.items() if t.is_floating_point() and not torch.isfinite(t).all()]
    if broken:
        raise InteropError(
            f"{folder.name}: the weights hold values that are not finite numbers (in {listed(broken)}); every "
            "result computed from them would be meaningless. Use another model"
        )


def _check_belonging(folder: Path, config: ModelConfig, weights: dict[str, torch.Tensor], unused: list[str]) -> None:
    """The weights are those of config.json's family and depth: refused, saying which, when none is named as the
    family's encoder names its weights, or when they hold layers beyond `num_hidden_layers`."""
    family = FAMILIES[config.family]
    if not any(n.startswith(f"{family.prefix}.") for n in weights):
        raise InteropError(
            f"{folder.name}: the weights belong to another family than config.json's {family.title} (none is named "
            f"as a {family.title} encoder's weights; they are {listed(unused, 3) or 'none at all'}). Use the "
            "config.json saved with these weights"
        )
    layers = {int(m.group(1)) for n in unused if (m := re.search(r"\.layers?\.(\d+)\.", n))}
    extra_layers = sorted(n for n in layers if n >= config.num_hidden_layers)
    if extra_layers:
        raise InteropError(
            f"{folder.name}: config.json declares {config.num_hidden_layers} layers but the weights also hold "
            f"layer(s) {', '.join(map(str, extra_layers))}; the weights would go unused. Fix num_hidden_layers "
            "in config.json"
        )


def _check_tied(weights: dict[str, torch.Tensor], model: torch.nn.Module, family: Family, folder: Path) -> None:
    """The model ties its output layer to its word embeddings; a folder whose two differ would lose one of them.
    Of each tied group, one name is kept."""
    for name, others in aliases(model).items():
        if name not in weights:
            continue
        for other in others:
            twin = weights.pop(other, None)
            if twin is not None and not torch.equal(twin, weights[name]):
                raise InteropError(
                    f"{folder.name}: {other} is not tied to {name}; MLM Studio's {family.title} ties them, as "
                    f"{family.title} does"
                )


def _import_electra(
    folder: Path, config: ModelConfig, tokenizer: MLMTokenizer, tensors: dict[str, torch.Tensor]
) -> ImportedModel:
    """An ELECTRA discriminator and the generator beside it in `generator/` (a fresh one, a quarter as wide, when
    there is none), the generator reading the discriminator's embeddings."""
    generator_folder = folder / GENERATOR_FOLDER
    size = TrainConfig().generator_size
    has_generator = (generator_folder / "config.json").is_file()
    if has_generator:
        generator = _model_config(generator_folder)
        if generator.family != config.family:
            raise InteropError(
                f"{folder.name}: its generator ({GENERATOR_FOLDER}/config.json) describes a "
                f"{FAMILIES[generator.family].title} model, not an ELECTRA generator; import the two folders apart"
            )
        size = generator.hidden_size / config.hidden_size
        if generator_config(config, size) != replace(generator, embedding_size=config.embedding_width()):
            raise InteropError(
                f"{folder.name}: its generator ({generator.num_hidden_layers} layers × {generator.hidden_size}, "
                f"{generator.num_attention_heads} heads) is not shaped as MLM Studio shapes generators (as deep as "
                "the discriminator, heads and feed-forward scaled with the width); import the two folders apart"
            )
    with torch.random.fork_rng():
        torch.manual_seed(0)  # a fresh generator is the same on every import
        pair = _electra_pair(config, size)
    expected = set(pair.state_dict())
    weights, unused = _renamed(tensors, expected, "discriminator")
    if has_generator:
        generated, unused_too = _renamed(_read_weights(generator_folder), expected, "generator")
        shared = ("generator.electra.embeddings.", "generator.generator_lm_head.weight")
        weights.update({n: t for n, t in generated.items() if not n.startswith(shared)})  # the discriminator's
        unused += [f"{GENERATOR_FOLDER}/{n}" for n in unused_too]
    else:
        weights.update({n: t.clone() for n, t in pair.state_dict().items() if n.startswith("generator.")})
    try:
        load_state(weights, pair, folder.name)
    except CheckpointError as exc:
        raise InteropError(str(exc)) from exc
    return ImportedModel(folder, config, tokenizer, weights, not has_generator, tuple(unused), size)


def _electra_pair(config: ModelConfig, generator_size: float) -> ReplacedTokenDetection:
    return ReplacedTokenDetection(config, generator_size, TrainConfig().detection_weight)


def _raw_config(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    try:
        raw = read_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InteropError(f"{folder} has no config.json; it is not a Hugging Face model folder") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InteropError(f"{path.name} in {folder.name} cannot be read as JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise InteropError(f"{path.name} in {folder.name} is not a JSON object")
    return raw


def _model_config(folder: Path, raw: dict[str, Any] | None = None) -> ModelConfig:
    """The configuration of the model in `folder`, from its config.json (`raw`, when already read)."""
    raw = _raw_config(folder) if raw is None else raw
    path = folder / "config.json"
    kind = raw.get("model_type")
    known = ", ".join(family_titles())
    if not isinstance(kind, str):
        raise InteropError(
            f"{path.name} in {folder.name} names no model type (its model_type is {shown(kind)}, not a name "
            f'such as "bert"); MLM Studio reads {known}'
        )
    family = family_named(kind)
    if family is None:
        raise InteropError(
            f"{folder.name} holds a {shown(kind) if kind else 'model of unknown type'} model; MLM Studio reads {known}"
        )
    try:
        return family.from_hf(raw)
    except (ConfigError, TypeError) as exc:
        raise InteropError(f"{path.name} in {folder.name}: {exc}") from exc


def _tokenizer(folder: Path) -> MLMTokenizer:
    try:
        return MLMTokenizer.load(folder)
    except TokenizerError as exc:
        raise InteropError(f"{folder.name}: {exc}") from exc


def _read_weights(folder: Path) -> dict[str, torch.Tensor]:
    single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    if single.is_file():
        return _safetensors(single)
    if index.is_file():
        tensors: dict[str, torch.Tensor] = {}
        for shard in _shards(index):
            tensors.update(_safetensors(folder / shard))
        return tensors
    pickled = folder / "pytorch_model.bin"
    if pickled.is_file():
        return _tensors_only(pickled)
    raise InteropError(f"{folder.name} has no weights (model.safetensors or pytorch_model.bin)")


def _shards(index: Path) -> list[str]:
    """The files a sharded checkpoint's index names in its `weight_map`, each a file name beside the index."""
    where = f"{index.name} in {index.parent.name}"
    try:
        raw = read_json(index.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InteropError(f"{where} is damaged ({exc})") from exc
    weight_map = raw.get("weight_map") if isinstance(raw, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise InteropError(f"{where} has no weight_map (an object of weight names and their shard files)")
    for shard in weight_map.values():
        if not isinstance(shard, str) or shard in ("", ".", "..") or Path(shard).name != shard or "\0" in shard:
            raise InteropError(
                f"{where} names {shown(shard)} as a shard; each shard must be the name of a file beside the index"
            )
    return sorted(set(weight_map.values()))


def _safetensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path), device="cpu")
    except (OSError, SafetensorError) as exc:
        raise InteropError(f"{path.name} in {path.parent.name} cannot be read ({exc})") from exc


def _tensors_only(path: Path) -> dict[str, torch.Tensor]:
    """A pickled state dict, read with PyTorch's restricted unpickler: tensors and plain containers only."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise InteropError(
            f"{path.name} in {path.parent.name} was refused: it holds objects other than tensors, and opening it "
            "could run code. Convert it to model.safetensors with a tool you trust, or use the model's "
            "safetensors file."
        ) from exc
    except (OSError, RuntimeError, EOFError, ValueError) as exc:
        raise InteropError(f"{path.name} in {path.parent.name} cannot be read ({exc})") from exc
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise InteropError(f"{path.name} in {path.parent.name} is not a dictionary of tensors")
    return state


def _renamed(
    raw: dict[str, torch.Tensor], expected: set[str], prefix: str
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Hugging Face names (with or without the encoder's `prefix`, old `gamma`/`beta` LayerNorm names) → ours;
    the rest is returned as unused, except non-persistent buffers such as `position_ids`."""
    weights, unused = {}, []
    for name, tensor in raw.items():
        ours = name
        if "LayerNorm" in ours:
            ours = ours.replace(".gamma", ".weight").replace(".beta", ".bias")
        if ours not in expected and f"{prefix}.{ours}" in expected:
            ours = f"{prefix}.{ours}"
        if ours.endswith(("position_ids", "token_type_ids")):
            continue
        if ours in expected:
            weights[ours] = tensor.float() if tensor.is_floating_point() else tensor
        else:
            unused.append(name)
    return weights, unused
