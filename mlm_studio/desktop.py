"""`mlm-studio install-desktop`: the launcher entry, icons and AppStream metadata in the user's XDG folders, so
MLM Studio appears in the system's launcher; `--uninstall` removes exactly those files, and only if they are
still the ones written."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from mlm_studio.core.storage.user_folders import data_home
from mlm_studio.resources import DESKTOP_ENTRY, ICON_SIZES, METAINFO, icon_png, icon_svg, resource


def launch_command() -> str:
    """How the launcher starts the window: the installed command when it is on PATH, else this interpreter."""
    found = shutil.which("mlm-studio")
    return f"{found} gui" if found else f"{sys.executable} -m mlm_studio gui"


def planned_files(home: Path) -> dict[Path, bytes]:
    """Every file installation writes, with its content."""
    entry = (
        resource(DESKTOP_ENTRY).read_text(encoding="utf-8").replace("Exec=mlm-studio gui", f"Exec={launch_command()}")
    )
    files = {
        home / "applications" / DESKTOP_ENTRY: entry.encode(),
        home / "metainfo" / METAINFO: resource(METAINFO).read_bytes(),
        home / "icons" / "hicolor" / "scalable" / "apps" / "mlm-studio.svg": icon_svg().read_bytes(),
    }
    for size in ICON_SIZES:
        files[home / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "mlm-studio.png"] = icon_png(size).read_bytes()
    return files


def install(home: Path | None = None) -> list[Path]:
    """Write the launcher entry, icons and metadata; returns the files written."""
    written = []
    for path, content in planned_files(home or data_home()).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written


def uninstall(home: Path | None = None) -> tuple[list[Path], list[Path]]:
    """Remove what `install` wrote: (removed, kept because someone changed them since)."""
    removed, kept = [], []
    for path, content in planned_files(home or data_home()).items():
        if not path.is_file():
            continue
        if _unchanged(path.read_bytes(), content):
            path.unlink()
            removed.append(path)
        else:
            kept.append(path)
    return removed, kept


def _unchanged(present: bytes, written: bytes) -> bool:
    """The file is as installed (a launcher entry's command may name another interpreter or PATH)."""

    def without_exec(data: bytes) -> list[bytes]:
        return [line for line in data.splitlines() if not line.startswith(b"Exec=")]

    return present == written or without_exec(present) == without_exec(written)


def run(args) -> int:
    """The command: install, or uninstall with `--uninstall`, telling what it did."""
    home = data_home()
    try:
        if args.uninstall:
            removed, kept = uninstall(home)
            print(f"Removed {len(removed)} file(s) from {home}.")
            for path in kept:
                print(f"Kept {path}: it changed since it was installed.")
            return 0
        written = install(home)
    except OSError as exc:
        print(f"mlm-studio: could not write to {home} ({exc})", file=sys.stderr)
        return 1
    print(f"Installed {len(written)} file(s) under {home}: MLM Studio is in the launcher (log in again if not).")
    return 0
