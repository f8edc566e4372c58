"""The model families MLM Studio trains, imports and exports, each described once, here.

A family is its implementation module (its masked-LM under `transformers`' parameter names, and how its
configuration reads and writes config.json) plus one `Family` entry below: its names, its own configuration
fields with their ranges and words, how many parameters it has, where its positions start and which special-token
ids its config.json records. The configuration, the Configuration form, the CLI and import and export all derive
from these entries; none of them names a family. This module needs neither PyTorch nor Qt: a family's
implementation is imported only when a model is built or converted.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from mlm_studio.core.shown import shown

if TYPE_CHECKING:
    from mlm_studio.core.config.sections import ModelConfig


@dataclass(frozen=True)
class FamilyField:
    """A configuration field of some families only (the others have no such field)."""

    name: str
    default: Any  # its type is the field's type
    label: str  # as the Configuration form says it
    help: str  # the form's tooltip
    low: float | None = None  # inclusive bounds of a number
    high: float | None = None
    choices: tuple[str, ...] = ()  # the values a text field takes

    def problem(self, value: Any) -> str | None:
        """Why `value` cannot be this field's value, or None."""
        kind = type(self.default)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        fits = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
        if not (fits or (kind is float and number)):
            return f"must be {kind.__name__}, not {shown(value)}"
        if isinstance(value, float) and not math.isfinite(value):  # an int is finite however large
            return f"must be a finite number, not {shown(value)}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(self.choices)}, not {shown(value)}"
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            return f"must be between {self.low:,} and {self.high:,}, not {value:,}"
        return None


@dataclass(frozen=True)
class Family:
    """What MLM Studio knows of one family of encoders."""

    model_type: str  # as `transformers`' config.json says it
    title: str  # as people say it
    summary: str  # what sets it apart, in a phrase (the form's family tooltip)
    module: str  # the implementation: defines `architecture`, `from_hf`, `to_hf` and may define `export_problems`
    architecture: str  # `transformers`' masked-LM class, and the implementation's class of that name
    prefix: str  # the encoder's attribute: its weights' names start with it, the head's do not
    parameters: Callable[[ModelConfig], tuple[int, int]]  # (embedding, non-embedding) trainable parameters
    fields: tuple[FamilyField, ...] = ()  # its own configuration fields
    position_offset: Callable[[ModelConfig], int] = lambda model: 0  # position ids before the first token's
    token_ids: tuple[str, ...] = ()  # special-token roles its config.json records as `<role>_token_id`
    aliases: tuple[str, ...] = ()  # other config.json model types of the same architecture

    def implementation(self) -> ModuleType:
        return importlib.import_module(self.module)

    def masked_lm(self) -> type:
        """The family's masked-LM class."""
        return getattr(self.implementation(), self.architecture)

    def from_hf(self, raw: dict[str, Any]) -> ModelConfig:
        """Its configuration from config.json values; ConfigError if MLM Studio cannot compute it the same."""
        return self.implementation().from_hf(raw)

    def to_hf(self, model: ModelConfig, architecture: str = "") -> dict[str, Any]:
        """config.json for a configuration (as `architecture` when the family has several classes)."""
        write = self.implementation().to_hf
        return write(model, architecture) if architecture else write(model)

    def export_problems(self, model: ModelConfig) -> list[str]:
        """Why `transformers`' class would compute something else than this model (none: it exports)."""
        check = getattr(self.implementation(), "export_problems", None)
        return check(model) if check else []


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add a family: from now on it is configured, built, offered, counted, imported and exported."""
    FAMILIES[family.model_type] = family
    return family


def family_named(model_type: str) -> Family | None:
    """The family config.json's `model_type` names (or an alias of it), if MLM Studio has it."""
    return next((f for f in FAMILIES.values() if model_type == f.model_type or model_type in f.aliases), None)


def family_titles() -> list[str]:
    """The families as people name them, in registration order."""
    return [family.title for family in FAMILIES.values()]


def family_fields() -> dict[str, FamilyField]:
    """Every family field by name, the first family's description where several share one."""
    found: dict[str, FamilyField] = {}
    for family in FAMILIES.values():
        for field in family.fields:
            found.setdefault(field.name, field)
    return found


# --- parameter counts --------------------------------------------------------------------------------------
def encoder_parameters(model: ModelConfig, *, positions: bool, types: int, pre_norm: bool) -> tuple[int, int]:
    """(embedding, non-embedding) parameters of BERT's layers and head, embeddings `embedding_width()` wide
    (projected to the hidden size when narrower); the decoder shares the word embeddings, its bias is neither."""
    h, f, n, e = model.hidden_size, model.intermediate_size, model.num_hidden_layers, model.embedding_width()
    layer = 4 * (h * h + h) + 2 * h + (h * f + f) + (f * h + h) + 2 * h
    head = h * e + e + 2 * e  # the transform to the embeddings' width and its LayerNorm
    embeddings = (model.vocab_size + types + (model.max_position_embeddings if positions else 0)) * e + 2 * e
    projection = e * h + h if e != h else 0
    return embeddings + projection, n * layer + (2 * h if pre_norm else 0) + head


def _bert_parameters(model: ModelConfig) -> tuple[int, int]:
    learned = model.position_embedding_type == "absolute"
    return encoder_parameters(model, positions=learned, types=model.type_vocab_size, pre_norm=model.pre_layer_norm)


def _segmented_parameters(model: ModelConfig) -> tuple[int, int]:
    return encoder_parameters(model, positions=True, types=model.type_vocab_size, pre_norm=False)


def _modernbert_parameters(model: ModelConfig) -> tuple[int, int]:
    """No biases, a gated feed-forward, no norm before the first attention, a final norm, a biased head."""
    h, f, n = model.hidden_size, model.intermediate_size, model.num_hidden_layers
    layers = n * (4 * h * h + 3 * h * f + 2 * h) - h
    return model.vocab_size * h + h, layers + h + (h * h + h)


# --- the families ------------------------------------------------------------------------------------------
SEGMENT_TYPES = FamilyField("type_vocab_size", 2, "Segment types", "Segment embeddings (sentence A/B); 2", 1, 1_024)

register(
    Family(
        "bert",
        "BERT",
        "post-LayerNorm layers, learned positions, segment embeddings",
        "mlm_studio.core.models.bert",
        "BertForMaskedLM",
        "bert",
        _bert_parameters,
        fields=(
            SEGMENT_TYPES,
            FamilyField(
                "position_embedding_type",
                "absolute",
                "Positions",
                "Learned (absolute, as BERT) or fixed sinusoidal",
                choices=("absolute", "sinusoidal"),
            ),
            FamilyField(
                "pre_layer_norm", False, "Pre-LayerNorm", "LayerNorm before each sub-layer: steadier at high rates"
            ),
        ),
    )
)
register(
    Family(
        "roberta",
        "RoBERTa",
        "positions offset by the padding id, its own head",
        "mlm_studio.core.models.roberta",
        "RobertaForMaskedLM",
        "roberta",
        _segmented_parameters,
        fields=(SEGMENT_TYPES,),
        position_offset=lambda model: model.pad_token_id + 1,
        token_ids=("bos", "eos"),
        aliases=("camembert", "xlm-roberta"),
    )
)
register(
    Family(
        "distilbert",
        "DistilBERT",
        "no segment embeddings",
        "mlm_studio.core.models.distilbert",
        "DistilBertForMaskedLM",
        "distilbert",
        lambda model: encoder_parameters(model, positions=True, types=0, pre_norm=False),
    )
)
register(
    Family(
        "modernbert",
        "ModernBERT",
        "rotary positions, GeGLU, pre-LayerNorm without biases, alternating global and local attention",
        "mlm_studio.core.models.modernbert",
        "ModernBertForMaskedLM",
        "model",
        _modernbert_parameters,
        fields=(
            FamilyField(
                "local_attention",
                128,
                "Local window",
                "Tokens a local layer attends to, half on each side; 128",
                2,
                131_072,
            ),
            FamilyField(
                "global_attn_every_n_layers",
                3,
                "Global every",
                "Layers 0, n, 2n… attend to the whole sequence, the others to their window; 3",
                1,
                256,
            ),
            FamilyField(
                "global_rope_theta",
                160_000.0,
                "Global RoPE base",
                "Rotary base of the global layers; 160,000",
                1.0,
                1e12,
            ),
            FamilyField(
                "local_rope_theta",
                10_000.0,
                "Local RoPE base",
                "Rotary base of the local layers; 10,000",
                1.0,
                1e12,
            ),
        ),
        token_ids=("bos", "eos", "cls", "sep"),
    )
)
register(
    Family(
        "electra",
        "ELECTRA",
        "BERT's layers, embeddings of their own width",
        "mlm_studio.core.models.electra",
        "ElectraForMaskedLM",
        "electra",
        _segmented_parameters,
        fields=(
            SEGMENT_TYPES,
            FamilyField(
                "embedding_size",
                0,
                "Embedding size",
                "ELECTRA: width of the embeddings the generator shares, projected to the hidden size; "
                "0 = the hidden size",
                0,
                16_384,
            ),
        ),
    )
)
