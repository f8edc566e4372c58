"""The presets a run starts from: small and quick, modern, ELECTRA."""

from __future__ import annotations

from dataclasses import replace

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import (
    ConfigError,
    ModelConfig,
    TrainConfig,
)
from mlm_studio.core.shown import shown


def _preset_model(layers: int, hidden: int) -> ModelConfig:
    return ModelConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=4 * hidden,
    )


# quickstart: chosen by measurement on the built-in corpus (2-core CPU, 6 minutes; docs/performance.md): a small model
# that takes many steps beats a larger one that takes few, and without dropout it learns faster.
QUICKSTART = RunConfig(
    model=replace(_preset_model(2, 128), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    training=TrainConfig(learning_rate=2e-3, warmup_steps=100, max_steps=2000, eval_interval=200),
    preset="quickstart",
)


# modern: quickstart's width and recipe as a ModernBERT: rotary positions, a GeGLU feed-forward, pre-LayerNorm
# without biases, a global layer then local ones (a 64-token window over 128-token blocks). Measured against
# quickstart on the built-in corpus (2-core CPU, 6 minutes each, the same evaluation): 42.6% held-out accuracy
# against 17.8%, and ahead at every minute; hence the default.
MODERN = RunConfig(
    model=ModelConfig(
        family="modernbert",
        hidden_size=128,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=256,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        layer_norm_eps=1e-5,
        local_attention=64,
    ),
    training=QUICKSTART.training,
    preset="modern",
)

# electra: quickstart's shape and recipe as an ELECTRA discriminator, trained by replaced-token detection with a
# generator a quarter as wide (the paper found generators 1/4 to 1/2 of the discriminator's size work best).
ELECTRA = replace(QUICKSTART.with_objective("electra"), preset="electra")


PRESETS: dict[str, RunConfig] = {
    "modern": MODERN,
    "quickstart": QUICKSTART,
    "electra": ELECTRA,
    "tiny": RunConfig(model=_preset_model(2, 128), preset="tiny"),
    "mini": RunConfig(model=_preset_model(4, 256), preset="mini"),
    "small": RunConfig(model=_preset_model(4, 512), preset="small"),
    "medium": RunConfig(model=_preset_model(8, 512), preset="medium"),
    "base": RunConfig(model=_preset_model(12, 768), preset="base"),
}


DEFAULT_PRESET = "modern"  # what the window and `mlm-studio train` start from


def preset(name: str) -> RunConfig:
    """A named preset; raises ConfigError listing the names for an unknown one."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {shown(name)}; choose one of {', '.join(PRESETS)}") from None
