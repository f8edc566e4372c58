"""A bug's traceback kept in the cache's crashes folder: each one in a file of its own, however close together."""

import os
import time

from mlm_studio.core.storage import crash_report
from mlm_studio.core.storage.crash_report import bug_said


def test_two_bugs_in_the_same_second_keep_both_tracebacks(tmp_path, monkeypatch):
    """The window's background tasks and a training run in it can fail together: one traceback never replaces
    another."""
    monkeypatch.setenv("MLM_STUDIO_CACHE", str(tmp_path / "cache"))
    second = time.strftime("%Y%m%d-%H%M%S")
    monkeypatch.setattr(crash_report.time, "strftime", lambda *_: second)  # both in one second, wherever it ends
    said = [bug_said(error, "not kept") for error in (KeyError("hidden_size"), ValueError("shapes (3,) (4,)"))]
    kept = sorted((tmp_path / "cache" / "crashes").iterdir())
    assert len(kept) == 2 and all(str(path) in sentence for path, sentence in zip(kept, said, strict=True))
    assert [path.read_text(encoding="utf-8").splitlines()[-1] for path in kept] == [
        "KeyError: 'hidden_size'",
        "ValueError: shapes (3,) (4,)",
    ]


def test_a_bug_naming_a_file_whose_name_is_not_utf8_is_said_and_its_traceback_kept(tmp_path, monkeypatch):
    """A file name that is not UTF-8 reaches Python as lone surrogates (`os.fsdecode`): a bug that names one is
    still said as a bug, its traceback kept, never a second error raised while saying the first."""
    monkeypatch.setenv("MLM_STUDIO_CACHE", str(tmp_path / "cache"))
    name = os.fsdecode(b"/data/caf\xe9.txt")
    said = bug_said(ValueError(f"no pieces in {name}"), "not kept")
    (kept,) = (tmp_path / "cache" / "crashes").iterdir()
    assert str(kept) in said and "This is a bug in MLM Studio" in said
    assert kept.read_text(encoding="utf-8").splitlines()[-1] == "ValueError: no pieces in /data/caf\\udce9.txt"
