"""Fine-tuning, MLM Studio against `transformers`' `Trainer`, side by side: the same pre-trained model, task, split,
token ids and recipe. The model: the default preset pre-trained on the King James Bible (`bench_domain.py`'s
corpus, the labelled verses left out). The task: `bench_domain.py`'s — which of six parts of the Bible a verse
comes from. Both start from the same weights (the Trainer's from our export of the run, as
`AutoModelForSequenceClassification` reads it; the head fresh on both sides), fine-tune with the same recipe
(epochs, batch 16, learning rate, 6% warm-up, weight decay 0.01, the same precision) and are scored on the same
test split. Reported: training tokens/s (real tokens, padding excluded), wall time, test accuracy / macro-F1 for
each of `--seeds` seeds, sides alternating. `--group-by-length` gives the Trainer batches of like lengths
(`train_sampling_strategy="group_by_length"`), as MLM Studio's are. Our time includes the validation after each
epoch and the checkpoints it keeps the best weights by (early stopping needs them); the Trainer's has neither. Both
compute in fp32 (fine-tuning's `auto` on a CPU).

Run: python benchmarks/bench_finetune.py [--seeds 3] [--steps 1500] [--per-label 400] [--lr 1e-4] [--epochs 3]
     [--group-by-length] [--keep DIR]
"""

from __future__ import annotations

import os

# One fixed thread count for both sides (our tuner would otherwise size its threads to the load; see threads.py).
os.environ.setdefault("OMP_NUM_THREADS", str(getattr(os, "process_cpu_count", os.cpu_count)()))

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sklearn.metrics  # noqa: F401  (imported before the clocks, as `transformers` is)
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_domain import pretrain, write_data
from common import machine, side_by_side, timed_finetune

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.scores import class_scores
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.runs.run_folder import RunDir

GROUPED = ["random"]  # the Trainer's sampler: "group_by_length" with `--group-by-length`
RECIPE = dict(epochs=3.0, batch_size=16, learning_rate=1e-4, warmup_share=0.06, weight_decay=0.01)


def ours(model: Path, task: Path, out: Path, seed: int) -> dict:
    options = FinetuneOptions("classification", task, seed=seed, split_seed=0, device="cpu", **RECIPE)
    timed, test = timed_finetune(out, model, options)
    return timed | {"accuracy": test.accuracy, "macro_f1": test.macro_f1}


def theirs(export: Path, run: RunDir, seed: int) -> dict:
    """The same weights, split and ids (read from MLM Studio's run of this seed) through `transformers`' Trainer."""
    import transformers

    from mlm_studio.core.finetune.setup import task_data

    data = task_data(run)
    transformers.set_seed(seed)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(export, num_labels=len(data.labels))
    pad = run.tokenizer.pad_id

    def rows(part):
        return [{"input_ids": ids.tolist(), "labels": int(label[0])} for ids, label in zip(part.ids, part.labels)]

    def collate(batch):
        length = max(len(row["input_ids"]) for row in batch)
        ids = torch.full((len(batch), length), pad)
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
            use_cpu=True, seed=seed, logging_strategy="no", disable_tqdm=True, train_sampling_strategy=GROUPED[0],
        )  # fmt: skip
        trainer = transformers.Trainer(model=model, args=args, train_dataset=rows(data.train), data_collator=collate)
        tokens = sum(len(ids) for ids in data.train.ids) * RECIPE["epochs"]
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
        trainer.args.train_sampling_strategy = "random"  # else its predict() groups the test texts by length too,
        predicted = trainer.predict(rows(data.test)).predictions.argmax(-1)  # out of the labels' order
    true = np.asarray([int(label[0]) for label in data.test.labels])
    scores = class_scores(true, predicted, data.labels)
    accuracy, macro_f1 = scores.accuracy, scores.macro_f1
    return {"seconds": seconds, "tokens_per_s": tokens / seconds, "accuracy": accuracy, "macro_f1": macro_f1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1500, help="pre-training steps")
    parser.add_argument("--per-label", type=int, default=400)
    parser.add_argument("--lr", type=float, default=RECIPE["learning_rate"])
    parser.add_argument("--epochs", type=float, default=RECIPE["epochs"])
    parser.add_argument("--group-by-length", action="store_true", help="the Trainer batches texts of like lengths")
    parser.add_argument("--keep", type=Path, help="keep (or reuse) the data and the pre-trained run in this folder")
    args = parser.parse_args()
    RECIPE.update(epochs=args.epochs, learning_rate=args.lr)
    GROUPED[0] = "group_by_length" if args.group_by_length else "random"
    print(f"# {machine()}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-finetune-"))
    root.mkdir(parents=True, exist_ok=True)
    task, corpus = write_data(root, args.per_label, seed=0)
    model = root / "pretrained"
    if not (model / "config.toml").is_file():
        pretrain(corpus, model, args.steps, None)
    export = root / "pretrained-export"
    if not export.is_dir():
        export_model(model, export)
    results = {"MLM Studio": [], "transformers Trainer": []}
    for seed in range(args.seeds):
        out = root / f"finetune-lr{args.lr:g}-epochs{args.epochs:g}-seed{seed}"
        mine = ours(model, task, out, seed)
        results["MLM Studio"].append(mine)
        results["transformers Trainer"].append(theirs(export, RunDir(out), seed))
        print(f"seed {seed}: " + "; ".join(f"{name} {r[-1]}" for name, r in results.items()), flush=True)
    print(f"{len(results['MLM Studio'])} seeds, lr {args.lr:g}, {args.epochs:g} epochs, batch 16")
    print(side_by_side(results, {"accuracy": "test accuracy", "macro_f1": "test macro-F1"}))


if __name__ == "__main__":
    main()
