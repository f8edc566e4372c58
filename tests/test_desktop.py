"""What makes MLM Studio a desktop application: the packaged resources, its launcher entry and their installation."""

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlm_studio.resources import DESKTOP_ENTRY, ICON_SIZES, METAINFO, icon_png, icon_svg, resource

SOURCES = Path(__file__).resolve().parent.parent / "resources"


def test_the_package_ships_exactly_what_resources_holds():
    pairs = [(SOURCES / "icons" / "mlm-studio.svg", icon_svg()), (SOURCES / DESKTOP_ENTRY, resource(DESKTOP_ENTRY))]
    pairs += [(SOURCES / METAINFO, resource(METAINFO))]
    pairs += [(SOURCES / "icons" / f"mlm-studio-{size}.png", icon_png(size)) for size in ICON_SIZES]
    for source, shipped in pairs:
        assert filecmp.cmp(source, shipped, shallow=False), f"{shipped.name}: run python resources/build.py"


@pytest.mark.parametrize(
    ("tool", "arguments", "name"),
    [
        ("desktop-file-validate", [], DESKTOP_ENTRY),
        ("appstreamcli", ["validate", "--no-net"], METAINFO),
    ],
)
def test_the_launcher_entry_and_metadata_validate(tool, arguments, name):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed here")
    done = subprocess.run([tool, *arguments, str(SOURCES / name)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_install_desktop_writes_the_entry_and_icons_and_uninstall_removes_exactly_them(tmp_path):
    home = tmp_path / "share"
    mine = home / "icons" / "hicolor" / "48x48" / "apps" / "someone-else.png"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"not ours")
    env = {**os.environ, "XDG_DATA_HOME": str(home)}
    command = [sys.executable, "-m", "mlm_studio", "install-desktop"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    entry = (home / "applications" / DESKTOP_ENTRY).read_text()
    assert "Icon=mlm-studio" in entry and ("mlm_studio gui" in entry or "mlm-studio gui" in entry)
    installed = sorted(p for p in home.rglob("*") if p.is_file() and p != mine)
    assert len(installed) == len(ICON_SIZES) + 3 and (home / "icons/hicolor/scalable/apps/mlm-studio.svg").is_file()
    changed = home / "icons" / "hicolor" / "16x16" / "apps" / "mlm-studio.png"
    changed.write_bytes(b"edited by the user")
    done = subprocess.run([*command, "--uninstall"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and f"Kept {changed}" in done.stdout
    assert sorted(p for p in home.rglob("*") if p.is_file()) == sorted([changed, mine])


@pytest.mark.skipif(sys.platform != "linux", reason="the launcher entry belongs in Linux's XDG data folder")
def test_an_empty_xdg_data_home_installs_into_the_home_data_folder(tmp_path):
    """XDG_DATA_HOME= counts as unset, as it does for the runs folder: ~/.local/share, nothing in the current
    folder."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": "", "PYTHONPATH": str(SOURCES.parent)}
    command = [sys.executable, "-m", "mlm_studio", "install-desktop"]
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, env=env, timeout=120)
    share = home / ".local" / "share"
    assert done.returncode == 0 and f"under {share}:" in done.stdout, done.stderr
    assert (share / "applications" / DESKTOP_ENTRY).is_file() and list(work.iterdir()) == []
    done = subprocess.run([*command, "--uninstall"], cwd=work, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and f"from {share}." in done.stdout
    assert not any(path.is_file() for path in home.rglob("*"))


def test_the_window_has_a_console_free_launcher_entry():
    import importlib

    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")

    project = tomllib.loads((SOURCES.parent / "pyproject.toml").read_text())["project"]
    module, function = project["gui-scripts"]["mlm-studio-window"].split(":")
    assert callable(getattr(importlib.import_module(module), function))
    assert project["scripts"]["mlm-studio"] == "mlm_studio.cli:main"  # the terminal commands stay
