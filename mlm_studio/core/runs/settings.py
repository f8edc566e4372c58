"""A run's settings as its folder records them: the precision "auto" resolved to, and what a resume changed (saved
in config.toml and said in the run's metrics), alike for every recipe."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import SECTIONS
from mlm_studio.core.runs.device import resolve_device, resolved_precision
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import read_state


def with_resolved_precision(config: RunConfig) -> RunConfig:
    """`config` with precision "auto" replaced by what it resolves to on the configured device, so that a run's
    config.toml records the precision it trains in and a resume continues in it."""
    if config.training.precision != "auto":
        return config
    training = config.training
    try:
        device = resolve_device(training.device)
    except ValueError:  # a device this machine lacks: the trainer refuses it, saying so
        return config
    precision = resolved_precision(training.precision, device)
    return replace(config, training=replace(training, precision=precision))


def config_differences(old: RunConfig, new: RunConfig) -> dict[str, tuple[Any, Any]]:
    """Every setting whose value differs, by `section.field`, with its old and new value ("—" for a field one
    model family has and the other lacks); the preset, a label, is not a setting."""
    changes = {}
    for section in SECTIONS:
        a, b = getattr(old, section).values(), getattr(new, section).values()
        for name in dict.fromkeys([*a, *b]):
            if a.get(name) != b.get(name):
                changes[f"{section}.{name}"] = (a.get(name, "—"), b.get(name, "—"))
    return changes


def described(changes: dict[str, tuple[Any, Any]]) -> str:
    """Differences in words: "training.max_steps: 8 → 10; training.learning_rate: 0.001 → 0.0005"."""
    return "; ".join(f"{name}: {old} → {new}" for name, (old, new) in changes.items())


def apply_resume(run: RunDir, config: RunConfig) -> str:
    """Make `config` (from `check_resume`) the run's: save it and record the change in its metrics at the step the
    run resumes from. The sentence that says what changed, "" when nothing did."""
    changes = config_differences(run.config, config)
    if not changes:
        return ""
    latest = run.latest_checkpoint()
    message = f"resumed with {described(changes)}"
    config.save(run.path / "config.toml")
    run.append_metrics([{"type": "changed", "step": read_state(latest)["step"] if latest else 0, "message": message}])
    return message


def flat_settings(config: RunConfig, sections: tuple[str, ...] = SECTIONS) -> dict[str, Any]:
    """The settings of `sections` by `section.field`, as a tracker records a run's parameters."""
    return {
        f"{section}.{name}": value for section in sections for name, value in getattr(config, section).values().items()
    }
