"""Training beside busy processes: `mlm-studio train` (or, with `--window`, the window's Training panel) for a
time budget alone and beside one or more processes that keep a core busy (`python -c "while True: pass"`, no
pinning), alternated; reports tokens/s (the run's tokens over its elapsed time, evaluations and checkpoints
included) and each load's share of the speed alone.

The window is the application's own: OpenMP's wait policy set as the application sets it, the default preset,
training on the panel's background thread with the plots live, on the display Qt finds (`offscreen` when none).

Run: python benchmarks/bench_under_load.py [--window] [--seconds 40] [--repeats 3] [--busy 0 1 2] [--tree PATH]
(`--tree`: the checkout whose code trains, e.g. a worktree of the previous commit, for before/after)
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

REPOSITORY = Path(__file__).resolve().parent.parent


def environment(tree: Path) -> dict[str, str]:
    """The code of `tree`, with the thread count left to the trainer (no OMP_NUM_THREADS)."""
    return {**{k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}, "PYTHONPATH": str(tree)}


WINDOW = r"""
import os, sys
from pathlib import Path
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen" if not os.environ.get("DISPLAY") else "xcb")
from mlm_studio.ui.app import keep_openmp_threads_ready
keep_openmp_threads_ready()
from dataclasses import replace
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv[:1])
from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.ui.main_window import MainWindow
from mlm_studio.ui.tasks import tasks_running
folder, tokenizer, seconds = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
config = preset(DEFAULT_PRESET)
config = replace(config, training=replace(config.training, time_budget=seconds))
window = MainWindow(settings=None, restore=False, runs_root=folder)
window.resize(1280, 720)
window.show()
window.workspace.set_tokenizer(MLMTokenizer.load(tokenizer))
window.workspace.set_corpus(load_corpus([ensure_builtin_corpus()]))
window.workspace.set_config(config)
window.show_panel(window.training_panel)
while tasks_running():
    app.processEvents()
window.training_panel.run_finished.connect(app.quit)
window.training_panel.start()
app.exec()
window.close()
"""


def train(
    tree: Path, folder: Path, tokenizer: Path, seconds: float, busy: int, extra: list[str], window: bool
) -> float:
    """Tokens/s of one run beside `busy` busy processes."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        if window:
            command = [sys.executable, "-c", WINDOW, str(folder), str(tokenizer), f"{seconds:g}"]
        else:
            command = [
                sys.executable,
                "-m",
                "mlm_studio",
                "train",
                "--time-budget",
                f"{seconds:g}s",
                "--out",
                str(folder),
            ]
            command += ["--tokenizer", str(tokenizer), *extra]
        subprocess.run(
            command,
            cwd=tree,
            env=environment(tree),
            check=True,
            capture_output=True,
        )
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    metrics = next(folder.rglob("metrics.jsonl"))  # the window names its run folder inside `folder`
    steps = [r for r in map(json.loads, metrics.read_text().splitlines()) if r["type"] == "step"]
    return steps[-1]["tokens_seen"] / steps[-1]["elapsed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2], help="busy processes beside each run")
    parser.add_argument("--tree", type=Path, default=REPOSITORY, help="the checkout whose code trains")
    parser.add_argument("--window", action="store_true", help="train in the window's Training panel")
    parser.add_argument("extra", nargs="*", help="more options for mlm-studio train (after --)")
    args = parser.parse_args()
    speeds: dict[int, list[float]] = {busy: [] for busy in args.busy}
    with tempfile.TemporaryDirectory() as tmp:
        first = Path(tmp) / "tokenizer-run"
        subprocess.run(
            [sys.executable, "-m", "mlm_studio", "train", "--max-steps", "1", "--out", str(first)],
            cwd=args.tree,
            env=environment(args.tree),
            check=True,
            capture_output=True,
        )
        for repeat in range(args.repeats):
            for busy in args.busy:
                folder = Path(tmp) / f"run-{repeat}-{busy}"
                speeds[busy].append(
                    train(args.tree, folder, first / "tokenizer.json", args.seconds, busy, args.extra, args.window)
                )
                print(f"run {repeat + 1}, {busy} busy: {speeds[busy][-1]:,.0f} tokens/s", file=sys.stderr, flush=True)
    alone = statistics.median(speeds[0]) if 0 in speeds else None
    front = "Window" if args.window else "Terminal"
    print(f"{front} training, {args.seconds:g} s each, {args.repeats} alternated runs, code of {args.tree}")
    print("| busy processes beside | tokens/s, median (min–max) | share of alone |")
    print("|---|---|---|")
    for busy, values in speeds.items():
        share = f"{statistics.median(values) / alone:.2f}×" if alone else "—"
        print(f"| {busy} | {statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f}) | {share} |")


if __name__ == "__main__":
    main()
