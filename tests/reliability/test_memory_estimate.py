"""The memory the Configuration panel announces is what training takes: the peak resident memory of a fresh
`mlm-studio train` process (the interpreter, PyTorch, the tokenizer, the data and training), as
benchmarks/bench_memory.py measures it for every preset and family (docs/performance.md); here two of them, run
by that benchmark in a process of its own (a child's ru_maxrss would otherwise carry this process's peak), each case
in a fresh cache that starts with the tests' built-in corpus (building it stays below training's peak: 932 and
933 MiB at `mini`, 539 and 553 MiB at `modern`, from a fresh cache and from one holding it)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlm_studio.core.storage.user_folders import CACHE_ENV

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's peak-memory counters")
def test_the_training_memory_estimate_is_within_a_quarter_of_the_process_peak(builtin_corpus):
    benchmark = [sys.executable, str(ROOT / "benchmarks" / "bench_memory.py"), "--steps", "3"]
    done = subprocess.run(
        [*benchmark, "--cases", "modern", "mini", "--corpus-from", os.environ[CACHE_ENV]],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ratios = {row[0]: float(row[1]) for row in re.findall(r"^\| (\S+) \|.*\| ([\d.]+) \| \d+ s \|$", done.stdout, re.M)}
    assert set(ratios) == {"modern", "mini"}, done.stdout
    assert all(0.75 < ratio < 1.25 for ratio in ratios.values()), done.stdout
