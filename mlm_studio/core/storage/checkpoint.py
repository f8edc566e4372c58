"""What one checkpoint holds, read and written: the weights and optimizer moments as safetensors (nothing
pickled), and the plain values of `state.json`, checked on reading."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from mlm_studio.core.errors import UserError
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.files import give_ordinary_mode
from mlm_studio.core.storage.json_text import read_json

FORMAT_VERSION = 1


class CheckpointError(UserError):
    """A run folder or checkpoint cannot be used; the message says what is wrong and what to do."""


def save_weights(model: torch.nn.Module, path: Path) -> None:
    """Write the model's weights, each tied tensor once under its first name (as `transformers` does)."""
    seen: set[int] = set()
    tensors = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) not in seen:
            seen.add(id(tensor))
            tensors[name] = tensor.detach().contiguous()
    write_safetensors(tensors, path)


def weights_finite(tensors: Iterable[torch.Tensor]) -> bool:
    """Whether every floating-point value is a finite number: one fused reduction (the largest magnitude, which
    a NaN or an infinity propagates to and finite values never overflow) over all the tensors."""
    floats = [t.detach() for t in tensors if t.is_floating_point()]
    return not floats or bool(torch.isfinite(torch.nn.utils.get_total_norm(floats, math.inf)))


def checkpoint_finite(checkpoint: Path, unreadable: bool = False) -> bool:
    """Whether a checkpoint's weights are all finite numbers (an unreadable file counts as `unreadable`)."""
    try:
        return weights_finite(load_file(str(checkpoint / "model.safetensors"), device="cpu").values())
    except (OSError, SafetensorError):
        return unreadable


def write_safetensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """Write a safetensors file whose bytes depend only on the tensors, readable as any file written (its writer
    renames a private temporary file into place). Its writer reports a full disk as a `SafetensorError`; that is
    raised as the `OSError` it is, so every write error is handled one way."""
    try:
        save_file({n: t.cpu() for n, t in tensors.items()}, str(path), metadata={"format": "pt"})
        give_ordinary_mode(path)
    except SafetensorError as exc:
        found = re.search(r"\(os error (\d+)\)", str(exc))
        if found is None:
            raise OSError(f"{path.name}: {exc}") from exc
        code = int(found.group(1))
        raise OSError(code, os.strerror(code), str(path)) from exc


CHECKPOINTS = "checkpoints"  # a run's folder of checkpoints, each `step-NNNNNNN`


def checkpoint_folders(folder: Path) -> list[Path]:
    """The checkpoints in `folder` (a run's `checkpoints/`), oldest first, whole or damaged: every `step-N` folder.
    One is written under a temporary name and renamed when complete, so an empty one is a checkpoint whose files
    were removed (damaged, not none: a resume that skipped it would begin again over the run's records)."""
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if _step(p.name) >= 0 and p.is_dir()]
    return sorted(found, key=lambda path: _step(path.name))


class _Unusable(Exception):
    """What keeps a checkpoint from being used (`problem`), and what to do when it is not to set it aside."""

    def __init__(self, problem: str, remedy: str | None = None) -> None:
        super().__init__(problem)
        self.problem, self.remedy = problem, remedy


def read_state(checkpoint: Path) -> dict[str, Any]:
    """A checkpoint's `state.json`, checked: a missing, damaged or newer file is named, in its run, with what to read
    instead (a resume checks the whole checkpoint first: `require_readable`)."""
    try:
        return _checked_state(checkpoint)
    except _Unusable as exc:
        raise CheckpointError(f"{checkpoint}: {exc.problem}; {exc.remedy or instead_of(checkpoint)}") from exc


def require_readable(checkpoint: Path) -> None:
    """Refuse (CheckpointError) a checkpoint a resume could not load, naming its run and what to do: its state.json
    missing or damaged, or a weights file missing or cut short (see `_check_whole`)."""
    try:
        _check_whole(checkpoint)
    except _Unusable as exc:
        raise CheckpointError(f"{checkpoint}: {exc.problem}; {exc.remedy or without_it(checkpoint)}") from exc


def require_best_readable(best: Path, remedy: str) -> None:
    """Refuse (CheckpointError) a fine-tuning run's best weights folder a resume would go on from but could not
    read (its state.json or model.safetensors missing or damaged), saying `remedy`."""
    try:
        _check_whole(best, ("model.safetensors",))
    except _Unusable as exc:
        raise CheckpointError(f"{best}: {exc.problem}; {exc.remedy or remedy}") from exc


def _check_whole(checkpoint: Path, names: tuple[str, ...] = ("model.safetensors", "optimizer.safetensors")) -> None:
    """Raise `_Unusable` unless every file of `checkpoint` reads: its state.json (checked), and the headers and
    sizes of its weights files `names` (the tensors are not read)."""
    if checkpoint.is_dir() and not any(checkpoint.iterdir()):
        raise _Unusable("the folder is empty, its files removed")
    _checked_state(checkpoint)
    for name in names:
        try:
            with safe_open(str(checkpoint / name), "pt"):
                pass
        except FileNotFoundError as exc:
            raise _Unusable(f"{name} is missing") from exc
        except (OSError, SafetensorError) as exc:
            raise _Unusable(f"{name} cannot be read ({exc})") from exc


def _checked_state(checkpoint: Path) -> dict[str, Any]:
    """A checkpoint's `state.json`, or `_Unusable` saying what is wrong with it."""
    try:
        state = read_json((checkpoint / "state.json").read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise _Unusable("state.json is missing") from exc
    except OSError as exc:
        raise _Unusable(f"state.json cannot be read ({exc})") from exc
    except ValueError as exc:
        raise _Unusable(f"state.json is damaged ({exc})") from exc
    if not isinstance(state, dict):
        raise _Unusable("state.json is not a JSON object")
    version = state.get("format", FORMAT_VERSION)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise _Unusable(
            f"state.json has format {shown(version)}, newer than this MLM Studio reads ({FORMAT_VERSION})",
            "update MLM Studio",
        )
    wrong = [
        name
        for name, kinds in _STATE_FIELDS.items()
        if name in state and not (isinstance(state[name], kinds) and not isinstance(state[name], bool))
    ]
    missing = [name for name in ("step", "tokens_seen", "elapsed") if name not in state]
    if wrong or missing:
        problems = [f"missing {', '.join(missing)}"] if missing else []
        problems += [f"{name} is {shown(state[name])}" for name in wrong]
        raise _Unusable(f"state.json is damaged ({'; '.join(problems)})")
    return state


def without_it(checkpoint: Path) -> str:
    """What to do about a damaged checkpoint: move it aside (with any damaged ones between) to use the newest whole
    one before it, or, with none, start a new run (a resume without any checkpoint begins again at step 0)."""
    step = _step(checkpoint.name)
    damaged = []
    for path in reversed(checkpoint_folders(checkpoint.parent)):
        if not -1 < _step(path.name) < step:
            continue
        try:
            _check_whole(path)
        except _Unusable:
            damaged.append(path.name)
            continue
        if not damaged:
            return f"move this checkpoint folder out of {checkpoint.parent} to use {path.name}, the one before it"
        return (
            f"move this checkpoint folder and {', '.join(damaged)} (damaged too) out of {checkpoint.parent} to use "
            f"{path.name}, the newest whole checkpoint before it"
        )
    cannot = (
        "no complete checkpoint comes before it, so its run cannot continue: start a new run with the same "
        "settings (its config.toml)"
    )
    if damaged:
        return f"{cannot}; {', '.join(damaged)}, before it, {'is' if len(damaged) == 1 else 'are'} damaged too"
    return f"{cannot}; moved aside, it would leave a resume to begin again at step 0"


def instead_of(checkpoint: Path) -> str:
    """What a command that reads a damaged checkpoint's weights (export, evaluate, predict) can read instead: the
    newest whole checkpoint of its run (in its `checkpoints/`, the folder beside a fine-tuning run's `best/`)."""
    folder = checkpoint.parent if _step(checkpoint.name) >= 0 else checkpoint.parent / CHECKPOINTS
    for path in reversed(checkpoint_folders(folder)):
        if path == checkpoint:
            continue
        try:
            _check_whole(path)
        except _Unusable:
            continue
        return f"give {path}, the newest whole checkpoint of its run, instead"
    return "no other checkpoint of its run is whole: train it again"


def _step(name: str) -> int:
    """The step of a checkpoint folder's name (`step-0000200`), -1 for another name."""
    found = re.fullmatch(r"step-(\d+)", name)
    return int(found.group(1)) if found else -1


_STATE_FIELDS = {
    "step": int,
    "tokens_seen": int,
    "elapsed": (int, float),
    "val_loss": (int, float, type(None)),
    "best_val_loss": (int, float, type(None)),
    "warmup_ended_at": (int, float, type(None)),
    "param_groups": list,
}


def load_weights(checkpoint: Path, model: torch.nn.Module) -> None:
    """Load `model.safetensors` into `model`; differences in names or shapes are listed."""
    path = checkpoint / "model.safetensors"
    try:
        tensors = load_file(str(path), device="cpu")
    except (OSError, SafetensorError) as exc:
        raise CheckpointError(
            f"{checkpoint}: model.safetensors cannot be read ({exc}); {instead_of(checkpoint)}"
        ) from exc
    load_state(tensors, model, checkpoint.name)


def load_state(tensors: dict[str, torch.Tensor], model: torch.nn.Module, source: str) -> None:
    """Copy `tensors` into `model` by name (tied weights may appear under any of their names); refuses, listing
    them, missing or unexpected names and different shapes."""
    expected = dict(model.state_dict())
    tied = aliases(model)
    missing = [n for n in expected if n not in tensors and not any(a in tensors for a in tied.get(n, ()))]
    unexpected = [n for n in tensors if n not in expected]
    wrong = [
        f"{n} {tuple(tensors[n].shape)} ≠ {tuple(expected[n].shape)}"
        for n in tensors
        if n in expected and tensors[n].shape != expected[n].shape
    ]
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append(f"missing: {listed(missing)}")
        if unexpected:
            parts.append(f"unexpected: {listed(unexpected)}")
        if wrong:
            parts.append(f"shapes differ: {listed(wrong)}")
        raise CheckpointError(f"{source} does not fit this model ({'; '.join(parts)})")
    with torch.no_grad():
        for name, value in expected.items():
            source_tensor = tensors.get(name)
            if source_tensor is None:
                source_tensor = next(tensors[a] for a in tied[name] if a in tensors)
            value.copy_(source_tensor)


def listed(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"


def load_optimizer(checkpoint: Path, optimizer: torch.optim.Optimizer) -> None:
    state = read_state(checkpoint)
    try:
        tensors = load_file(str(checkpoint / "optimizer.safetensors"), device="cpu")
    except (OSError, SafetensorError) as exc:
        raise CheckpointError(f"{checkpoint.name}: optimizer.safetensors cannot be read ({exc})") from exc
    per_param: dict[int, dict[str, torch.Tensor]] = {}
    for key, tensor in tensors.items():
        _, index, name = key.split(".", 2)
        per_param.setdefault(int(index), {})[name] = tensor
    try:
        optimizer.load_state_dict({"state": per_param, "param_groups": state["param_groups"]})
    except (KeyError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"{checkpoint.name}: the optimizer state does not fit this model ({exc})") from exc


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], list[dict]]:
    state = optimizer.state_dict()
    tensors = {}
    for index, values in state["state"].items():
        for name, value in values.items():
            tensor = value if torch.is_tensor(value) else torch.tensor(value)
            tensors[f"state.{index}.{name}"] = tensor.detach().cpu().contiguous()
    return tensors, state["param_groups"]


def aliases(model: torch.nn.Module) -> dict[str, list[str]]:
    """For each state-dict name, the other names of the same tensor (tied weights)."""
    by_tensor: dict[int, list[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        by_tensor.setdefault(id(tensor), []).append(name)
    return {name: [n for n in names if n != name] for names in by_tensor.values() for name in names}
