"""Fine-tuning, MLM Studio against `transformers`' `Trainer`, side by side: the same task (which standard-library
package a docstring paragraph of the built-in corpus comes from, 6 packages; bench_task_probe.py's), the same
stratified split, token ids, model shape (BERT, 4 layers × 256, fresh weights) and recipe (2 epochs, batch 16,
learning rate 1e-4, 6% warm-up, weight decay 0.01, texts cut to 128 tokens). Reported: training tokens/s (real
tokens, padding excluded), wall time and test accuracy / macro-F1, for each of `--seeds` seeds.

Run: python benchmarks/bench_finetune.py [--seeds 2] [--threads 2] [--per-label 300] [--epochs 2]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_task_probe import package_task
from common import machine

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import DataConfig, ModelConfig, TokenizerConfig
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.finetune.scores import class_scores
from mlm_studio.core.finetune.setup import FinetuneOptions, prepare_finetuner
from mlm_studio.core.storage.run_folder import RunDir
from mlm_studio.core.training.records import TestRecord

SHAPE = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
RECIPE = dict(epochs=2.0, batch_size=16, learning_rate=1e-4, warmup_share=0.06, weight_decay=0.01, max_length=128)


def ours(shape_run: Path, task: Path, out: Path, seed: int) -> dict:
    options = FinetuneOptions("classification", task, seed=seed, split_seed=0, device="cpu", **RECIPE)
    tuner = prepare_finetuner(out, f"scratch:{shape_run}", options)
    tokens = sum(len(ids) for ids in tuner.data.train.ids) * RECIPE["epochs"]
    start = time.perf_counter()
    records = list(tuner.run())
    seconds = time.perf_counter() - start
    test = next(r for r in records if isinstance(r, TestRecord))
    return {"seconds": seconds, "tokens_per_s": tokens / seconds, "accuracy": test.accuracy, "macro_f1": test.macro_f1}


def theirs(run: RunDir, seed: int) -> dict:
    """The same split and ids (read from MLM Studio's run of this seed) through `transformers`' Trainer."""
    import transformers

    from mlm_studio.core.finetune.setup import task_data

    data = task_data(run)
    shape = {**SHAPE, "vocab_size": run.config.model.vocab_size, "pad_token_id": run.tokenizer.pad_id}
    config = transformers.BertConfig(num_labels=len(data.labels), max_position_embeddings=512, **shape)
    transformers.set_seed(seed)
    model = transformers.BertForSequenceClassification(config)

    def rows(part):
        return [{"input_ids": ids.tolist(), "labels": int(label[0])} for ids, label in zip(part.ids, part.labels)]

    def collate(batch):
        length = max(len(row["input_ids"]) for row in batch)
        ids = torch.full((len(batch), length), run.tokenizer.pad_id)
        mask = torch.zeros((len(batch), length), dtype=torch.long)
        for i, row in enumerate(batch):
            ids[i, : len(row["input_ids"])] = torch.tensor(row["input_ids"])
            mask[i, : len(row["input_ids"])] = 1
        return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([r["labels"] for r in batch])}

    steps = math.ceil(RECIPE["epochs"] * len(data.train) / RECIPE["batch_size"])
    warmup = round(RECIPE["warmup_share"] * steps)  # as MLM Studio counts it
    with tempfile.TemporaryDirectory() as folder:
        args = transformers.TrainingArguments(
            output_dir=folder, num_train_epochs=RECIPE["epochs"], per_device_train_batch_size=RECIPE["batch_size"],
            per_device_eval_batch_size=64, learning_rate=RECIPE["learning_rate"], warmup_steps=warmup,
            weight_decay=RECIPE["weight_decay"], save_strategy="no", eval_strategy="no", report_to=[],
            use_cpu=True, seed=seed, logging_strategy="no", disable_tqdm=True,
        )  # fmt: skip
        trainer = transformers.Trainer(model=model, args=args, train_dataset=rows(data.train), data_collator=collate)
        tokens = sum(len(ids) for ids in data.train.ids) * RECIPE["epochs"]
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
        predicted = trainer.predict(rows(data.test)).predictions.argmax(-1)
    true = np.asarray([int(label[0]) for label in data.test.labels])
    scores = class_scores(true, predicted, data.labels)
    return {
        "seconds": seconds,
        "tokens_per_s": tokens / seconds,
        "accuracy": scores.accuracy,
        "macro_f1": scores.macro_f1,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--per-label", type=int, default=300, help="paragraphs of each package (at most 300)")
    parser.add_argument("--epochs", type=float, default=RECIPE["epochs"])
    args = parser.parse_args()
    RECIPE["epochs"] = args.epochs
    torch.set_num_threads(args.threads)
    print(machine())
    root = Path(tempfile.mkdtemp(prefix="bench-finetune-"))
    texts, labels = package_task()
    kept = [i for i, label in enumerate(labels) if labels[: i + 1].count(label) <= args.per_label]
    texts, labels = [texts[i] for i in kept], [labels[i] for i in kept]
    task = root / "packages.csv"
    with open(task, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("text", "label"), *zip(texts, labels)])
    corpus = load_corpus([ensure_builtin_corpus()])
    tokenizer = train_tokenizer(corpus.iter_documents(), TokenizerConfig(vocab_size=8000), corpus.documents)
    config = RunConfig(model=ModelConfig(**SHAPE, vocab_size=tokenizer.vocab_size, pad_token_id=tokenizer.pad_id),
                       data=DataConfig(max_seq_len=128))  # fmt: skip
    shape = RunDir.create(root / "shape", config, tokenizer, [task], corpus.options)
    results = {"MLM Studio": [], "transformers Trainer": []}
    for seed in range(args.seeds):
        mine = ours(shape.path, task, root / f"ours-{seed}", seed)
        print(f"seed {seed}: MLM Studio {mine}", flush=True)
        results["MLM Studio"].append(mine)
        results["transformers Trainer"].append(theirs(RunDir(root / f"ours-{seed}"), seed))
        print(f"seed {seed}: " + "; ".join(f"{name} {r[-1]}" for name, r in results.items()), flush=True)
    print("| | tokens/s | seconds | test accuracy | test macro-F1 |\n|---|---|---|---|---|")
    for name, runs in results.items():
        cells = [statistics.fmean(r[key] for r in runs) for key in ("tokens_per_s", "seconds")]
        spread = [f"{statistics.fmean(r[k] for r in runs):.1%} ± {statistics.pstdev(r[k] for r in runs):.1%}"
                  for k in ("accuracy", "macro_f1")]  # fmt: skip
        print(f"| {name} | {cells[0]:,.0f} | {cells[1]:.1f} | {spread[0]} | {spread[1]} |")


if __name__ == "__main__":
    main()
