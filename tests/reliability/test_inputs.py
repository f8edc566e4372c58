"""Scenarios 11–13: hostile corpus files, random configurations, odd fill-mask texts. Each gets the right
behaviour and a readable message; nothing is dropped without being counted."""

import codecs
import errno
import random
import string
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ConfigError, TokenizerConfig
from mlm_studio.core.data.corpus import CorpusError, load_corpus
from mlm_studio.core.data.dataset import tokenize_corpus
from mlm_studio.core.data.rows import MAX_VALUE_CHARS
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.evaluation.predict import MAX_MASKS, FillMask, PredictError
from mlm_studio.core.progress import Cancelled, Progress
from tests.command import mlm_studio

TEXT = "Naïve café owners read the menu.\n\nThe second paragraph has € and “quotes”.\n"


# --- 11. corpus files -------------------------------------------------------------------------------------
def png_bytes() -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + bytes(13) + b"\x00" * 64


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("empty.txt", b"", "no usable text"),
        ("blank.txt", b"  \n\t\n\r\n   ", "no usable text"),
        ("image.txt", png_bytes(), "binary file"),
        ("model.txt", struct.pack("<Q", 40) + b'{"a":{"dtype":"F32"}}' + bytes(64), "binary file"),
        ("lines.jsonl", b'{"text": 1}\n{not json\n[1, 2]\n', "no usable text (3 problem lines, first: line 1"),
        ("table.csv", b"title,body\na,b\n", "no column 'text'"),
    ],
)
def test_unusable_files_are_skipped_with_the_reason_and_good_files_kept(tmp_path, name, content, expected):
    bad, good = tmp_path / name, tmp_path / "good.txt"
    bad.write_bytes(content)
    good.write_text(TEXT, encoding="utf-8")
    corpus = load_corpus([bad, good])
    report = next(r for r in corpus.sources if r.path == bad)
    assert not report.loaded and expected in report.reason
    assert corpus.documents == 2
    with pytest.raises(CorpusError, match=name):
        load_corpus([bad])


@pytest.mark.parametrize(
    ("encoding", "prefix"),
    [("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE)],
)
def test_byte_order_marks_give_the_same_tokens_as_plain_utf8(tmp_path, small_tokenizer, encoding, prefix):
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_text(TEXT, encoding="utf-8")
    marked.write_bytes(prefix + TEXT.encode(encoding))
    a, b = load_corpus([plain]), load_corpus([marked])
    assert list(a.iter_documents()) == list(b.iter_documents())
    ids = [small_tokenizer.backend.encode(d).ids for d in (a, b) for d in [next(d.iter_documents())]]
    assert ids[0] == ids[1]


def test_cp1252_is_read_with_a_note(tmp_path):
    path = tmp_path / "old.txt"
    path.write_bytes(TEXT.replace("“", '"').replace("”", '"').encode("cp1252"))
    corpus = load_corpus([path])
    (report,) = corpus.sources
    assert report.loaded and report.encoding == "cp1252" and "read as cp1252" in report.encoding_note
    assert "café" in next(corpus.iter_documents())


def test_an_unreadable_file_is_reported_and_the_others_read(tmp_path, monkeypatch):
    """Permission denied (simulated: tests may run as root, who may read anything)."""
    locked, good = tmp_path / "locked.txt", tmp_path / "good.txt"
    locked.write_text(TEXT)
    good.write_text(TEXT)
    real_open = open

    def guarded_open(file, *args, **kwargs):
        if str(file) == str(locked):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", guarded_open)
    corpus = load_corpus([locked, good])
    report = next(r for r in corpus.sources if r.path == locked)
    assert not report.loaded and report.reason == "cannot be read (Permission denied)"
    assert corpus.documents == 2


def test_a_folder_of_thousands_of_small_files_is_read_whole_and_counted(tmp_path):
    folder = tmp_path / "many"
    for i in range(3000):
        sub = folder / f"part{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"doc{i}.txt").write_text(f"Document number {i} has five words.\n\nAnd a second paragraph {i}.")
    (folder / "notes.bin").write_bytes(b"\x00\x01")
    corpus = load_corpus([folder])
    loaded = [r for r in corpus.sources if r.loaded]
    assert len(loaded) == 3000 and corpus.documents == 6000
    assert corpus.words == sum(r.words for r in loaded) == 3000 * (6 + 5)
    assert [r.reason for r in corpus.sources if not r.loaded] == []  # unsupported kinds are not listed as read


@pytest.mark.slow
def test_a_50_mb_line_without_spaces_is_read_trained_on_and_tokenized_in_bounded_work(tmp_path):
    path = tmp_path / "line.txt"
    chance = random.Random(0)
    path.write_text("".join(chance.choices(string.ascii_letters + string.digits, k=50_000_000)) + "\n\nA short one.\n")
    corpus = load_corpus([path])
    assert corpus.documents == -(-50_000_000 // MAX_VALUE_CHARS) + 1  # the line in pieces of at most the bound
    tokenizer = train_tokenizer(corpus.iter_documents(), TokenizerConfig(vocab_size=200), corpus.documents)
    data = tokenize_corpus(corpus, tokenizer, root=tmp_path / "cache")
    first = data.ids[data.offsets[0] : data.offsets[1]]
    assert first.tolist() == [tokenizer.unk_id]  # WordPiece's answer for a word over 100 characters

    class CancelAtOnce(Progress):
        def report(self, done, total, message=""):
            self.cancel()

    for work in (
        lambda p: load_corpus([path], progress=p),
        lambda p: train_tokenizer(corpus.iter_documents(), TokenizerConfig(vocab_size=200), 2, p),
        lambda p: tokenize_corpus(corpus, tokenizer, p, root=tmp_path / "other-cache"),
    ):
        with pytest.raises(Cancelled):
            work(CancelAtOnce())


def test_long_words_encode_exactly_as_wordpiece_would(small_tokenizer):
    backend = small_tokenizer.backend
    for text in ("x" * 101, "a " + "b1" * 60 + " c", "中" * 150, "snake_" * 30, "word " * 10 + "z" * 500 + "."):
        expected = backend.encode(text, add_special_tokens=False)
        (got,) = small_tokenizer.encode_batch([text])
        assert got.ids.tolist() == expected.ids, text[:20]


# --- 12. configurations -----------------------------------------------------------------------------------
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
sections = st.sampled_from(["model", "data", "masking", "tokenizer", "training", "preset", "extra"])
field_names = st.sampled_from(
    ["hidden_size", "num_attention_heads", "max_seq_len", "rate", "mask_fraction", "strategy", "vocab_size",
     "learning_rate", "batch_size", "device", "precision", "schedule", "epochs", "unknown"]
)  # fmt: skip


@given(st.dictionaries(sections, st.dictionaries(field_names, values, max_size=4) | values, max_size=4))
def test_random_configurations_give_a_config_or_a_readable_error(raw):
    try:
        config = RunConfig.from_dict(raw, "random.toml")
    except ConfigError as exc:
        assert str(exc).startswith("random.toml") and "Traceback" not in str(exc)
    else:
        assert RunConfig.from_toml(config.to_toml()) == config


@given(st.text(max_size=200))
def test_random_toml_text_gives_a_config_or_a_readable_error(text):
    try:
        RunConfig.from_toml(text, "typed.toml")
    except ConfigError as exc:
        assert "typed.toml" in str(exc)


# --- 13. fill-mask input ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def predictor(finished_run):
    return FillMask.from_path(finished_run)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "no [MASK]"),
        ("   ", "no [MASK]"),
        ("The value of the list.", "no [MASK]"),
        ("[mask] in lower case is not a mask", "no [MASK]"),
        (" ".join(["[MASK]"] * (MAX_MASKS + 1)), f"at most {MAX_MASKS}"),
        ("word " * 100 + "[MASK]", "at most 64"),
    ],
)
def test_texts_that_cannot_be_scored_get_a_clear_answer(predictor, text, words):
    with pytest.raises(PredictError, match=words.replace("[", r"\[").replace("]", r"\]")):
        predictor.predict(text)


FRAKTUR = "\U0001d518\U0001d52b\U0001d526\U0001d520\U0001d52c\U0001d521\U0001d522"  # "Unicode" in Fraktur letters


@pytest.mark.parametrize(
    "text",
    [
        f"☃ [MASK] {FRAKTUR}",
        "[MASK]",
        "\x00\x07 [MASK] \u200b",
        " ".join(["[MASK]"] * MAX_MASKS),
    ],
)
def test_odd_but_valid_texts_are_scored(predictor, text):
    results = predictor.predict(text, top_k=3)
    assert len(results) == text.count("[MASK]") and all(len(r) == 3 for r in results)
    assert all(0 < c.score <= 1 for r in results for c in r)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("[training]\nepochs = inf", "epochs must be a finite number"),
        ("[training]\ntime_budget = nan", "time_budget must be a finite number"),
        ("[training]\nseed = 1180591620717411303424", "seed"),
        ("[training]\nseed = 4294967296", "seed must be between 0 and 4,294,967,295"),
        ('[training]\ndevice = "cuda:3"', "cuda:3"),
        ("[model]\nhidden_size = 10000000", "hidden_size must be between 8 and 16,384"),
        ("[training]\nbatch_size = 100000000", "training.batch_size must be between 1 and 65,536"),
    ],
)
def test_unusable_values_are_refused_before_any_work_naming_the_field(tmp_path, line, words):
    config = tmp_path / "bad.toml"
    config.write_text(line + "\n", encoding="utf-8")
    done = mlm_studio("train", "--config", config, "--out", tmp_path / "run")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert words in done.stderr
    assert not (tmp_path / "run").exists()  # refused before the folder, the corpus or the tokenizer


def test_a_pipe_named_as_a_corpus_is_refused_not_waited_on(tmp_path, corpus_file):
    import os

    fifo = tmp_path / "stream.txt"
    os.mkfifo(fifo)
    corpus = load_corpus([fifo, corpus_file])  # returns at once: nothing opens the pipe
    [skipped] = [s for s in corpus.sources if not s.loaded]
    assert skipped.path == fifo and "not a regular file" in skipped.reason
    assert corpus.documents > 0


def test_corpus_file_names_in_non_utf8_bytes_or_with_line_breaks_are_readable_in_the_card(tmp_path, corpus_file):
    """Linux file names are bytes: café.txt in Latin-1 is b'caf\\xe9.txt', which Python keeps as a surrogate."""
    import os

    from mlm_studio.core.interop.export import export_model
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer
    from tests.core.helpers import small_config

    named = os.fsencode(tmp_path) + b"/caf\xe9.txt"
    with open(named, "wb") as out:
        out.write(corpus_file.read_bytes())
    broken = tmp_path / "two\nlines `x`.txt"  # a line break and backticks: the card's sentence stays whole
    broken.write_text("One more paragraph of text.\n", encoding="utf-8")
    corpus = load_corpus([os.fsdecode(named), broken])
    tokenizer = train_tokenizer(corpus.iter_documents(), TokenizerConfig(vocab_size=400), corpus.documents)
    run = start_run(tmp_path / "run", small_config(max_steps=2, checkpoint_interval=2), corpus, tokenizer)
    list(Trainer(run, *training_blocks(run, corpus)).run())
    exported = export_model(run.path, tmp_path / "model")
    card = (exported / "README.md").read_text(encoding="utf-8")
    assert "Corpus: `caf\ufffd.txt`, ``two\\nlines `x`.txt``. Masking:" in card


# --- JSON nested 100,000 deep, in every file a user gives or a run holds ----------------------------------------
DEEP = "[" * 100_000 + "]" * 100_000
NESTED = "nested too deeply: lists or objects inside each other further than can be read"


def said_whole(message: str) -> str:
    """`message`, checked to say the nesting in its own words, not Python's recursion cut short."""
    assert NESTED in message and "recursion" not in message and "…" not in message, message
    return message


def test_a_question_answering_task_nested_100000_deep_is_said_in_a_sentence(finished_run, tmp_path):
    (tmp_path / "squad.json").write_text(DEEP)
    done = mlm_studio(
        "finetune", finished_run, "--task", tmp_path / "squad.json", "--kind", "qa", "--out", tmp_path / "ft"
    )
    assert done.returncode == 1 and not (tmp_path / "ft").exists()
    assert said_whole(done.stderr) == f"mlm-studio: squad.json: unreadable JSON ({NESTED})\n"


def test_a_task_line_nested_100000_deep_is_a_problem_of_its_line(tmp_path):
    from mlm_studio.core.data.labelled import read_labelled_file

    rows = ['{"text": "the file", "label": "a"}', '{"text": ' + DEEP + ', "label": "b"}', '{"text": "x", "label": "b"}']
    (tmp_path / "task.jsonl").write_text("\n".join(rows) + "\n")
    read = read_labelled_file(tmp_path / "task.jsonl", "classification")
    assert [example.inputs for example in read.examples] == [("the file",), ("x",)]
    assert said_whole(read.issues.summary()) == f"1 problem lines, first: line 2: {NESTED}"


def test_a_hugging_face_config_nested_100000_deep_is_said_in_a_sentence(tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(DEEP)
    done = mlm_studio("predict", tmp_path / "hf", "the [MASK] of a list")
    assert done.returncode == 1
    assert said_whole(done.stderr) == f"mlm-studio: config.json in hf cannot be read as JSON ({NESTED})\n"


def test_run_files_nested_100000_deep_are_said_damaged_or_their_line_left_out(run_copy):
    from mlm_studio.core.runs.run_folder import RunDir

    run = RunDir(run_copy)
    good = run.read_metrics()
    with open(run.metrics_path, "a") as metrics:
        metrics.write(DEEP + "\n")
    assert run.read_metrics() == good
    (run_copy / "task.json").write_text(DEEP)
    done = mlm_studio("predict", run_copy, "the file")
    assert done.returncode == 1
    assert said_whole(done.stderr) == f"mlm-studio: {run_copy / 'task.json'} is damaged: it is not JSON ({NESTED})\n"
    (run_copy / "task.json").unlink()
    (run.latest_checkpoint() / "state.json").write_text(DEEP)
    done = mlm_studio("train", "--resume", run_copy)
    assert done.returncode == 1 and f"state.json is damaged ({NESTED})" in said_whole(done.stderr)
