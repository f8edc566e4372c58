"""The like-with-like ceiling: each side's floating-point operations per training step, counted by
`torch.utils.flop_counter.FlopCounterMode` over whole steps (forward, backward, clipping, the fused AdamW update),
and each side's achieved rate from a short timing.

The two sides are bench_like_with_like.py's: our trainer on the built-in corpus's packed blocks, and the
`transformers` Trainer on the same blocks with the architecture of the config.json our export writes, our recipe
and precision. FlopCounterMode counts matrix products and attention (here also the CPU's fused attention kernel,
which it does not know by itself); element-wise work — norms, activations, softmax, masking, the optimizer — counts
zero by its rules, so the counts are the arithmetic that can run at the machine's dense rate.

From the counts: FLOPs per real token on each side; the tokens/s ratio both would have at one FLOP rate (the
peer's FLOPs per token over ours: the ceiling its extra work allows); each side's achieved rate (FLOPs of a step
over the shortest of the timed steps) and the ratio those timings give.

Run: python benchmarks/bench_ceiling.py [--shapes modern bert roberta distilbert modernbert] [--steps 8]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", str(getattr(os, "process_cpu_count", os.cpu_count)()))

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode, register_flop_formula, sdpa_backward_flop, sdpa_flop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_like_with_like import corpus_files, peer_trainer
from common import machine, peer_tokenizer

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.interop.export import hf_config
from mlm_studio.core.training.runs import NewRun, prepare_trainer

# the CPU's fused attention, counted as FlopCounterMode counts the GPU's
register_flop_formula(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu, get_raw=True)(sdpa_flop)
register_flop_formula(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward, get_raw=True)(
    sdpa_backward_flop
)

NO_DEADLINE = 86_400.0  # seconds: the peer stops after its steps first
SEED_SHAPE = {
    "model.hidden_size": 256,
    "model.num_hidden_layers": 4,
    "model.num_attention_heads": 8,
    "model.intermediate_size": 512,
    "tokenizer.vocab_size": 30000,
}
SHAPES = {
    "modern": {},
    **{family: {"model.family": family, **SEED_SHAPE} for family in ("bert", "roberta", "distilbert", "modernbert")},
}


COLUMNS = (
    "shape",
    "MFLOP/token, ours",
    "MFLOP/token, peer",
    "ratio at one FLOP rate",
    "ours: GFLOP/s (median/min step)",
    "peer: GFLOP/s (median/min step)",
    "ratio timed (min steps)",
    "load after",
)


class Side:
    """One side's FLOPs per step (over `counted` steps), real tokens per step and timed steps (seconds)."""

    def __init__(self, flops: float, tokens: float, seconds: list[float]) -> None:
        self.flops, self.tokens, self.seconds = flops, tokens, seconds

    @property
    def per_token(self) -> float:
        return self.flops / self.tokens

    @property
    def rate(self) -> float:
        """FLOP/s over the fastest timed step."""
        return self.flops / min(self.seconds)


def ours(trainer, counted: int, timed: int) -> Side:
    """Our trainer's own step (masking included), counted (which warms it up) then timed, a different batch
    each step."""

    def step(number: int):
        trainer.step = number
        return trainer.train_step()

    with FlopCounterMode(display=False) as counter:
        tokens = sum(step(1 + n).tokens for n in range(counted))
    seconds = []
    for n in range(timed):
        start = time.perf_counter()
        step(1 + counted + n)
        seconds.append(time.perf_counter() - start)
    return Side(counter.get_total_flops() / counted, tokens / counted, seconds)


def peer(folder: Path, trainer, counted: int, timed: int) -> Side:
    """The `transformers` Trainer's steps (from its step-begin to its step-end callback), counted then timed."""
    from transformers import AutoConfig, AutoModelForMaskedLM, TrainerCallback

    config = trainer.config
    values = hf_config(config.model, trainer.tokenizer)
    model = AutoModelForMaskedLM.from_config(AutoConfig.for_model(values.pop("model_type"), **values))
    tokenizer = peer_tokenizer(trainer.tokenizer)
    seconds: list[float] = []

    class StepTimes(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            seconds.append(time.perf_counter() - self.start)

    fed = [0]  # real tokens the model was given (its data loader collates ahead of the steps)
    model.register_forward_pre_hook(
        lambda _module, _args, kwargs: fed.__setitem__(0, fed[0] + int(kwargs["attention_mask"].sum())),
        with_kwargs=True,
    )

    def train(steps: int, name: str) -> int:
        hf, _ = peer_trainer(
            folder / name, model, tokenizer, trainer.train_blocks, config, NO_DEADLINE, False, steps, (StepTimes(),)
        )
        fed[0] = 0
        hf.train()
        say(f"peer: {name} {steps} steps")
        return fed[0]

    with FlopCounterMode(display=False) as counter:
        tokens = train(counted, "counted")
    seconds.clear()
    if timed:
        train(timed, "timed")
    return Side(counter.get_total_flops() / counted, tokens / counted, seconds)


def measure(shape: str, counted: int, timed: int, corpus) -> tuple[str, Side, Side]:
    config = preset(DEFAULT_PRESET).with_values(SHAPES[shape])
    tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents)
    say(f"{shape}: tokenizer trained")
    with tempfile.TemporaryDirectory() as tmp:
        trainer = prepare_trainer(Path(tmp) / "run", begin=lambda: NewRun(config, corpus, tokenizer))
        say(f"{shape}: {len(trainer.train_blocks):,} training blocks")
        mine = ours(trainer, counted, timed)
        say(f"{shape}: ours counted and timed")
        theirs = peer(Path(tmp), trainer, counted, timed)
    return f"{shape} (vocabulary {trainer.config.model.vocab_size:,})", mine, theirs


def say(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True)


def load() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


def row(shape: str, mine: Side, theirs: Side) -> str:
    at_one_rate = theirs.per_token / mine.per_token
    cells = [shape, f"{mine.per_token / 1e6:.2f}", f"{theirs.per_token / 1e6:.2f}", f"{at_one_rate:.2f}×"]
    if mine.seconds and theirs.seconds:
        timed = (mine.tokens / min(mine.seconds)) / (theirs.tokens / min(theirs.seconds))
        cells += [timing(mine), timing(theirs), f"{timed:.2f}×"]
    else:
        cells += ["not timed"] * 3
    return f"| {' | '.join(cells)} |"


def timing(side: Side) -> str:
    return f"{side.rate / 1e9:.0f} ({statistics.median(side.seconds) * 1e3:.0f}/{min(side.seconds) * 1e3:.0f} ms)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=tuple(SHAPES), default=list(SHAPES))
    parser.add_argument("--counted", type=int, default=2, help="steps counted on each side")
    parser.add_argument("--steps", type=int, default=8, help="steps timed on each side (0: count only)")
    args = parser.parse_args()
    corpus = load_corpus(corpus_files("builtin"))
    print(f"\nbuilt-in corpus; {machine()}; load average {load()} at the start")
    print(f"| {' | '.join(COLUMNS)} |\n|{'---|' * len(COLUMNS)}", flush=True)
    for shape in args.shapes:
        print(f"{row(*measure(shape, args.counted, args.steps, corpus))} {load()} |", flush=True)


if __name__ == "__main__":
    main()
