"""Writing files and folders so that a crash leaves either the old one or the new one, never half of one; each
with the permissions an ordinary `open()` or `mkdir()` gives it (what the umask allows), never a temporary's."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

FILE_MODE, FOLDER_MODE = 0o666, 0o777  # what an ordinary open() and mkdir() ask for, the umask taken away


def umask() -> int:
    """The process's umask, read without changing it where the system says it (Linux), else set and put back at
    once (set to 0o077 meanwhile, so that a file another thread creates in that instant is only more private)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def give_ordinary_mode(path: str | Path) -> None:
    """Give a file or folder that a library created private (as a temporary, then renamed) the permissions an
    ordinary `open()` or `mkdir()` would have given it."""
    os.chmod(path, (FOLDER_MODE if os.path.isdir(path) else FILE_MODE) & ~umask())


def atomic_write_text(path: str | Path, text: str | Iterable[str]) -> Path:
    """Write `text` (a string, or pieces written as they come) to a temporary file in the same folder, flush it
    to disk, then rename it over `path`."""
    return _replace(path, "w", [text] if isinstance(text, str) else text)


def append_whole(path: str | Path, text: str) -> None:
    """Append `text` (whole lines) to `path`; if the disk refuses part of it, the file is cut back to where it was.
    Unbuffered, so that what the disk refused is never written later (by a flush at closing)."""
    with open(path, "ab", buffering=0) as f:
        start = f.tell()
        rest = memoryview(text.encode("utf-8"))
        try:
            while rest:
                rest = rest[f.write(rest) :]
        except OSError:
            f.truncate(start)
            raise


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """`data` written as `atomic_write_text` writes text."""
    return _replace(path, "wb", [data])


def _replace(path: str | Path, mode: str, pieces: Iterable[str] | Iterable[bytes]) -> Path:
    """Write `pieces` to a temporary file beside `path`, flush it to disk, then rename it over `path` (a link at
    `path` is replaced, never followed)."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:  # said of the file meant, not of the temporary's random name
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    try:
        text = {"encoding": "utf-8", "newline": "\n"} if mode == "w" else {}
        with os.fdopen(fd, mode, **text) as f:
            os.chmod(tmp, FILE_MODE & ~umask())
            f.writelines(pieces)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise naming(exc, path, Path(tmp)) from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


def naming(exc: OSError, meant: Path, temporary: Path) -> OSError:
    """`exc` naming what was being written, `meant`, where the system named no file (a write refused) or the
    temporary standing in for it (a file inside a temporary folder named inside `meant`); else `exc` itself."""
    if not exc.strerror:
        return exc
    if exc.filename is None:
        return OSError(exc.errno, exc.strerror, str(meant))
    try:
        inside = Path(os.path.abspath(os.fsdecode(exc.filename))).relative_to(os.path.abspath(temporary))
    except ValueError:  # another file, named already
        return exc
    return OSError(exc.errno, exc.strerror, str(meant / inside))


def atomic_write_json(path: str | Path, value: object) -> Path:
    """`value` as indented JSON, written atomically."""
    return atomic_write_text(path, json.dumps(value, indent=2) + "\n")


def atomic_write_folder(final: str | Path, fill: Callable[[Path], object]) -> Path:
    """Call `fill` on a temporary folder beside `final`, flush it to disk, then put it in place of `final` in
    one step: a crash leaves the old folder or the new one, never neither. An empty `final` (the working
    folder, say) simply receives the files."""
    final = Path(os.path.abspath(final))
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp", dir=final.parent))  # unique, even for two threads
    except OSError as exc:  # said of the folder meant, not of the temporary's random name
        raise OSError(exc.errno, exc.strerror, str(final)) from exc
    try:
        tmp.chmod(FOLDER_MODE & ~umask())
        fill(tmp)
        _fsync_dir(tmp)
        if not final.exists():
            _put(tmp, final)
        elif final.is_dir() and not any(final.iterdir()):
            for item in tmp.iterdir():
                os.replace(item, final / item.name)
            _fsync_dir(final)
        else:
            _exchange(tmp, final)  # the old folder is now at `tmp`, removed below
        _fsync_dir(final.parent)
    except OSError as exc:
        raise naming(exc, final, tmp) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _put(tmp: Path, final: Path) -> None:
    """Move a new folder into place; if another writer put one there meanwhile, take its place."""
    try:
        os.replace(tmp, final)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        _exchange(tmp, final)


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: Path, b: Path) -> None:
    """Swap two folders: atomically with Linux's renameat2 where the filesystem supports it, else by moving
    `b` aside first (a crash between the moves leaves it beside, under a hidden name)."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None) if os.name == "posix" else None
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(code, os.strerror(code), str(b))
    aside = b.with_name(f".{b.name}.old{os.getpid()}")
    os.replace(b, aside)
    os.replace(a, b)
    os.replace(aside, a)


def _fsync_dir(path: Path) -> None:
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
