"""Hugging Face Hub datasets and models that are already on this machine, named as on the Hub: a dataset
(`hf:org/name`) by its Parquet shards in the Hub cache or the Arrow files `datasets` prepared from it, a model
(`org/name`, `roberta-base`) by its newest snapshot folder. Nothing is ever downloaded; what is not there gets a
message saying where it was looked for."""

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


def cached_model(name: str) -> Path:
    """The folder of the Hub model `name` in the local cache (its newest snapshot holding a config.json); raises
    FileNotFoundError naming where it looked."""
    snapshots = hub_cache() / f"models--{name.strip().strip('/').replace('/', '--')}" / "snapshots"
    if snapshots.is_dir():
        found = [s for s in snapshots.iterdir() if (s / "config.json").is_file()]
        if found:
            return max(found, key=lambda p: p.stat().st_mtime)
    raise FileNotFoundError(
        f"{name} is neither a folder nor a model in the local Hugging Face cache (looked in {snapshots}); nothing "
        f"is downloaded: fetch it once with `huggingface-cli download {name}`, or give its folder"
    )


def looks_like_hub_name(source: str | Path) -> bool:
    """`roberta-base` or `org/name`: at most one slash, no path of this machine."""
    text = str(source)
    return 0 < len(text) <= 96 and text.count("/") <= 1 and not text.startswith((".", "/", "~")) and "\\" not in text
