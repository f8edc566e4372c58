"""The one rule for what MLM Studio replaces or removes: files its manifest lists, as written, never through a link."""

import json

import pytest

from mlm_studio.core.storage.owned import MANIFEST, NotOurs, OwnedFolder


@pytest.fixture
def folder(tmp_path):
    """A folder with two files MLM Studio wrote (one in a sub-folder) and their manifest."""
    root = tmp_path / "ours"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("written")
    (root / "sub" / "b.txt").write_text("written too")
    OwnedFolder(root).record_all()
    return root


def test_only_listed_files_as_written_are_removed_and_the_rest_is_said(folder, tmp_path):
    (folder / "sub" / "b.txt").write_text("changed by the user")
    (folder / "sub" / "mine.txt").write_text("the user's")
    owned = OwnedFolder(folder)
    assert owned.strangers() == ["sub/mine.txt"]
    removed, kept = owned.remove()
    assert removed == ["a.txt"] and kept == [f"{folder / 'sub' / 'b.txt'} changed since MLM Studio wrote it"]
    owned.save()
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == ["sub", "sub/b.txt", "sub/mine.txt"]


def test_a_folder_on_the_way_replaced_by_a_link_is_never_followed(folder, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (folder / "sub").rename(elsewhere)  # the very file MLM Studio wrote, now reached through a link
    (folder / "sub").symlink_to(elsewhere, target_is_directory=True)
    owned = OwnedFolder(folder)
    assert owned.why_not_ours("sub/b.txt") == f"{folder / 'sub'} is a symbolic link"
    assert owned.remove() == (["a.txt"], [f"{folder / 'sub'} is a symbolic link"])
    assert (elsewhere / "b.txt").read_text() == "written too"


def test_a_manifest_naming_a_file_outside_its_folder_is_refused(folder, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("written")  # the same bytes as a.txt: only the name protects it
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"]["../victim.txt"] = manifest["files"]["a.txt"]
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(NotOurs, match=r"lists '\.\./victim\.txt', outside"):
        OwnedFolder(folder)
    (folder / MANIFEST).write_text("{not json")
    with pytest.raises(NotOurs, match=rf"{folder / MANIFEST} cannot be read .*nothing was changed"):
        OwnedFolder(folder)
    assert victim.read_text() == "written" and (folder / "a.txt").is_file()
