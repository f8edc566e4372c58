"""A bug's traceback kept in the cache's crashes folder: each one in a file of its own, however close together."""

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
