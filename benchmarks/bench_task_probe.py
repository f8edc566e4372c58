"""Does pre-training on the built-in corpus help a task? A labelled task made from the corpus's own sources:
which standard-library package a docstring paragraph comes from (the six packages with the most paragraphs,
300 paragraphs each). The default preset trains for a time budget; the linear probe on its frozen sentence
vectors is scored on a fixed stratified split against the same probe on an untrained model of the same shape,
the majority class and a bag-of-words classifier; beside each, the held-out texts' same-label neighbours among the
training texts (recall@1, recall@5, MRR).

For an ELECTRA preset the probe reads the discriminator, and the masked-token accuracy is its generator's.

Run: python benchmarks/bench_task_probe.py [--minutes 6] [--preset quickstart] [--set training.generator_size=0.5]
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import value_from_text
from mlm_studio.core.data import builtin_corpus
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.evaluation.task_probe import probe_task
from mlm_studio.core.models.build import build_trained, encoder_of
from mlm_studio.core.training.runs import NewRun, prepare_trainer

PER_LABEL, LABELS = 300, 6


def package_task(seed: int = 0) -> tuple[list[str], list[str]]:
    """Docstring paragraphs labelled by their standard-library package, balanced."""
    root = Path(sysconfig.get_paths()["stdlib"])
    by_package: dict[str, list[str]] = defaultdict(list)
    for path in builtin_corpus.stdlib_files():
        parts = path.relative_to(root).parts
        if len(parts) > 1:
            by_package[parts[0]].extend(builtin_corpus._docstring_documents(path))
    biggest = sorted(by_package, key=lambda p: len(by_package[p]), reverse=True)[:LABELS]
    rng = random.Random(seed)
    texts, labels = [], []
    for package in biggest:
        for text in rng.sample(by_package[package], min(PER_LABEL, len(by_package[package]))):
            texts.append(text)
            labels.append(package)
    return texts, labels


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=6.0)
    parser.add_argument("--preset", default=DEFAULT_PRESET)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    args = parser.parse_args()
    texts, labels = package_task()
    corpus = load_corpus([ensure_builtin_corpus()])
    settings = dict(item.split("=", 1) for item in args.set)
    chosen = preset(args.preset).with_values({key: value_from_text(value) for key, value in settings.items()})
    config = replace(chosen, training=replace(chosen.training, time_budget=args.minutes * 60))
    tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = prepare_trainer(Path(tmp) / "run", begin=lambda: NewRun(config, corpus, tokenizer))
        list(trainer.run())
        trained = probe_task(encoder_of(trainer.model), tokenizer, texts, labels)
        torch.manual_seed(0)
        untrained = probe_task(encoder_of(build_trained(trainer.config)), tokenizer, texts, labels)
        final = trainer.last_eval
    packages = ", ".join(sorted(set(labels)))
    print(f"Task: standard-library package of a docstring paragraph ({packages}); {len(texts)} paragraphs, "
          f"25% held out (stratified); {machine()}")  # fmt: skip
    print("| classifier | accuracy | macro-F1 | recall@1 | recall@5 | MRR |")
    print("|---|---|---|---|---|---|")
    name = " ".join([f"`{args.preset}`", *args.set])
    print(
        f"Trained {trainer.step:,} steps; held-out masked-token accuracy {final.accuracy:.1%}"
        + (f", replaced-token detection AUC {final.detection_auc:.3f}" if final.detection_auc is not None else "")
    )
    for title, r in ((f"linear probe on {name} after {args.minutes:g} minutes", trained),
                     ("linear probe on the same model untrained", untrained)):  # fmt: skip
        print(f"| {title} | {r.accuracy:.1%} | {r.macro_f1:.3f} | {r.recall_at_1:.1%} | {r.recall_at_5:.1%} | "
              f"{r.mrr:.3f} |")  # fmt: skip
    print(f"| majority class | {trained.majority_accuracy:.1%} | | | | |")
    print(f"| bag of words (TF-IDF + logistic regression) | {trained.bag_of_words_accuracy:.1%} | | "
          f"{trained.bag_of_words_recall_at_1:.1%} | {trained.bag_of_words_recall_at_5:.1%} | "
          f"{trained.bag_of_words_mrr:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
