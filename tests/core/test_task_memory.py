"""A large labelled file in bounded memory: the probe reads a fixed sample of its texts, fine-tuning keeps its
examples compact, and reading and encoding report their progress."""

import random
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

from mlm_studio.core.data.labelled import Example, Sample
from mlm_studio.core.evaluation import task_probe
from mlm_studio.core.finetune.examples import encode_examples, encode_texts
from mlm_studio.core.finetune.setup import read_task
from mlm_studio.core.progress import Progress

WORDS = "river water fish boat shore flows muddy stream money bank rates loan credit pays market price".split()


def _task(path, rows, labels=("river", "money"), seed=0):
    """`rows` texts of 30 words each, numbered (so all distinct), the label of each in turn from `labels`."""
    rng = random.Random(seed)
    lines = (f"{' '.join(rng.choices(WORDS, k=30))} {i},{labels[i % len(labels)]}\n" for i in range(rows))
    path.write_text("text,label\n" + "".join(lines), encoding="utf-8")
    return path


class Recorded(Progress):
    def __init__(self):
        super().__init__()
        self.messages = []

    def report(self, done, total, message=""):
        self.messages.append(message)


def test_a_sample_keeps_the_same_distinct_texts_whatever_their_order_each_under_its_first_label():
    examples = [Example(i, (f"text {i % 300}",), (f"label {i}",)) for i in range(900)]  # 300 texts, 3 copies each
    forward, backward = Sample(50), Sample(50)
    for example in examples:
        forward.append(example)
    for example in reversed(examples):
        backward.append(example)
    kept, kept_backward = forward.examples(), backward.examples()
    assert forward.offered == 900 and len(kept) == 50 and len({e.inputs for e in kept}) == 50
    assert [e.inputs for e in kept] == [e.inputs for e in kept_backward]
    assert all(example.row < 300 for example in kept)  # each text's first copy, under its label
    assert [e.row for e in kept] == sorted(e.row for e in kept)


def test_the_probe_reads_a_sample_of_a_large_file_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(task_probe, "PROBE_TEXTS", 200)
    labels = ["river", "money"] * 1_450 + [f"rare {i}" for i in range(100)]  # 100 labels of a single text
    path = _task(tmp_path / "big.csv", 3_000, labels)
    task = task_probe.read_task(path)
    assert task.sampled_from == 3_000 and set(task.labels) == {"river", "money"} and 190 <= len(task.texts) <= 200
    note = f"probed a fixed sample of {len(task.texts):,} of its 3,000 labelled texts (distinct ones, at most 200, "
    assert task_probe.sample_note(task) == (
        f"big.csv: {note}the same on every run; a label with a single text in it left out), so that time and memory "
        "stay bounded"
    )
    assert task_probe.read_task(path).texts == task.texts
    small = task_probe.read_task(_task(tmp_path / "small.csv", 150))
    assert small.sampled_from == 0 and len(small.texts) == 150 and task_probe.sample_note(small) == ""


@pytest.mark.slow  # a large file read in a fresh interpreter
def test_the_probes_reading_of_a_large_file_takes_little_memory_beyond_its_sample(tmp_path):
    """28 MB of texts (150,000 rows) read by the probe, in a process of its own: the peak of its memory grows by
    less than 40 MB (19 MB here; all the rows held took 80 MB more)."""
    path = _task(tmp_path / "big.csv", 150_000)
    script = textwrap.dedent(f"""
        from pathlib import Path
        from mlm_studio.core.evaluation.task_probe import read_task
        def peak():  # this process's most memory resident so far, in KB
            status = Path("/proc/self/status").read_text()
            return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])
        before = peak()
        task = read_task({str(path)!r})
        print(len(task.texts), task.sampled_from, (peak() - before) >> 10)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    texts, rows, grown = map(int, done.stdout.split())
    assert (texts, rows) == (20_000, 150_000) and grown < 40, f"{grown} MB"


def test_fine_tuning_keeps_an_encoded_example_in_a_few_hundred_bytes(tmp_path, small_tokenizer):
    files, _ = read_task("classification", _task(tmp_path / "task.csv", 3_000), None, None, None)
    examples = files[0].examples
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        encoded = encode_examples(small_tokenizer, examples, {"money": 0, "river": 1}, "classification", 64)
        size = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 64 ids: 1,540 bytes an example as arrays of their own, about 400 as compact arrays of their own
    assert len(encoded) == 3_000 and size / 3_000 < 256, size / 3_000  # 194 here: 2 bytes an id
    assert encoded.ids.flat.dtype == np.uint16 and encoded.types is None  # single texts: every segment 0
    for i in (0, 1023, 1024, 2999):  # the texts encoded together, across batches, as each alone
        ids, types, _ = encode_texts(small_tokenizer, examples[i].inputs, 64)
        assert encoded.ids[i].tolist() == ids and types == [0] * len(ids)


def test_reading_and_encoding_a_task_report_their_progress(tmp_path, small_tokenizer):
    progress = Recorded()
    files, _ = read_task("classification", _task(tmp_path / "task.csv", 5_000), None, None, None, progress)
    encode_examples(small_tokenizer, files[0].examples, {"money": 0, "river": 1}, "classification", 64, progress)
    assert progress.messages.count("Reading task.csv") == 2 and progress.messages.count("Encoding 5,000 examples") == 5
    progress.cancel()
    with pytest.raises(Exception, match="cancelled by the user"):
        read_task("classification", tmp_path / "task.csv", None, None, None, progress)


def test_scoring_the_validation_and_test_examples_reports_its_progress(tmp_path, trained_run):
    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.setup import prepare_finetuner

    progress = Recorded()
    task = _task(tmp_path / "task.csv", 400)
    options = FinetuneOptions("classification", task, epochs=1, batch_size=8, device="cpu")
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), options, progress=progress).run())
    assert records[-1].reason == "completed"
    said = [m for m in progress.messages if not m.startswith(("Reading", "Encoding", "Finding"))]
    assert said == ["Scoring the 40 validation examples"] * 5 + ["Testing the best weights on 40 test examples"] * 5
