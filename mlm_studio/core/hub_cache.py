"""A Hugging Face Hub dataset that is already on this machine, named as on the Hub (`hf:org/name`): its Parquet
shards in the Hub cache, or the Arrow files `datasets` prepared from it. Nothing is ever downloaded; a dataset
that is not there gets a message saying where it was looked for."""

from __future__ import annotations

import os
from pathlib import Path

PREFIX = "hf:"


def is_hub_name(source: str | Path) -> bool:
    return str(source).startswith(PREFIX)


def _home() -> Path:
    return Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")


def hub_cache() -> Path:
    return Path(os.environ.get("HF_HUB_CACHE") or _home() / "hub")


def datasets_cache() -> Path:
    return Path(os.environ.get("HF_DATASETS_CACHE") or _home() / "datasets")


def cached_files(source: str) -> list[Path]:
    """The files of `hf:org/name` on this machine (the newest snapshot's Parquet shards, else the Arrow files
    `datasets` wrote); raises FileNotFoundError naming where it looked."""
    name = source[len(PREFIX) :].strip().strip("/")
    snapshots = hub_cache() / f"datasets--{name.replace('/', '--')}" / "snapshots"
    if snapshots.is_dir():
        for snapshot in sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
            shards = sorted(snapshot.rglob("*.parquet"))
            if shards:
                return shards
    prepared = datasets_cache() / name.replace("/", "___")
    arrows = (
        sorted(p for p in prepared.rglob("*.arrow") if not p.name.startswith("cache-")) if prepared.is_dir() else []
    )
    if arrows:
        return arrows
    raise FileNotFoundError(
        f"the dataset {name!r} is not in the local Hugging Face cache (looked in {snapshots} and {prepared}); "
        "nothing is downloaded: fetch it once with the datasets library or huggingface-cli, or give its files"
    )
