"""Whatever a single input holds, reading it stays within a memory ceiling: real bombs (one endless line,
compressed; a Parquet file with one 100 MB value; a task file with a 15-million-character text; a 100 MB line and
/dev/zero given to `predict`) are read in a child process whose address space is capped at what its imports took
plus `CEILING`, and each is read or refused with the reason, never a MemoryError."""

import bz2
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from mlm_studio.commands.text_lines import MAX_LINE_BYTES, TextLinesError, text_lines
from mlm_studio.core.data.rows import MAX_VALUE_CHARS
from mlm_studio.core.evaluation.vectors import MAX_TEXT_CHARS

ROOT = Path(__file__).resolve().parents[2]
CEILING = 512 << 20  # bytes of address space beyond the child's imports
BLOCK = 64 << 20  # one compressed member holds this many bytes of the endless line
MEMBERS = 6  # 384 MiB of one line: reading it whole (its bytes, then its text) needs more than the ceiling
COMPRESS = {".gz": lambda data: gzip.compress(data, 1), ".zst": zstandard.compress, ".bz2": bz2.compress}

PRELUDE = f"""
import json, resource, sys
import pyarrow, zstandard
pyarrow.set_cpu_count(1)
pyarrow.set_io_thread_count(1)
{{imports}}
size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (size + {CEILING}, size + {CEILING}))
"""
EPILOGUE = """
out["peak_mb"] = next(int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps(out))
"""  # VmHWM: this process's own resident peak (ru_maxrss carries the parent's over fork and exec)


def bounded(imports: str, body: str, *args, stdin=None) -> dict:
    """Run `body` after `imports` in a child capped at its imports' address space plus `CEILING` (reading `stdin`,
    a file or a pipe, where given); what it printed last as JSON, with its peak resident memory."""
    code = PRELUDE.format(imports=imports) + body + EPILOGUE
    env = dict(os.environ, PYTHONPATH=str(ROOT), MALLOC_ARENA_MAX="2", RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        stdin=stdin,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


SCAN = """
from mlm_studio.core.data.corpus import CorpusError, load_corpus
"""
SCAN_BODY = """
try:
    corpus = load_corpus([sys.argv[1]])
    out = dict(documents=corpus.documents, words=corpus.words, characters=corpus.characters)
except CorpusError as exc:
    out = dict(refused=str(exc))
"""


def endless_line(path: Path, jsonl: bool) -> Path:
    """One line of `MEMBERS` × `BLOCK` letters without a space (a JSON line never closed), as concatenated
    compressed members, which every decompressor reads on as one stream."""
    compress = COMPRESS[path.suffix]
    member = compress(b"a" * BLOCK)
    with open(path, "wb") as out:
        if jsonl:
            out.write(compress(b'{"text": "'))
        for _ in range(MEMBERS):
            out.write(member)
    return path


def test_the_endless_line_read_whole_does_not_fit_under_the_ceiling(tmp_path):
    """What the tests below prove needs this: a reader that takes the line whole runs out of memory there."""
    found = bounded(
        "import gzip",
        """
try:
    out = dict(read=len(gzip.open(sys.argv[1], "rt", encoding="utf-8").readline()))
except MemoryError:
    out = dict(read="MemoryError")
""",
        endless_line(tmp_path / "line.txt.gz", jsonl=False),
    )
    assert found["read"] == "MemoryError"


@pytest.mark.slow
@pytest.mark.parametrize("compression", [".zst", ".bz2"])  # .gz: scanned and tokenized below
def test_an_endless_text_line_is_read_in_bounded_documents(tmp_path, compression):
    found = bounded(SCAN, SCAN_BODY, endless_line(tmp_path / f"line.txt{compression}", jsonl=False))
    pieces = MEMBERS * BLOCK // MAX_VALUE_CHARS
    assert found["documents"] == found["words"] == pieces
    assert found["characters"] == MEMBERS * BLOCK
    assert found["peak_mb"] < CEILING >> 20


@pytest.mark.slow
@pytest.mark.parametrize("compression", list(COMPRESS))
def test_an_endless_json_line_is_refused_by_its_line_number(tmp_path, compression):
    found = bounded(SCAN, SCAN_BODY, endless_line(tmp_path / f"line.jsonl{compression}", jsonl=True))
    assert f"line.jsonl{compression}: no usable text" in found["refused"]
    assert f"line 1: longer than {MAX_VALUE_CHARS:,} characters; write one record per line" in found["refused"]
    assert found["peak_mb"] < CEILING >> 20


@pytest.mark.slow
def test_an_endless_line_is_scanned_and_tokenized_within_the_ceiling(tmp_path):
    path = endless_line(tmp_path / "line.txt.gz", jsonl=False)
    found = bounded(
        """
from mlm_studio.core.config.sections import TokenizerConfig
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.dataset import tokenize_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
""",
        """
corpus = load_corpus([sys.argv[1]])
tokenizer = train_tokenizer(["a few words to learn from"] * 20, TokenizerConfig(vocab_size=120))
tokens = tokenize_corpus(corpus, tokenizer, root=__import__("pathlib").Path(sys.argv[2]))
out = dict(scanned=[corpus.documents, corpus.words, corpus.characters], documents=tokens.documents,
           tokens=tokens.tokens)
""",
        path,
        tmp_path / "cache",
    )
    pieces = MEMBERS * BLOCK // MAX_VALUE_CHARS
    assert found["scanned"] == [pieces, pieces, MEMBERS * BLOCK]
    assert found["documents"] == found["tokens"] == pieces  # each piece a word too long to be one: [UNK]
    assert found["peak_mb"] < CEILING >> 20


def test_a_100_mb_parquet_value_is_a_problem_of_its_row_and_the_rest_is_read(tmp_path):
    path = tmp_path / "huge-value.parquet"
    pq.write_table(pa.table({"text": ["before", "word " * (20 << 20), "after"]}), path, compression="zstd")
    assert path.stat().st_size < 1 << 20
    found = bounded(
        SCAN,
        """
corpus = load_corpus([sys.argv[1]])
source = corpus.sources[0]
out = dict(documents=list(corpus.iter_documents()), issues=[str(issue) for issue in source.issues])
""",
        path,
    )
    assert found["documents"] == ["before", "after"]
    assert found["issues"] == [f"row 2: the 'text' value is longer than {MAX_VALUE_CHARS:,} characters; split it"]
    assert found["peak_mb"] < CEILING >> 20


def test_a_task_text_of_15_million_characters_is_read_and_encoded_within_the_ceiling(tmp_path):
    path = tmp_path / "task.jsonl"
    rows = [{"text": "the river flows " * 937_500, "label": "river"}, {"text": "the river bends", "label": "river"}]
    rows += [{"text": "money in the bank", "label": "money"}, {"text": "the bank lends", "label": "money"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    found = bounded(
        """
from dataclasses import replace
from mlm_studio.core.config.sections import ModelConfig, TokenizerConfig
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.evaluation.task_probe import read_task
from mlm_studio.core.evaluation.vectors import sentence_vectors
from mlm_studio.core.models.build import build_model
""",
        """
task = read_task(sys.argv[1])
tokenizer = train_tokenizer(["the river flows", "money in the bank"] * 20, TokenizerConfig(vocab_size=120))
model = build_model(ModelConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=64))
vectors = sentence_vectors(model, tokenizer, task.texts)
out = dict(longest=max(map(len, task.texts)), shape=list(vectors.shape))
""",
        path,
    )
    assert found["shape"] == [4, 32]
    assert found["longest"] <= MAX_TEXT_CHARS  # kept up to what the model reads at most (its windows)
    assert found["peak_mb"] < CEILING >> 20


PREDICT = """
import contextlib, io
from mlm_studio.cli import main
import mlm_studio.commands.predict
"""
PREDICT_BODY = """
said, printed = io.StringIO(), io.StringIO()
with contextlib.redirect_stderr(said), contextlib.redirect_stdout(printed):
    code = main(["predict", *sys.argv[1:]])
out = dict(code=code, said=said.getvalue(), answered=len(printed.getvalue().splitlines()))
"""
TOO_LONG = (
    f"longer than {MAX_LINE_BYTES:,} bytes, the most read of one text; give one text a line, each at most that long"
)


def test_a_100_mb_line_given_to_predict_is_refused_by_its_number_the_lines_before_it_answered(finished_run, tmp_path):
    path = tmp_path / "texts.txt"
    with open(path, "w", encoding="utf-8") as out:
        out.write("the [MASK] of a list\n")
        for _ in range(100):
            out.write("word " * 200_000)  # a megabyte
        out.write("\nthe [MASK] of a file\n")
    found = bounded(PREDICT, PREDICT_BODY, finished_run, "--text-file", path)
    assert found["said"] == f"mlm-studio: {path}, line 2: {TOO_LONG}\n"
    assert (found["code"], found["answered"]) == (1, 1)
    assert found["peak_mb"] < CEILING >> 20


def test_dev_zero_given_to_predict_is_refused_at_once_as_a_file_or_at_its_first_line_through_a_pipe(finished_run):
    found = bounded(PREDICT, PREDICT_BODY, finished_run, "--text-file", "/dev/zero")
    device = "/dev/zero: a device, not a file of texts one a line; give a file, or - to read standard input"
    assert (found["code"], found["said"]) == (1, f"mlm-studio: {device}\n")
    endless = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE)  # a real pipe that never ends
    try:
        found = bounded(PREDICT, PREDICT_BODY, finished_run, "-", stdin=endless.stdout)
    finally:
        endless.stdout.close()  # the writer then meets a closed pipe and ends
        endless.wait(timeout=60)
    assert (found["code"], found["said"]) == (1, f"mlm-studio: standard input, line 1: {TOO_LONG}\n")
    assert found["peak_mb"] < CEILING >> 20


def test_the_longest_line_predict_takes_is_tokenized_within_the_ceiling(finished_run, tmp_path):
    """A token a byte (every character a piece of its own): the most a line allowed can cost."""
    path = tmp_path / "dots.txt"
    path.write_text("." * (MAX_LINE_BYTES - len("[MASK]")) + "[MASK]\r\n")
    found = bounded(PREDICT, PREDICT_BODY, finished_run, "--text-file", path)
    assert found["code"] == 1 and found["said"].startswith(f"mlm-studio: {path}, line 1: The text is ")
    assert "tokens long; this model reads at most 64" in found["said"]
    assert found["peak_mb"] < CEILING >> 20


def test_a_line_is_taken_up_to_the_bound_its_line_end_aside(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_bytes(b"a" * MAX_LINE_BYTES + b"\r\n" + b"b" * (MAX_LINE_BYTES + 1) + b"\n")
    lines = text_lines(path)
    number, text = next(lines)
    assert number == 1 and text == "a" * MAX_LINE_BYTES
    with pytest.raises(TextLinesError, match=f"^{path}, line 2: longer than"):
        next(lines)
