"""A Hugging Face Hub cache laid out as `huggingface_hub` writes it: `<kind>s--org--name/` with `blobs/` named by
their hash, `snapshots/<commit>/` whose files are relative links to the blobs, and `refs/main` naming a commit."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from huggingface_hub import constants


def commit(label: str) -> str:
    """A 40-hex commit hash standing for `label`."""
    return hashlib.sha1(label.encode()).hexdigest()


def add_snapshot(cache: Path, repo: str, files: dict[str, bytes], label: str, kind: str = "model") -> Path:
    """A snapshot of `repo` holding `files` (relative path: content) in the cache; returns its folder."""
    root = cache / f"{kind}s--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / commit(label)
    for name, content in files.items():
        blob = root / "blobs" / hashlib.sha256(content).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    return snapshot


def add_folder(cache: Path, repo: str, folder: Path, label: str, kind: str = "model") -> Path:
    """A snapshot of `repo` holding every file of `folder`."""
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    return add_snapshot(cache, repo, files, label, kind)


def point_main_at(snapshot: Path) -> None:
    """Make `refs/main` name `snapshot`, and date every other snapshot of the repository after it, so that a
    look-up by modification time would pick another one."""
    (snapshot.parent.parent / "refs").mkdir(exist_ok=True)
    (snapshot.parent.parent / "refs" / "main").write_text(snapshot.name)
    older = snapshot.stat().st_mtime - 3600
    os.utime(snapshot, (older, older))
    for other in snapshot.parent.iterdir():
        if other != snapshot:
            os.utime(other, (older + 1800, older + 1800))


def use_cache(monkeypatch, cache: Path) -> None:
    """Point this process and its children at `cache`: `huggingface_hub` reads HF_HUB_CACHE once, on import."""
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
