"""Where MLM Studio keeps its runs and caches: the platform's user folders, found by `platformdirs`, unless
MLM_STUDIO_RUNS or MLM_STUDIO_CACHE names another. Where the XDG folders apply (Linux and the other Unixes), an
XDG variable that is empty or not an absolute path counts as unset, as the XDG Base Directory spec says."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from platformdirs import user_cache_path, user_data_path

APP_NAME = "mlm-studio"
CACHE_ENV = "MLM_STUDIO_CACHE"
RUNS_ENV = "MLM_STUDIO_RUNS"
_XDG = os.name == "posix" and sys.platform != "darwin"


def _xdg_home(variable: str, default: str) -> Path:
    """The XDG folder `variable` names when it is an absolute path, else `default` under the home folder."""
    value = os.environ.get(variable, "")
    return Path(value) if os.path.isabs(value) else Path.home() / default


def data_home() -> Path:
    """The user's data folder, shared by every application (~/.local/share, or $XDG_DATA_HOME, on Linux)."""
    return _xdg_home("XDG_DATA_HOME", ".local/share") if _XDG else user_data_path()


def app_data_dir() -> Path:
    """MLM Studio's own data folder (~/.local/share/mlm-studio on Linux, ~/Library/Application Support/mlm-studio
    on macOS)."""
    return data_home() / APP_NAME if _XDG else user_data_path(APP_NAME, appauthor=False)


def cache_dir() -> Path:
    """The per-user cache folder (~/.cache/mlm-studio on Linux, ~/Library/Caches/mlm-studio on macOS), created if
    missing; MLM_STUDIO_CACHE overrides it."""
    default = _xdg_home("XDG_CACHE_HOME", ".cache") / APP_NAME if _XDG else user_cache_path(APP_NAME, appauthor=False)
    base = Path(os.environ.get(CACHE_ENV) or default)
    base.mkdir(parents=True, exist_ok=True)
    return base


def default_runs_dir() -> Path:
    """Where the workbench keeps its runs unless the user picks another folder (~/.local/share/mlm-studio/runs
    on Linux, ~/Library/Application Support/mlm-studio/runs on macOS); MLM_STUDIO_RUNS overrides it."""
    override = os.environ.get(RUNS_ENV)
    return Path(override) if override else app_data_dir() / "runs"
