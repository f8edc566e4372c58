"""Where MLM Studio keeps its caches on disk."""

from __future__ import annotations

import os
import sys
from pathlib import Path

CACHE_ENV = "MLM_STUDIO_CACHE"
RUNS_ENV = "MLM_STUDIO_RUNS"


def cache_dir() -> Path:
    """The per-user cache folder (overridable with the MLM_STUDIO_CACHE environment variable)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        base = Path(override)
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "mlm-studio" / "cache"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches" / "mlm-studio"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mlm-studio"
    base.mkdir(parents=True, exist_ok=True)
    return base


def default_runs_dir() -> Path:
    """Where the workbench keeps its runs unless the user picks another folder."""
    override = os.environ.get(RUNS_ENV)
    if override:
        return Path(override)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "mlm-studio"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support" / "mlm-studio"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "mlm-studio"
    return base / "runs"
