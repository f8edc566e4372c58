"""What makes MLM Studio a desktop application: the packaged resources, its launcher entry and their installation."""

import filecmp
import json
import os
import select
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlm_studio.commands.install_desktop import RECORD, exec_value
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


def install_desktop(env, *args, cwd=None):
    command = [sys.executable, "-m", "mlm_studio", "install-desktop", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_install_desktop_writes_the_entry_and_icons_and_uninstall_removes_exactly_them(tmp_path):
    home = tmp_path / "share"
    mine = home / "icons" / "hicolor" / "48x48" / "apps" / "someone-else.png"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"not ours")
    env = {**os.environ, "XDG_DATA_HOME": str(home)}
    done = install_desktop(env)
    assert done.returncode == 0, done.stderr
    entry = (home / "applications" / DESKTOP_ENTRY).read_text()
    assert "Icon=mlm-studio" in entry and ("mlm_studio gui" in entry or "mlm-studio gui" in entry)
    record = home / "mlm-studio" / RECORD  # MLM Studio's own data folder, not the shared XDG folders
    installed = sorted(p for p in home.rglob("*") if p.is_file() and p not in (mine, record))
    assert len(installed) == len(ICON_SIZES) + 3 and (home / "icons/hicolor/scalable/apps/mlm-studio.svg").is_file()
    assert sorted(home / name for name in json.loads(record.read_text())["files"]) == installed
    assert install_desktop(env).returncode == 0  # its own files, as written, are replaced
    changed = home / "icons" / "hicolor" / "16x16" / "apps" / "mlm-studio.png"
    changed.write_bytes(b"edited by the user")
    done = install_desktop(env, "--uninstall")
    assert done.returncode == 0 and f"Kept: {changed} changed since MLM Studio wrote it." in done.stdout
    assert f"Removed {len(installed) - 1} file(s)" in done.stdout
    assert sorted(p for p in home.rglob("*") if p.is_file()) == sorted([changed, mine])


def test_uninstall_keeps_an_entry_whose_only_change_is_the_users_own_command(tmp_path):
    home = tmp_path / "share"
    env = {**os.environ, "XDG_DATA_HOME": str(home)}
    assert install_desktop(env).returncode == 0
    entry = home / "applications" / DESKTOP_ENTRY
    text = entry.read_text()
    mine = "\n".join("Exec=/opt/my-wrapper --gui" if line.startswith("Exec=") else line for line in text.splitlines())
    entry.write_text(mine + "\n")
    done = install_desktop(env, "--uninstall")
    assert done.returncode == 0 and f"Kept: {entry} changed since MLM Studio wrote it." in done.stdout
    assert entry.read_text() == mine + "\n" and [p for p in home.rglob("*.png")] == []
    # the entry is the user's now: installing again refuses to replace it
    done = install_desktop(env)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{entry} is not what MLM Studio writes: nothing was installed" in done.stderr
    assert entry.read_text() == mine + "\n" and [p for p in home.rglob("*.png")] == []


@pytest.mark.parametrize("link_to", ["a file of the user's", "nowhere", "a folder outside"])
def test_install_never_writes_through_a_symbolic_link(tmp_path, link_to):
    home, outside = tmp_path / "share", tmp_path / "outside"
    (home / "applications").mkdir(parents=True)
    outside.mkdir()
    users = outside / "notes.desktop"
    users.write_text("the user's own file\n")
    if link_to == "a folder outside":
        (home / "icons").symlink_to(outside, target_is_directory=True)
        link = home / "icons"
    else:
        link = home / "applications" / DESKTOP_ENTRY
        link.symlink_to(users if link_to == "a file of the user's" else outside / "made-by-mlm-studio.desktop")
    before = sorted(tmp_path.rglob("*"))
    done = install_desktop({**os.environ, "XDG_DATA_HOME": str(home)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    refusal = f"mlm-studio: {link} is a symbolic link: nothing was installed. Move it away, then install again\n"
    assert done.stderr == refusal
    assert sorted(tmp_path.rglob("*")) == before and users.read_text() == "the user's own file\n"


def test_uninstall_removes_nothing_through_a_symbolic_link(tmp_path):
    """An installed icon replaced by a link to the user's copy of it: the link and the copy stay."""
    home = tmp_path / "share"
    env = {**os.environ, "XDG_DATA_HOME": str(home)}
    assert install_desktop(env).returncode == 0
    icon = home / "icons" / "hicolor" / "32x32" / "apps" / "mlm-studio.png"
    copy = tmp_path / "my-icon.png"
    copy.write_bytes(icon.read_bytes())  # the same bytes as installed
    icon.unlink()
    icon.symlink_to(copy)
    done = install_desktop(env, "--uninstall")
    assert done.returncode == 0 and f"Kept: {icon} is a symbolic link." in done.stdout
    assert icon.is_symlink() and copy.read_bytes() == icon_png(32).read_bytes()
    assert sorted(p for p in home.rglob("*") if p.is_file() or p.is_symlink()) == [icon]


def test_an_installation_by_an_earlier_version_is_removed_only_where_it_is_as_written(tmp_path):
    """Without a record, a file counts as installed when it is exactly what installation writes."""
    home = tmp_path / "share"
    env = {**os.environ, "XDG_DATA_HOME": str(home)}
    assert install_desktop(env).returncode == 0
    (home / "mlm-studio" / RECORD).unlink()
    entry = home / "applications" / DESKTOP_ENTRY
    entry.write_text(entry.read_text().replace("Exec=", "Exec=/an/earlier/python -m mlm_studio gui # "))
    done = install_desktop(env, "--uninstall")
    assert done.returncode == 0 and f"Kept: {entry} is not what MLM Studio writes." in done.stdout
    assert sorted(p for p in home.rglob("*") if p.is_file()) == [entry]


def launched(entry: Path, answers: Path, env: dict) -> list[str]:
    """What the command of the launcher entry `entry` was started with, by GLib's launcher (`gio launch`), read
    from the FIFO `answers` that the command writes its arguments to (a minute at most)."""
    if shutil.which("gio") is None:
        pytest.skip("GLib's gio is not installed here")
    fd = os.open(answers, os.O_RDONLY | os.O_NONBLOCK)  # opened before any writer: no end of file until one closes
    launcher = subprocess.run(["gio", "launch", str(entry)], env=env, capture_output=True, text=True, timeout=60)
    assert launcher.returncode == 0, launcher.stderr
    received = b""
    with os.fdopen(fd, "rb") as started:
        while select.select([started], [], [], 60)[0]:
            chunk = started.read()
            if not chunk:
                break
            received += chunk
    return received.decode().split("\0")[:-1]


def fake_command(folder: Path, name: str, answers: Path) -> Path:
    """An executable that writes its own path and its arguments, NUL-separated, to `answers`."""
    folder.mkdir(exist_ok=True)
    os.mkfifo(answers)
    fake = folder / name
    fake.write_text(f"#!/bin/sh\nprintf '%s\\0' \"$0\" \"$@\" > '{answers}'\n")
    fake.chmod(0o755)
    return fake


def test_the_launcher_command_is_quoted_so_a_path_with_a_space_runs(tmp_path):
    """The installed entry's Exec= line runs the command from a folder whose name has a space."""
    fake = fake_command(tmp_path / "my tools", "mlm-studio", tmp_path / "answers")
    home = tmp_path / "share"
    env = {**os.environ, "XDG_DATA_HOME": str(home), "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    assert install_desktop(env).returncode == 0
    entry = home / "applications" / DESKTOP_ENTRY
    [value] = [line[len("Exec=") :] for line in entry.read_text().splitlines() if line.startswith("Exec=")]
    assert value == f'"{fake}" gui' and shlex.split(value) == [str(fake), "gui"]
    assert launched(entry, tmp_path / "answers", env) == [str(fake), "gui"]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("a b", ["gui"]), ('say "hi" $HOME `id`', ["tab\there", "semi;colon"]), ("back\\slash", ["it's", "100%", "%f"])],
)
def test_exec_values_are_read_back_as_the_command_by_glib(tmp_path, name, arguments):
    fake = fake_command(tmp_path / "bin", name, tmp_path / "answers")
    entry = tmp_path / "test.desktop"
    exec_line = exec_value([str(fake), *arguments])
    entry.write_text(f"[Desktop Entry]\nType=Application\nName=Test\nExec={exec_line}\n", encoding="utf-8")
    assert launched(entry, tmp_path / "answers", dict(os.environ)) == [str(fake), *arguments]


@pytest.mark.skipif(sys.platform != "linux", reason="the launcher entry belongs in Linux's XDG data folder")
def test_a_relative_xdg_data_home_is_ignored(tmp_path):
    """The XDG spec: a relative path in XDG_DATA_HOME is invalid and ignored; ~/.local/share is used."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": "share", "PYTHONPATH": str(SOURCES.parent)}
    done = install_desktop(env, cwd=work)
    share = home / ".local" / "share"
    assert done.returncode == 0 and f"under {share}:" in done.stdout, done.stderr
    assert (share / "applications" / DESKTOP_ENTRY).is_file() and list(work.iterdir()) == []
    assert (share / "mlm-studio" / RECORD).is_file()
    done = install_desktop(env, "--uninstall", cwd=work)
    assert done.returncode == 0 and not any(path.is_file() for path in home.rglob("*"))


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
