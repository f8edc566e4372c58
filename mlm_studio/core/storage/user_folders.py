"""Where MLM Studio keeps its runs and caches: the platform's user folders, found by `platformdirs` (on Linux the
XDG folders, an empty variable counting as unset), unless MLM_STUDIO_RUNS or MLM_STUDIO_CACHE names another."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_path, user_data_path

APP_NAME = "mlm-studio"
CACHE_ENV = "MLM_STUDIO_CACHE"
RUNS_ENV = "MLM_STUDIO_RUNS"


def data_home() -> Path:
    """The user's data folder, shared by every application (~/.local/share, or $XDG_DATA_HOME, on Linux)."""
    return user_data_path()


def cache_dir() -> Path:
    """The per-user cache folder (~/.cache/mlm-studio on Linux, ~/Library/Caches/mlm-studio on macOS), created if
    missing; MLM_STUDIO_CACHE overrides it."""
    base = Path(os.environ.get(CACHE_ENV) or user_cache_path(APP_NAME, appauthor=False))
    base.mkdir(parents=True, exist_ok=True)
    return base


def default_runs_dir() -> Path:
    """Where the workbench keeps its runs unless the user picks another folder (~/.local/share/mlm-studio/runs
    on Linux, ~/Library/Application Support/mlm-studio/runs on macOS); MLM_STUDIO_RUNS overrides it."""
    override = os.environ.get(RUNS_ENV)
    return Path(override) if override else user_data_path(APP_NAME, appauthor=False) / "runs"
