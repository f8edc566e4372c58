"""How close a training step runs to the machine's limit: the share of its own matrix multiplies' measured rate that
a whole step turns into model FLOPs, and where the rest of the step's time goes.

For each shape, in one run: our trainer's step on the built-in corpus's packed blocks at `--precision`; its model
FLOPs per step, counted by `torch.utils.flop_counter.FlopCounterMode` (matrix products and attention, as
bench_ceiling.py counts them); every matrix multiply of the step recorded with its shape (`aten.mm`, `addmm`,
`bmm`) and timed alone as `torch.mm`/`torch.bmm` at that shape and dtype after each timed step (a shared machine's
load then falls on both alike; the medians are compared), so that the step's *GEMM rate* is
its matrix multiplies' FLOPs over the time they take at those rates (each shape weighted by its share of the
FLOPs); the **share** is the step's achieved rate (model FLOPs over the median timed step) over that GEMM rate.
Then one step under `torch.profiler`, its operators' own CPU time grouped: matmul, attention, element-wise, casts,
optimizer, embedding, data and other. The table's heading gives the CPU's bf16 flags (AVX-512 BF16, AMX, AVX2) and
each row the attention it trained with (`attention_kernel`: explicit batched multiplies or SDPA's kernel).

The share's ceiling is 100%: a step that did nothing but its matrix multiplies at their own rate. bf16 is only
worth measuring where the CPU computes it natively (AVX-512 BF16 or AMX; `lscpu` flags `avx512_bf16`, `amx_bf16`):
elsewhere PyTorch emulates it far below fp32, and the table says which.

Run: python benchmarks/bench_step_limit.py [--shapes modern bert roberta distilbert modernbert electra base]
     [--precision fp32|bf16] [--steps 6]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", str(getattr(os, "process_cpu_count", os.cpu_count)()))

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_ceiling  # noqa: F401  (registers the CPU's fused attention with FlopCounterMode)
from bench_ceiling import SEED_SHAPE
from bench_like_with_like import corpus_files
from common import machine

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.models.encoder import attention_kernel
from mlm_studio.core.training.runs import NewRun, prepare_trainer

SHAPES = {
    "modern": (DEFAULT_PRESET, {}),
    **{f: (DEFAULT_PRESET, {"model.family": f, **SEED_SHAPE}) for f in ("bert", "roberta", "distilbert", "modernbert")},
    "electra": (DEFAULT_PRESET, {"model.family": "electra", "training.objective": "electra", **SEED_SHAPE}),
    "base": ("base", {}),
}
MATMULS = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default}

# operator name → group, by the first matching fragment (profiler names, "aten::…")
GROUPS = (
    ("matmul", ("mm", "addmm", "bmm", "matmul", "linear")),
    ("attention", ("scaled_dot_product", "flash_attention", "softmax")),
    ("optimizer", ("adam", "_foreach", "clip_grad", "norm_")),
    ("embedding", ("embedding", "index_select", "index_add", "index_put", "scatter", "gather")),
    ("casts", ("_to_copy", "to", "copy_", "type_as")),
    ("data", ("randperm", "bernoulli", "multinomial", "rand", "masked_fill", "where", "nonzero")),
    ("element-wise", ("add", "mul", "sub", "div", "gelu", "silu", "tanh", "layer_norm", "native_layer_norm", "neg",
                      "cat", "sin", "cos", "pow", "rsqrt", "mean", "sum", "dropout", "exp", "log", "clamp", "fill")),
)  # fmt: skip


class MatmulShapes(TorchDispatchMode):
    """Each matrix multiply's (op, shape key, dtype) with how often it ran."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in MATMULS:
            a, b = (args[1], args[2]) if func is torch.ops.aten.addmm.default else (args[0], args[1])
            self.seen[(func is torch.ops.aten.bmm.default, tuple(a.shape), tuple(b.shape), a.dtype)] += 1
        return func(*args, **(kwargs or {}))


def gemm_flops(batched: bool, a: tuple, b: tuple) -> float:
    return 2.0 * (a[0] if batched else 1) * a[-2] * a[-1] * b[-1]


def gemm_seconds(batched: bool, a: tuple, b: tuple, dtype: torch.dtype, repeats: int = 7) -> float:
    """The median time of one multiply at this shape and dtype, alone."""
    x, y = torch.randn(a, dtype=dtype), torch.randn(b, dtype=dtype)
    multiply = torch.bmm if batched else torch.mm
    for _ in range(2):
        multiply(x, y)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        multiply(x, y)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu_flags() -> str:
    """The CPU features that decide bf16's speed, as PyTorch reports them: each present or absent."""
    found = torch.cpu.get_capabilities()
    return ", ".join(f"{flag} {'yes' if found.get(flag) else 'no'}" for flag in ("avx512_bf16", "amx_bf16", "avx2"))


def group_of(name: str) -> str:
    op = name.removeprefix("aten::").lower()
    for group, fragments in GROUPS:
        if any(op == f or op.startswith(f + "_") or op.startswith("_" + f) for f in fragments):
            return group
    return "other"


def measure(shape: str, precision: str, steps: int, corpus) -> dict:
    name, values = SHAPES[shape]
    config = preset(name).with_values({**values, "training.precision": precision})
    tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = prepare_trainer(Path(tmp) / "run", begin=lambda: NewRun(config, corpus, tokenizer))

        def step(number: int):
            trainer.step = number
            return trainer.train_step()

        step(0)  # warm-up
        shapes = MatmulShapes()
        with FlopCounterMode(display=False) as counter, shapes:
            tokens = step(1).tokens
        gemm_total = sum(count * gemm_flops(batched, a, b) for (batched, a, b, _), count in shapes.seen.items())
        seconds, gemm_times = [], []
        for n in range(steps):  # each step then its multiplies alone: a shared machine's load falls on both
            start = time.perf_counter()
            step(2 + n)
            seconds.append(time.perf_counter() - start)
            gemm_times.append(sum(count * gemm_seconds(*key, repeats=3) for key, count in shapes.seen.items()))
        with profile(activities=[ProfilerActivity.CPU]) as profiled:
            step(2 + steps)
    flops, median, gemm_time = counter.get_total_flops(), statistics.median(seconds), statistics.median(gemm_times)
    groups: dict[str, float] = defaultdict(float)
    others: Counter = Counter()
    for event in profiled.key_averages():
        groups[group_of(event.key)] += event.self_cpu_time_total
        if group_of(event.key) == "other":
            others[event.key] += event.self_cpu_time_total
    total = sum(groups.values()) or 1.0
    model = trainer.config.model
    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    return {
        "shape": f"{shape} ({model.num_hidden_layers}×{model.hidden_size})",
        "attention": attention_kernel("cpu", dtype, model.attention_probs_dropout_prob),
        "tokens/s": tokens / median,
        "MFLOP/token": flops / tokens / 1e6,
        "step GFLOP/s": flops / median / 1e9,
        "GEMM GFLOP/s": gemm_total / gemm_time / 1e9,
        "matmul share of FLOPs": gemm_total / flops,
        "groups": {group: value / total for group, value in sorted(groups.items(), key=lambda kv: -kv[1])},
        "others": [name for name, _ in others.most_common(3)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=tuple(SHAPES), default=["modern", "bert", "modernbert"])
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--steps", type=int, default=6, help="steps timed for each shape")
    args = parser.parse_args()
    corpus = load_corpus(corpus_files("builtin"))
    print(
        f"\nbuilt-in corpus, {args.precision}; {machine()}; CPU flags: {cpu_flags()}; "
        f"load average {os.getloadavg()[0]:.1f} at the start"
    )
    columns = ("shape", "tokens/s", "MFLOP/token", "step GFLOP/s", "its GEMMs' GFLOP/s", "share", "attention",
               "time by group")  # fmt: skip
    print(f"| {' | '.join(columns)} |\n|{'---|' * len(columns)}", flush=True)
    for shape in args.shapes:
        m = measure(shape, args.precision, args.steps, corpus)
        share = m["step GFLOP/s"] / m["GEMM GFLOP/s"]
        groups = ", ".join(f"{group} {value:.0%}" for group, value in m["groups"].items() if value >= 0.01)
        print(
            f"| {m['shape']} | {m['tokens/s']:,.0f} | {m['MFLOP/token']:.2f} | {m['step GFLOP/s']:.1f} | "
            f"{m['GEMM GFLOP/s']:.1f} | **{share:.0%}** | {m['attention']} | {groups} |",
            flush=True,
        )
        print(f"{m['shape']}: the most time among the others: {', '.join(m['others'])}", file=sys.stderr)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
