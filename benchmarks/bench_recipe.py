"""Which recipe learns fastest on a CPU budget: the default preset, then one setting changed at a time, each
trained on the built-in corpus for the same wall-clock budget (the schedule follows the clock) and scored by the
same held-out evaluation at the end: the same validation blocks under the standard 15% masking, whatever rate
the run trained with, so the numbers compare.

Run: python benchmarks/bench_recipe.py [--minutes 2] [--preset modern] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.sections import MaskingConfig
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.masking import Masker
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.runs.records import StepRecord
from mlm_studio.core.training.runs import NewRun, prepare_trainer

# One change each from the preset; "preset" is the preset itself.
VARIANTS: dict[str, dict[str, object]] = {
    "preset": {},
    "masking 30%": {"masking.rate": 0.30},
    "masking 40%": {"masking.rate": 0.40},
    "learning rate 4e-3": {"training.learning_rate": 4e-3},
    "cosine schedule": {"training.schedule": "cosine"},
    "Adam β2 0.999": {"training.adam_beta2": 0.999},
    "batch 64": {"training.batch_size": 64},
    "bf16": {"training.precision": "bf16"},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--preset", default=DEFAULT_PRESET)
    parser.add_argument("--only", nargs="+", choices=VARIANTS, help="run these variants alone")
    args = parser.parse_args()
    base = preset(args.preset)
    corpus = load_corpus([ensure_builtin_corpus()])
    tokenizer = train_tokenizer(corpus.iter_documents(), base.tokenizer, corpus.documents)
    print(f"Recipes from the {args.preset} preset on the built-in corpus, {args.minutes:g} minutes each; {machine()}")
    print("| recipe | steps | tokens/s | held-out accuracy (15% masking) | top-5 | loss |")
    print("|---|---|---|---|---|---|")
    for name in args.only or VARIANTS:
        config = base.with_values(
            {"training.time_budget": args.minutes * 60, "training.eval_interval": 10**6, **VARIANTS[name]}
        )
        with tempfile.TemporaryDirectory() as tmp:
            trainer = prepare_trainer(Path(tmp) / "run", begin=lambda config=config: NewRun(config, corpus, tokenizer))
            steps = [r for r in trainer.run() if isinstance(r, StepRecord)]
            trainer.masker = Masker.for_tokenizer(MaskingConfig(), trainer.tokenizer, trainer.device)
            final = trainer.evaluate()
        rate = steps[-1].tokens_seen / steps[-1].elapsed
        print(
            f"| {name} | {final.step:,} | {rate:,.0f} | {final.accuracy:.1%} | {final.top5_accuracy:.1%} | "
            f"{final.loss:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
