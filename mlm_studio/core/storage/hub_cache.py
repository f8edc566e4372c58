"""Hugging Face Hub datasets and models that are already on this machine, named as on the Hub: a dataset
(`hf:org/name`) by its Parquet shards in the Hub cache or the Arrow files `datasets` prepared from it, a model
(`org/name`, `roberta-base`) by its snapshot folder. `huggingface_hub` finds them as `transformers` does: the
same cache (HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME) and the revision `refs/main` names. Nothing is ever
downloaded; what is not there gets a message saying where it was looked for."""

from __future__ import annotations

import os
from pathlib import Path

from mlm_studio.core.errors import UserError
from mlm_studio.core.shown import shown

PREFIX = "hf:"
MODELS = "models--"  # how the cache's folder of a model begins (then its name, `/` written `--`)
# huggingface_hub (and the HTTP client under it) takes 0.2 s to import: each function below imports it when a
# Hub name is resolved, so that the window, which reads corpora through this module, shows first.


def is_hub_name(source: str | Path) -> bool:
    return str(source).startswith(PREFIX)


def looks_like_hub_name(source: str | Path) -> bool:
    """`roberta-base` or `org/name`: a name the Hub's grammar allows."""
    try:
        checked_name(str(source))
    except ValueError:
        return False
    return True


def checked_name(name: str) -> str:
    """`name` if the Hub's grammar allows it (`org/name` or `name`), checked before any path is built from it;
    raises ValueError saying why not."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        rule = "letters, digits, '-', '_' and '.', no '--' or '..', not first or last '-' or '.', at most 96 of them"
        raise UserError(f"{shown(name)} is not a Hugging Face Hub name: write org/name ({rule})") from None
    return name


def datasets_cache() -> Path:
    """Where the `datasets` library keeps the Arrow files it prepared (HF_DATASETS_CACHE, else under HF_HOME)."""
    from huggingface_hub import constants

    return Path(os.environ.get("HF_DATASETS_CACHE") or Path(constants.HF_HOME) / "datasets")


def _cache_folder(name: str, kind: str) -> Path:
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    return Path(constants.HF_HUB_CACHE).absolute() / repo_folder_name(repo_id=name, repo_type=kind)


def cached_files(source: str) -> list[Path]:
    """The files of `hf:org/name` on this machine (the Parquet shards of the snapshot `refs/main` names, else
    the Arrow files `datasets` wrote); raises ValueError for a name the Hub would refuse or a file that leads
    out of its cache, FileNotFoundError naming where it looked for one that is not here."""
    from huggingface_hub import snapshot_download

    name = checked_name(source[len(PREFIX) :].strip())
    try:
        snapshot = Path(snapshot_download(name, repo_type="dataset", local_files_only=True))
        shards = sorted(snapshot.rglob("*.parquet"))
    except FileNotFoundError:
        shards = []
    if shards:
        return _within(shards, snapshot.parent.parent / "blobs")
    prepared = datasets_cache() / name.replace("/", "___")
    arrows = (
        sorted(p for p in prepared.rglob("*.arrow") if not p.name.startswith("cache-")) if prepared.is_dir() else []
    )
    if arrows:
        return _within(arrows, prepared)
    raise FileNotFoundError(
        f"the dataset {shown(name)} is not in the local Hugging Face cache (looked in {_cache_folder(name, 'dataset')} "
        f"and {prepared}); nothing is downloaded: fetch it once with the datasets library or huggingface-cli, or "
        "give its files"
    )


def _within(files: list[Path], folder: Path) -> list[Path]:
    """`files`, each of which must lead (through its links) into `folder`; raises ValueError naming one that
    does not, which a cache never holds."""
    inside = folder.resolve()
    for file in files:
        target = file.resolve()
        if not target.is_relative_to(inside):
            raise UserError(
                f"{file} leads to {target}, outside the cache folder {inside}; refused: delete the link, or give "
                "the files themselves"
            )
    return files


def _within_folder(folder: Path, cache: Path) -> Path:
    """`folder`, every file under which must lead (through its links) into `cache`."""
    _within([path for path in folder.rglob("*") if path.is_file()], cache)
    return folder


def cached_model(name: str) -> Path:
    """The folder of the Hub model `name` in the local cache (the snapshot `refs/main` names, holding a
    config.json); raises ValueError for a name the Hub would refuse or a file that leads out of the model's cache
    folder, FileNotFoundError naming where it looked for one that is not here."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(checked_name(name.strip()), "config.json")
    if isinstance(found, str):
        snapshot = Path(found).parent.absolute()
        # every file must lead into this model's own cache folder (its blobs, or the snapshot itself where the
        # cache holds no links)
        return _within_folder(snapshot, snapshot.parent.parent)
    raise FileNotFoundError(
        f"{name} is neither a folder nor a model in the local Hugging Face cache (looked in "
        f"{_cache_folder(name.strip(), 'model')}); nothing is downloaded: fetch it once with "
        f"`huggingface-cli download {name}`, or give its folder"
    )


def cached_models() -> list[tuple[str, Path]]:
    """The Hub models in the local cache as (name, snapshot folder), by name: each one whose snapshot `refs/main`
    names holds a config.json (one whose files lead out of its cache folder is left out)."""
    from huggingface_hub import constants

    found = []
    for folder in sorted(Path(constants.HF_HUB_CACHE).glob(f"{MODELS}*")):
        name = folder.name.removeprefix(MODELS).replace("--", "/")
        try:
            found.append((name, cached_model(name)))
        except (FileNotFoundError, ValueError):
            continue
    return found


def hub_name_of(folder: str | Path) -> str | None:
    """The Hub name of a model's snapshot folder in the cache (`…/models--org--name/snapshots/<commit>`), or None
    for any other folder."""
    folder = Path(folder)
    repo = folder.parent.parent.name
    if folder.parent.name != "snapshots" or not repo.startswith(MODELS):
        return None
    return repo.removeprefix(MODELS).replace("--", "/")
