"""What MLM Studio wrote in a folder, file by file: a manifest of relative names and content hashes. Replacing or
removing touches only the files it lists whose content is as written, never through a symbolic link; anything
else in the way is named and refused, and what is kept is said."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from mlm_studio.core.errors import UserError
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.files import atomic_write_json
from mlm_studio.core.storage.json_text import read_json

MANIFEST = ".mlm-studio-files.json"
_CHUNK = 1 << 20


class NotOurs(UserError):
    """Something MLM Studio did not write, or that changed since, stands where it would write or remove."""


@dataclass(frozen=True)
class Written:
    """A file as MLM Studio wrote it: the SHA-256 of its first `size` bytes. A file that `grows` (an event log its
    writer appends to) is still as written when only bytes after those were added."""

    sha256: str
    size: int
    grows: bool = False


def fingerprint(data: bytes) -> Written:
    """The record of a file written with `data`."""
    return Written(hashlib.sha256(data).hexdigest(), len(data))


class OwnedFolder:
    """The files MLM Studio wrote under `root`, by relative name, as its manifest lists them (kept in `root` unless
    `manifest` names a place of its own). `recorded` is False when there is no manifest: a caller may then set
    `files` to what an earlier version, which kept none, is taken to have written."""

    def __init__(self, root: str | Path, manifest: str | Path | None = None) -> None:
        self.root = Path(root)
        self.manifest = Path(manifest) if manifest is not None else self.root / MANIFEST
        files = self._read()
        self.recorded = files is not None
        self.files: dict[str, Written] = files or {}

    def _read(self) -> dict[str, Written] | None:
        try:
            if stat.S_ISLNK(self.manifest.lstat().st_mode):
                raise ValueError("it is a symbolic link")
            raw = read_json(self.manifest.read_text(encoding="utf-8"))
            files = {name: Written(**entry) for name, entry in raw["files"].items()}
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise NotOurs(f"{self.manifest} cannot be read ({exc}); nothing was changed. Move it away") from None
        strange = [name for name in files if not _inside(name)]
        if strange:
            raise NotOurs(f"{self.manifest} lists {shown(strange[0])}, outside {self.root}; nothing was changed")
        return files

    def why_not_ours(self, name: str) -> str | None:
        """Why `name` may not be replaced or removed (a link on its way, another kind of file, a file MLM Studio did
        not write or that changed since), in words that start with its path; None when it is absent or as written."""
        path = self.root / name
        obstacle = self._obstacle(name)
        if obstacle is not None or not os.path.lexists(path):
            return obstacle
        written = self.files.get(name)
        if written is None:
            return f"{path} was not written by MLM Studio"
        if not _as_written(path, written):
            change = "changed since MLM Studio wrote it" if self.recorded else "is not what MLM Studio writes"
            return f"{path} {change}"
        return None

    def is_plain_file(self, name: str) -> bool:
        """Whether `name` is a plain file, reached without a link."""
        return self._obstacle(name) is None and os.path.lexists(self.root / name)

    def _obstacle(self, name: str) -> str | None:
        """A link on the way to `name`, or something other than a plain file there."""
        path, parts = self.root, PurePosixPath(name).parts
        for depth, part in enumerate(parts):
            path = path / part
            try:
                mode = path.lstat().st_mode
            except FileNotFoundError:
                return None
            if stat.S_ISLNK(mode):
                return f"{path} is a symbolic link"
            if depth < len(parts) - 1 and not stat.S_ISDIR(mode):
                return f"{path} is not a folder"
        return None if stat.S_ISREG(mode) else f"{path} is not a plain file"

    def in_the_way(self, names: list[str] | None = None) -> list[str]:
        """Why each of `names` (all the listed files when None) may not be replaced, each reason once."""
        reasons = (self.why_not_ours(name) for name in (self.files if names is None else names))
        return list(dict.fromkeys(why for why in reasons if why))

    def strangers(self) -> list[str]:
        """Everything under the root that is neither a listed file, a folder on the way to one, nor the manifest;
        a folder of strangers is named once, links are named and never followed."""
        listed = set(self.files)
        folders = {parent.as_posix() for name in listed for parent in PurePosixPath(name).parents}
        found = []
        for top, dirs, files in os.walk(self.root, onerror=_raise):
            here = Path(top).relative_to(self.root)
            for entry in [*dirs, *files]:
                name = (here / entry).as_posix()
                if name in listed or name in folders or self.root / name == self.manifest:
                    continue
                found.append(name)
                if entry in dirs:
                    dirs.remove(entry)
        return sorted(found)

    def record(self, name: str, grows: bool = False) -> None:
        """List the file `name` as it is now."""
        size = (self.root / name).lstat().st_size
        self.files[name] = Written(_sha256(self.root / name, size), size, grows)

    def record_all(self) -> None:
        """List every file under the root (a folder just written) and save the manifest."""
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and not path.is_symlink() and path != self.manifest:
                self.record(path.relative_to(self.root).as_posix())
        self.save()

    def remove(self, names: list[str] | None = None) -> tuple[list[str], list[str]]:
        """Delete the listed files (or those of `names`) that are as written; returns the names removed and why each
        other one was kept. Both leave the list: what was kept is its owner's now. Folders stay."""
        removed, kept = [], []
        for name in sorted(self.files if names is None else names):
            why = self.why_not_ours(name)
            if why is not None:
                kept.append(why)
            elif (self.root / name).exists():
                (self.root / name).unlink()
                removed.append(name)
            self.files.pop(name, None)
        return removed, kept

    def save(self) -> None:
        """Write the manifest (atomically), or remove it once nothing is listed."""
        if not self.files:
            self.manifest.unlink(missing_ok=True)
            return
        self.manifest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.manifest, {"files": {name: asdict(w) for name, w in sorted(self.files.items())}})


def _inside(name: object) -> bool:
    """A relative name that stays below the folder."""
    if not isinstance(name, str) or not name:
        return False
    path = PurePosixPath(name)
    return not path.is_absolute() and all(part not in ("", ".", "..") for part in name.split("/"))


def _as_written(path: Path, written: Written) -> bool:
    try:
        size = os.lstat(path).st_size
        return (size >= written.size if written.grows else size == written.size) and _sha256(
            path, written.size
        ) == written.sha256
    except OSError:
        return False


def _sha256(path: Path, size: int) -> str:
    """The SHA-256 of the first `size` bytes of `path`, opened without following a link."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        while size > 0 and (chunk := f.read(min(size, _CHUNK))):
            digest.update(chunk)
            size -= len(chunk)
    return digest.hexdigest()


def _raise(error: OSError) -> None:
    raise error
