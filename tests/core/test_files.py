"""The one way files and folders are written: a crash or an error leaves the old one or the new one."""

import errno
import json
import os
import stat
import threading

import pytest

from mlm_studio.core.storage.files import (
    append_whole,
    atomic_write_folder,
    atomic_write_json,
    atomic_write_text,
    umask,
)
from tests.reliability.disks import fill


def test_text_is_written_whole_from_a_string_or_from_pieces(tmp_path):
    path = atomic_write_text(tmp_path / "a.txt", "one\n")
    assert path.read_text() == "one\n"
    atomic_write_text(path, (f"{n}\n" for n in range(3)))
    assert path.read_text() == "0\n1\n2\n"
    atomic_write_json(tmp_path / "a.json", {"step": 3})
    assert json.loads((tmp_path / "a.json").read_text()) == {"step": 3}


def test_a_failing_writer_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = atomic_write_text(tmp_path / "a.txt", "old")

    def pieces():
        yield "new, half"
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        atomic_write_text(path, pieces())
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_a_folder_is_replaced_whole_or_not_at_all(tmp_path):
    target = tmp_path / "export"
    atomic_write_folder(target, lambda folder: (folder / "v").write_text("1"))

    def broken(folder):
        (folder / "v").write_text("2")
        raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError):
        atomic_write_folder(target, broken)
    assert (target / "v").read_text() == "1" and [p.name for p in tmp_path.iterdir()] == ["export"]
    atomic_write_folder(target, lambda folder: (folder / "v").write_text("3"))
    assert (target / "v").read_text() == "3" and [p.name for p in tmp_path.iterdir()] == ["export"]


def test_two_threads_writing_the_same_folder_do_not_share_a_temporary_folder(tmp_path):
    target, errors = tmp_path / "cache", []
    both_inside = threading.Barrier(2, timeout=10)

    def fill(folder):
        (folder / "ids").write_text(threading.current_thread().name)
        both_inside.wait()  # each thread is inside its own temporary folder at the same time
        assert (folder / "ids").read_text() == threading.current_thread().name

    def write():
        try:
            atomic_write_folder(target, fill)
        except Exception as exc:  # collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=write, name=f"writer{n}") for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and (target / "ids").read_text() in ("writer0", "writer1")
    assert [p.name for p in tmp_path.iterdir()] == ["cache"]


def test_the_umask_is_read_as_it_was_set():
    before = os.umask(0o027)
    try:
        assert umask() == 0o027 and umask() == 0o027
    finally:
        os.umask(before)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_atomic_writes_give_what_the_umask_allows(tmp_path, mask):
    before = os.umask(mask)
    try:
        atomic_write_text(tmp_path / "a.txt", "one")
        atomic_write_folder(tmp_path / "folder", lambda folder: (folder / "v").write_text("1"))
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "folder").stat().st_mode) == 0o777 & ~mask
    assert stat.S_IMODE((tmp_path / "folder" / "v").stat().st_mode) == 0o666 & ~mask


def test_a_write_the_disk_refuses_names_the_file_meant_not_its_temporary(tmp_path, tmpfs):
    disk = tmpfs(tmp_path / "disk", "size=16k")
    with open(disk / "filler", "wb", buffering=0) as filler, pytest.raises(OSError):
        while True:
            filler.write(b"u" * 4096)
    big = "x" * 10_000
    writes = {
        disk / "config.toml": lambda: atomic_write_text(disk / "config.toml", big),
        disk / "out": lambda: atomic_write_folder(disk / "out", lambda folder: (folder / "w").write_text(big)),
        disk / "out" / "c.json": lambda: atomic_write_folder(
            disk / "out", lambda f: atomic_write_json(f / "c.json", big)
        ),
    }
    for named, write in writes.items():
        with pytest.raises(OSError) as refused:
            write()
        assert (refused.value.errno, refused.value.filename) == (errno.ENOSPC, str(named))
    assert [p.name for p in disk.iterdir()] == ["filler"]


def test_lines_a_full_disk_refuses_are_not_appended_in_part(tmp_path, tmpfs):
    disk = tmpfs(tmp_path / "disk", "size=16k")
    path = disk / "metrics.jsonl"
    append_whole(path, "one\n")
    fill(disk)
    for lines in (1100, 5000):  # more than the room left in the file's page: part of it is written, then refused
        with pytest.raises(OSError):
            append_whole(path, "two\n" * lines)
        assert path.read_text() == "one\n"
    (disk / "filler.bin").unlink()
    append_whole(path, "three\n")
    assert path.read_text() == "one\nthree\n"
