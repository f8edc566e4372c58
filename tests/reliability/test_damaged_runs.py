"""Scenario 17: damaged run files, through the terminal: each gets a message naming the file and what to do,
or is repaired (a stray metrics line is skipped, a damaged token cache rebuilt); never a traceback."""

import json
import subprocess
import sys

import pytest

from mlm_studio.core.checkpoint import RunDir
from mlm_studio.core.dataset import tokenize_corpus


def mlm_studio(*args):
    return subprocess.run([sys.executable, "-m", "mlm_studio", *args], capture_output=True, text=True, timeout=300)


def test_stray_lines_and_bytes_in_metrics_are_skipped_and_the_run_resumes(run_copy):
    run = RunDir(run_copy)
    good = run.read_metrics()
    with open(run.metrics_path, "ab") as f:
        f.write(b'\xff\xfe not json\n[1, 2]\n{"type": "step"}\n')
    assert run.read_metrics() == good
    done = mlm_studio("train", "--resume", str(run_copy), "--max-steps", "10")
    assert done.returncode == 0, done.stderr
    assert [r["step"] for r in run.read_metrics() if r["type"] == "step"] == list(range(1, 11))


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ([1, 2, 3], "state.json is not a JSON object; delete this checkpoint folder"),
        ({"format": 99, "step": 8, "tokens_seen": 1, "elapsed": 1.0}, "format 99, newer than this MLM Studio"),
        ({"format": 1, "step": "eight", "tokens_seen": 1, "elapsed": 1.0}, "step is 'eight'"),
        ({"format": 1, "step": 8}, "missing tokens_seen, elapsed"),
    ],
)
def test_a_state_json_of_the_wrong_shape_is_named(run_copy, state, words):
    latest = RunDir(run_copy).latest_checkpoint()
    (latest / "state.json").write_text(json.dumps(state))
    for args in (("train", "--resume", str(run_copy)), ("export", str(run_copy), str(run_copy.parent / "out"))):
        done = mlm_studio(*args)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert latest.name in done.stderr and words in done.stderr


def test_a_truncated_token_cache_is_rebuilt(small_corpus, small_tokenizer, tmp_path):
    first = tokenize_corpus(small_corpus, small_tokenizer, root=tmp_path)
    expected = first.ids.copy()
    ids = first.folder / "ids.bin"
    del first
    ids.write_bytes(ids.read_bytes()[:100])
    again = tokenize_corpus(small_corpus, small_tokenizer, root=tmp_path)
    assert (again.ids == expected).all()
