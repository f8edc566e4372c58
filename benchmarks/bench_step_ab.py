"""Our training step, A against B: two trainers on the same blocks, one with the preset's configuration (A) and one
with some fields changed (B), their steps alternated (A, B, A, B, …) on the same batches, each step timed alone.
The first steps of each (warm-up; for B with `training.compile=true` they hold the compilation) are timed apart.

Run: python benchmarks/bench_step_ab.py --b training.compile=true [--shape modern] [--steps 20] [--warmup 3]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", str(getattr(os, "process_cpu_count", os.cpu_count)()))

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ceiling import SHAPES, load
from bench_like_with_like import corpus_files, setting
from common import machine

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.training.runs import NewRun, prepare_trainer


def timed(trainer, step: int) -> float:
    trainer.step = step
    start = time.perf_counter()
    trainer.train_step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=tuple(SHAPES), default="modern")
    parser.add_argument("--b", dest="changes", type=setting, action="append", required=True, metavar="FIELD=VALUE")
    parser.add_argument("--steps", type=int, default=20, help="timed steps of each side")
    parser.add_argument("--warmup", type=int, default=3, help="steps of each side before the timed ones")
    args = parser.parse_args()
    corpus = load_corpus(corpus_files("builtin"))
    a = preset(DEFAULT_PRESET).with_values(SHAPES[args.shape])
    b = a.with_values(dict(args.changes))
    tokenizer = train_tokenizer(corpus.iter_documents(), a.tokenizer, corpus.documents)
    before = load()
    with tempfile.TemporaryDirectory() as tmp:
        trainers = {
            name: prepare_trainer(Path(tmp) / name, begin=lambda config=config: NewRun(config, corpus, tokenizer))
            for name, config in (("A", a), ("B", b))
        }
        warmup = {name: [timed(trainer, n) for n in range(args.warmup)] for name, trainer in trainers.items()}
        seconds: dict[str, list[float]] = {"A": [], "B": []}
        for n in range(args.steps):
            for name, trainer in trainers.items():
                seconds[name].append(timed(trainer, args.warmup + n))
    changes = ", ".join(f"{key}={value}" for key, value in args.changes)
    print(f"\n{args.shape}; B: {changes}; {machine()}; load average {before} before, {load()} after")
    for name, times in seconds.items():
        ms = [s * 1e3 for s in times]
        first = ", ".join(f"{s:.2f}" for s in warmup[name])
        print(
            f"{name}: min {min(ms):.0f} ms, median {statistics.median(ms):.0f} ms over {len(ms)} steps; "
            f"warm-up steps {first} s"
        )
        print(f"   each step, ms: {' '.join(f'{value:.0f}' for value in ms)}")


if __name__ == "__main__":
    main()
