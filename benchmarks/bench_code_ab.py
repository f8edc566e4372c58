"""Two versions of MLM Studio's code, the same training: a preset trained through `Trainer.run` (the whole loop the
app and the CLI run) for 25 steps (`--steps`) on the built-in corpus, each version in its own interpreter, the
versions alternated (A, B, A, B, …) so that the machine's drift falls on both. Each run reports its milliseconds
per step from step 5 to its last (the loop's own work included), its tokens per second, and its held-out accuracy
after the last step (the same validation blocks and masking on both sides: a fixed budget of steps compares what
two versions' numerics learn).

The other version is a checkout of another commit (`git worktree add ../before COMMIT`); the tokenizer is trained
once and shared, so both train on the same pieces.

Run: python benchmarks/bench_code_ab.py --other ../before [--preset modern] [--repeats 5] [--steps 25] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

HERE = Path(__file__).resolve().parents[1]
FROM = 5


def one_run(tokenizer: str, preset_name: str, steps: int, seed: int) -> dict:
    """This interpreter's version trains `preset_name` for `steps` steps: ms per step after FROM, tokens/s, and
    the held-out accuracy after the last step."""
    from mlm_studio.core.config.presets import preset
    from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
    from mlm_studio.core.data.corpus import load_corpus
    from mlm_studio.core.data.tokenizer import MLMTokenizer
    from mlm_studio.core.training.runs import NewRun, prepare_trainer

    corpus = load_corpus([ensure_builtin_corpus()])
    config = preset(preset_name).with_values(
        {"training.max_steps": steps, "training.seed": seed, "training.log_interval": 1,
         "training.eval_interval": steps, "training.checkpoint_interval": 1000, "training.device": "cpu"}
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        trainer = prepare_trainer(
            Path(folder) / "run", begin=lambda: NewRun(config, corpus, MLMTokenizer.load(tokenizer))
        )
        records = list(trainer.run())
    logged = {r.step: r for r in records if r.kind == "step"}
    timed = range(FROM + 1, steps + 1)
    return {
        "ms_per_step": (logged[steps].elapsed - logged[FROM].elapsed) / len(timed) * 1e3,
        "tokens_per_second": statistics.mean(logged[s].tokens_per_second for s in timed),
        "accuracy": next(r.accuracy for r in reversed(records) if r.kind == "eval"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True, help="the other version's checkout (B)")
    parser.add_argument("--preset", default="modern")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=25, help=f"steps a run (more than {FROM})")
    parser.add_argument("--seed", type=int, default=0, help="the runs' training seed")
    parser.add_argument("--side", nargs=2, metavar=("TOKENIZER", "PRESET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(one_run(*args.side, args.steps, args.seed)))
        return
    from mlm_studio.core.config.presets import preset
    from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
    from mlm_studio.core.data.corpus import load_corpus
    from mlm_studio.core.data.tokenizer import train_tokenizer

    corpus = load_corpus([ensure_builtin_corpus()])
    tokenizer = train_tokenizer(corpus.iter_documents(), preset(args.preset).tokenizer, corpus.documents)
    versions = {"A (this checkout)": HERE, f"B ({args.other})": args.other.resolve()}
    results: dict[str, list[dict]] = {name: [] for name in versions}
    with tempfile.TemporaryDirectory() as folder:
        path = str(tokenizer.save(Path(folder) / "tokenizer.json"))
        for _ in range(args.repeats):
            for name, tree in versions.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                command = [
                    sys.executable,
                    __file__,
                    "--other",
                    str(args.other),
                    "--steps",
                    str(args.steps),
                    "--seed",
                    str(args.seed),
                ]
                command += ["--side", path, args.preset]
                done = subprocess.run(command, capture_output=True, text=True, env=env, check=True, cwd=folder)
                results[name].append(json.loads(done.stdout.splitlines()[-1]))
                print(f"{name}: {results[name][-1]}", flush=True)
    print(f"\n{args.preset}, {args.steps} steps a run, ms per step over steps {FROM + 1}–{args.steps}; {machine()}")
    for name, runs in results.items():
        ms = [r["ms_per_step"] for r in runs]
        tokens = [r["tokens_per_second"] for r in runs]
        accuracy = ", ".join(f"{r['accuracy']:.2%}" for r in runs)
        print(
            f"{name}: median {statistics.median(ms):.1f} ms (min {min(ms):.1f}, max {max(ms):.1f}) over "
            f"{len(ms)} runs; median {statistics.median(tokens):,.0f} tokens/s; held-out accuracy {accuracy}"
        )


if __name__ == "__main__":
    main()
