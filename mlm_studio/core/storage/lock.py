"""A run folder is trained by one process at a time: an operating-system lock, released on any exit; and never
through a symbolic link: a linked folder, or a link inside it, is refused before anything is written."""

from __future__ import annotations

import os
from pathlib import Path

from mlm_studio.core.shown import one_line
from mlm_studio.core.storage.checkpoint import CheckpointError

TARGET_CHARS = 200  # of where a refused link points, as the refusal names it

LOCK_FILE = ".lock"


class RunLock:
    """Hold `folder`'s lock while training in it (a context manager); creates the folder if needed. A second
    process is refused at once with the holder's PID. The kernel drops the lock when its holder exits, even
    when killed, so a lock never outlives its process."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._fd: int | None = None
        self._created = False
        self._before: set[str] = set()
        self._lock_was_there = False

    def __enter__(self) -> RunLock:
        link = _link_on_the_way(self.folder)
        if link is not None:
            raise CheckpointError(
                f"{link} is a symbolic link{pointing(link)}; a run is written only into folders of its own, never "
                "through a link: put the folder it points to in its place, or choose another folder"
            )
        self._created = not self.folder.exists()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            kind = f"a link to {os.readlink(self.folder)}" if self.folder.is_symlink() else "a file"
            raise CheckpointError(f"{self.folder} is {kind}, not a folder; choose another folder") from None
        path = self.folder / LOCK_FILE
        self._before = {p.name for p in self.folder.iterdir()} - {LOCK_FILE}
        self._lock_was_there = path.exists()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        if not _try_lock(fd):
            holder = os.read(fd, 32).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise CheckpointError(
                f"{self.folder} is being trained by process {holder}; wait for it to finish, stop it, "
                "or choose another folder"
            )
        self._fd = fd
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as exc:  # a full disk: said naming the lock, the folder left as it was found
            self.__exit__()
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is None:
            return
        if {p.name for p in self.folder.iterdir()} - {LOCK_FILE} == self._before:  # nothing was started here
            if not self._lock_was_there:
                (self.folder / LOCK_FILE).unlink()
            if self._created:
                self.folder.rmdir()
        os.close(self._fd)  # closing releases the lock
        self._fd = None


def holder(folder: str | Path) -> str:
    """The process training in `folder` now (its PID as its lock file says it, or "another process"), "" when none
    is: read without writing, for a command that reads a run another process may be training."""
    try:
        fd = os.open(Path(folder) / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no lock file: never trained here (or unreadable: then no holder can be told)
        return ""
    try:
        if _try_lock(fd):
            return ""
        return os.read(fd, 32).decode(errors="replace").strip() or "another process"
    finally:
        os.close(fd)  # closing releases the lock taken to look


def pointing(link: Path) -> str:
    """Where `link` points, as a message says it: a dangling link's missing target named."""
    target = Path(os.readlink(link))
    return f" to {one_line(str(target), TARGET_CHARS)}" + ("" if link.exists() else ", which does not exist")


def _link_on_the_way(folder: Path) -> Path | None:
    """The folder itself when it is a symbolic link, else the first link directly inside it (a run's
    `checkpoints/`, `tensorboard/`, `metrics.jsonl` linked elsewhere), else None."""
    if folder.is_symlink():
        return folder
    try:
        return next((entry for entry in sorted(folder.iterdir()) if entry.is_symlink()), None)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _try_lock(fd: int) -> bool:
    if os.name == "nt":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
