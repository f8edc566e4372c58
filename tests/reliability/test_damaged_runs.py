"""Scenario 17: damaged run files, through the terminal: each gets a message naming the file and what to do,
or is repaired (a stray metrics line is skipped, a damaged token cache rebuilt); never a traceback."""

import json
import os

import pytest

from mlm_studio.core.data.dataset import tokenize_corpus
from mlm_studio.core.runs.run_folder import RunDir
from tests.command import mlm_studio


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
        ([1, 2, 3], "state.json is not a JSON object; "),
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
        advice = "move this checkpoint folder out of" if args[0] == "train" else "newest whole checkpoint of its run"
        assert ("update MLM Studio" if "newer" in words else advice) in done.stderr


def test_a_truncated_token_cache_is_rebuilt(small_corpus, small_tokenizer, tmp_path):
    first = tokenize_corpus(small_corpus, small_tokenizer, root=tmp_path)
    expected = first.ids.copy()
    ids = first.folder / "ids.bin"
    del first
    ids.write_bytes(ids.read_bytes()[:100])
    again = tokenize_corpus(small_corpus, small_tokenizer, root=tmp_path)
    assert (again.ids == expected).all()


def folder_bytes(folder):
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def trained_on_a_copy(tmp_path, corpus_file):
    """A run trained through the terminal on a copy of the corpus file: (the copy, the run), the copy free to change."""
    from tests.core.helpers import config_file

    text = tmp_path / "mine.txt"
    text.write_text(corpus_file.read_text(encoding="utf-8"), encoding="utf-8")
    run = tmp_path / "run"
    done = mlm_studio("train", "--config", str(config_file(tmp_path)), "--corpus", str(text), "--out", str(run))
    assert done.returncode == 0, done.stderr
    return text, run


def test_resuming_on_another_corpus_or_a_changed_one_is_refused_and_changes_nothing(tmp_path, corpus_file):
    text, run = trained_on_a_copy(tmp_path, corpus_file)
    other = tmp_path / "other.txt"
    other.write_text("a different text entirely\n\nwith two documents\n", encoding="utf-8")
    before = folder_bytes(run)

    done = mlm_studio("train", "--resume", str(run), "--corpus", str(other), "--max-steps", "20")
    assert done.returncode == 1 and "cannot resume run on another corpus" in done.stderr and "other.txt" in done.stderr
    assert folder_bytes(run) == before

    with open(text, "a", encoding="utf-8") as f:
        f.write("\n\nOne more paragraph, added after the run started.\n")
    done = mlm_studio("train", "--resume", str(run), "--max-steps", "20")
    assert done.returncode == 1 and "its corpus changed since the run started" in done.stderr
    assert str(text) in done.stderr
    assert folder_bytes(run) == before


def test_resuming_for_more_steps_says_so_and_records_it(run_copy):
    done = mlm_studio("train", "--resume", str(run_copy), "--max-steps", "10")
    assert done.returncode == 0, done.stderr
    assert "resumed with training.max_steps: 8 → 10" in done.stderr
    changed = [r for r in RunDir(run_copy).read_metrics() if r["type"] == "changed"]
    assert changed == [{"type": "changed", "step": 8, "message": "resumed with training.max_steps: 8 → 10"}]


@pytest.mark.parametrize("damage", ["cut short", "removed"])
def test_a_resume_of_a_run_whose_tokenizer_cannot_be_read_writes_nothing(run_copy, damage):
    """Refused before its new length is saved in config.toml or recorded as a change in metrics.jsonl."""
    tokenizer = run_copy / "tokenizer.json"
    if damage == "removed":
        tokenizer.unlink()
    else:
        tokenizer.write_bytes(tokenizer.read_bytes()[:50])
    before = folder_bytes(run_copy)
    done = mlm_studio("train", "--resume", str(run_copy), "--max-steps", "10")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "tokenizer.json" in done.stderr and done.stderr.count("\n") == 1
    assert folder_bytes(run_copy) == before


def test_a_corpus_file_touched_but_not_changed_resumes_and_one_edited_to_the_same_size_is_refused(
    tmp_path, corpus_file
):
    text, run = trained_on_a_copy(tmp_path, corpus_file)
    stamp = text.stat()
    os.utime(text, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))  # a copy or a touch: the same bytes, a new date
    done = mlm_studio("train", "--resume", str(run), "--max-steps", "10")
    assert done.returncode == 0, done.stderr

    content = text.read_bytes()
    text.write_bytes(content.replace(b"a", b"b", 1))  # one letter changed: the same size
    assert text.stat().st_size == len(content)
    before = folder_bytes(run)
    done = mlm_studio("train", "--resume", str(run), "--max-steps", "12")
    assert done.returncode == 1 and "its corpus changed since the run started" in done.stderr
    assert f"{text.resolve()} has other contents" in done.stderr
    assert folder_bytes(run) == before


@pytest.mark.parametrize("vocabulary", [400, 500], ids=["another of the same size", "a larger one"])
def test_a_resume_of_a_run_whose_tokenizer_was_replaced_is_refused_and_writes_nothing(
    run_copy, small_corpus, vocabulary
):
    """Another tokenizer.json put in the run's place: of the same size it would train on silently other ids; larger,
    it was refused only after the new length was saved."""
    from mlm_studio.core.config.sections import TokenizerConfig
    from mlm_studio.core.data.tokenizer import train_tokenizer

    texts = [text[::-1] for text in small_corpus.iter_documents()]  # other text: other pieces
    train_tokenizer(iter(texts), TokenizerConfig(vocab_size=vocabulary), len(texts)).save(run_copy / "tokenizer.json")
    before = folder_bytes(run_copy)
    done = mlm_studio("train", "--resume", str(run_copy), "--max-steps", "10")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    problem = "is not the one the run started with" if vocabulary == 400 else "more than the model's"
    assert f"{run_copy / 'tokenizer.json'} " in done.stderr and problem in done.stderr
    assert done.stderr.endswith("put the run's own back, or start a new run\n")
    assert folder_bytes(run_copy) == before


@pytest.mark.parametrize("replacement", ["pipe", "folder"])
def test_a_resume_whose_corpus_file_became_a_pipe_or_a_folder_is_refused_at_once(tmp_path, corpus_file, replacement):
    """A pipe would be read without end by the check of its contents."""
    text, run = trained_on_a_copy(tmp_path, corpus_file)
    text.unlink()
    os.mkfifo(text) if replacement == "pipe" else text.mkdir()
    before = folder_bytes(run)
    done = mlm_studio("train", "--resume", str(run), "--max-steps", "10")
    assert done.returncode == 1 and f"{text.resolve()} is no longer a regular file" in done.stderr
    assert folder_bytes(run) == before
