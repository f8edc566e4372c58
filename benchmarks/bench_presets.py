"""Which preset learns more per second: each trains on the built-in corpus for the same wall-clock budget (a
time budget, so each schedule follows the clock) and is scored by the same held-out evaluation (the same
validation blocks, the same fixed masking) every 100 steps.

Run: python benchmarks/bench_presets.py [--minutes 6] [--presets quickstart modern]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.presets import preset
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.runs.records import EvalRecord
from mlm_studio.core.training.runs import NewRun, prepare_trainer


def accuracy_by(evals: list[EvalRecord], seconds: float) -> str:
    """The last evaluation's accuracy within `seconds` of the start."""
    done = [r for r in evals if r.elapsed <= seconds]
    return f"{done[-1].accuracy:.1%}" if done else "—"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=6.0)
    parser.add_argument("--presets", nargs="+", default=["quickstart", "modern"])
    args = parser.parse_args()
    seconds = args.minutes * 60
    corpus = load_corpus([ensure_builtin_corpus()])
    tokenizer = train_tokenizer(corpus.iter_documents(), preset(args.presets[0]).tokenizer, corpus.documents)
    marks = [seconds / 6, seconds / 3, seconds / 2, seconds]
    print(f"Presets on the built-in corpus, {args.minutes:g} minutes each; {machine()}")
    print("| preset | family | parameters | steps | " + " | ".join(f"acc. at {m:.0f} s" for m in marks) + " | top-5 |")
    print("|---|---|---|---|" + "---|" * len(marks) + "---|")
    for name in args.presets:
        chosen = preset(name)
        config = replace(chosen, training=replace(chosen.training, time_budget=seconds, eval_interval=100))
        with tempfile.TemporaryDirectory() as tmp:
            trainer = prepare_trainer(Path(tmp) / name, begin=lambda config=config: NewRun(config, corpus, tokenizer))
            model = trainer.run_dir.config.model  # with the tokenizer's vocabulary
            evals = [r for r in trainer.run() if isinstance(r, EvalRecord)]
        cells = " | ".join(accuracy_by(evals, m) for m in marks)
        print(
            f"| {name} | {FAMILIES[config.model.family].title} | {model.parameter_count() / 1e6:.2f} M | "
            f"{evals[-1].step:,} | {cells} | {evals[-1].top5_accuracy:.1%} |",
            flush=True,
        )


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
