"""`mlm-studio install-desktop`: the launcher entry, icons and AppStream metadata in the user's XDG folders, so
MLM Studio appears in the system's launcher; `--uninstall` removes exactly those files, and only if they are
still as written. The record of what was written lives in MLM Studio's own data folder, not among the files
other programs share."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from mlm_studio.core.storage.files import atomic_write_bytes
from mlm_studio.core.storage.owned import NotOurs, OwnedFolder, fingerprint
from mlm_studio.core.storage.user_folders import app_data_dir, data_home
from mlm_studio.resources import DESKTOP_ENTRY, ICON_SIZES, METAINFO, icon_png, icon_svg, resource

RECORD = "installed-desktop-files.json"  # in MLM Studio's own data folder
_RESERVED = re.compile(r"[\s\"'\\><~|&;$*?#()`]")  # an Exec argument holding one of these is quoted


def launch_command() -> list[str]:
    """How the launcher starts the window: the installed command when it is on PATH, else this interpreter."""
    found = shutil.which("mlm-studio")
    return [found, "gui"] if found else [sys.executable, "-m", "mlm_studio", "gui"]


def exec_value(command: list[str]) -> str:
    """The `Exec=` value that runs `command`: arguments quoted as the Desktop Entry spec says, `%` doubled, then
    the escapes of every string value (a backslash, a newline, a tab) on top."""
    quoted = [_exec_argument(arg) for arg in command]
    value = " ".join(quoted).replace("%", "%%").replace("\\", "\\\\")
    return value.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def _exec_argument(arg: str) -> str:
    if arg and not _RESERVED.search(arg):
        return arg
    return '"' + re.sub(r'(["`$\\])', r"\\\1", arg) + '"'


def planned_files() -> dict[str, bytes]:
    """Every file installation writes, by its name under the XDG data folder, with its content."""
    entry = resource(DESKTOP_ENTRY).read_text(encoding="utf-8")
    entry = entry.replace("Exec=mlm-studio gui", f"Exec={exec_value(launch_command())}")
    files = {
        f"applications/{DESKTOP_ENTRY}": entry.encode(),
        f"metainfo/{METAINFO}": resource(METAINFO).read_bytes(),
        "icons/hicolor/scalable/apps/mlm-studio.svg": icon_svg().read_bytes(),
    }
    for size in ICON_SIZES:
        files[f"icons/hicolor/{size}x{size}/apps/mlm-studio.png"] = icon_png(size).read_bytes()
    return files


def _installed(home: Path) -> OwnedFolder:
    """What installation wrote under `home`; an installation by an earlier version kept no record: its files count
    as written when they are exactly what this version writes."""
    owned = OwnedFolder(home, app_data_dir() / RECORD)
    if not owned.recorded:
        owned.files = {name: fingerprint(content) for name, content in planned_files().items()}
    return owned


def install(home: Path | None = None) -> list[Path]:
    """Write the launcher entry, icons and metadata; returns the files written. Refused, with nothing written, when
    a file MLM Studio did not write (or a link) stands where one goes."""
    home = home or data_home()
    owned, planned = _installed(home), planned_files()
    in_the_way = owned.in_the_way(list(planned))
    if in_the_way:
        raise NotOurs(f"{'; '.join(in_the_way)}: nothing was installed. Move it away, then install again")
    written = []
    try:
        for name, content in planned.items():
            path = home / name
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, content)
            owned.files[name] = fingerprint(content)
            written.append(path)
    finally:
        owned.save()
    return written


def uninstall(home: Path | None = None) -> tuple[list[Path], list[str]]:
    """Remove what `install` wrote and is still as written: (the files removed, why each other one was kept)."""
    home = home or data_home()
    owned = _installed(home)
    removed, kept = owned.remove()
    owned.save()
    return [home / name for name in removed], kept


def run(args) -> int:
    """The command: install, or uninstall with `--uninstall`, telling what it did."""
    home = data_home()
    try:
        if args.uninstall:
            removed, kept = uninstall(home)
            print(f"Removed {len(removed)} file(s) from {home}.")
            for why in kept:
                print(f"Kept: {why}.")
            return 0
        written = install(home)
    except NotOurs as exc:
        print(f"mlm-studio: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"mlm-studio: could not write to {home} ({exc})", file=sys.stderr)
        return 1
    print(f"Installed {len(written)} file(s) under {home}: MLM Studio is in the launcher (log in again if not).")
    return 0
