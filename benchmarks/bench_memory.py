"""Peak resident memory of training against `RunConfig.training_memory_bytes`: each preset, and each family at
the `small` shape, trained for a few steps by `mlm-studio train` in a fresh process (a fresh cache, the built-in
corpus, a tokenizer trained on it, the final evaluation and checkpoint), one process at a time. The peak is
the process's ru_maxrss: the interpreter, PyTorch, the tokenizer, the data and training together (checked to
exceed this process's own peak, which Linux would otherwise report for a child).

Run: python benchmarks/bench_memory.py [--steps 5] [--cases modern base small:roberta] [--corpus-from CACHE]
(`--corpus-from`: each case's fresh cache starts with the built-in corpus copied from CACHE, so it is not built
again; building it does not reach training's peak.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.presets import PRESETS
from mlm_studio.core.runs.run_folder import RunDir

ROOT = Path(__file__).resolve().parent.parent
CASES = [*PRESETS, *(f"small:{family}" for family in FAMILIES if family != "bert")]


def measure(case: str, steps: int, corpus_from: Path | None = None) -> tuple[int, int, float, str]:
    """(peak resident bytes, estimated bytes, seconds, shape) of one fresh `mlm-studio train` process, with a
    fresh cache (holding the built-in corpus of `corpus_from`'s, if given)."""
    name, _, family = case.partition(":")
    options = ["--preset", name, "--max-steps", str(steps)]
    if family == "electra":
        options += ["--objective", "electra"]
    elif family:
        options += ["--set", f"model.family={family}"]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        for built in sorted(corpus_from.glob("builtin-corpus-*")) if corpus_from else ():
            shutil.copy2(built, cache / built.name)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MLM_STUDIO_CACHE": str(cache)}
        command = [sys.executable, "-m", "mlm_studio", "train", *options, "--out", str(Path(tmp) / "run")]
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        output = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{case} failed:\n{output}")
        if usage.ru_maxrss * 1024 <= own_peak():  # Linux carries the parent's peak over fork and exec
            raise SystemExit(f"{case}: the peak is not above this process's own, so it may be this process's")
        config = RunDir(Path(tmp) / "run").config
    model = config.model
    shape = f"{FAMILIES[model.family].title}, {model.num_hidden_layers} × {model.hidden_size}"
    return usage.ru_maxrss * 1024, config.training_memory_bytes(), seconds, shape


def own_peak() -> int:
    """This process's own peak resident bytes (VmHWM)."""
    return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) * 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--cases", nargs="+", default=CASES, help="preset names, or preset:family")
    parser.add_argument("--corpus-from", type=Path, help="a cache whose built-in corpus each fresh cache starts with")
    args = parser.parse_args()
    print(f"Peak resident memory of `mlm-studio train --max-steps {args.steps}`, one fresh process each; {machine()}")
    print("| case | model | measured peak | estimate | estimate ÷ peak | time |")
    print("|---|---|---|---|---|---|")
    for case in args.cases:
        peak, estimate, seconds, shape = measure(case, args.steps, args.corpus_from)
        mib = 2**20
        print(
            f"| {case} | {shape} | {peak / mib:,.0f} MiB | {estimate / mib:,.0f} MiB | {estimate / peak:.2f} | "
            f"{seconds:.0f} s |",
            flush=True,
        )


if __name__ == "__main__":
    main()
