"""What a checkpoint costs the window's GUI thread when the runs folder holds many runs: the GUI thread's own
processor time from the checkpoint's news to the last list showing it, and the longest event-loop stall meanwhile
(a 5 ms timer probe), with the Training panel's Runs table, the Playground's, Evaluation's and Fine-tune's model
choosers and the Fine-tune panel's runs list all open on one folder of RUNS runs; and what choosing that folder
costs (the window open on an empty one): the longest stall and the time until the Runs table lists every run.

The runs are copies of one short run, each with its records, its configuration and checkpoint folders that hold
their state.json (the lists read no weights); every other one's metrics.jsonl is a megabyte long (a long run's). A
checkpoint is a new checkpoint folder and a record appended to one run, then what the Training panel does on a
checkpoint record: `checkpoint_written` emitted and its runs refreshed.

Run: python benchmarks/bench_runs_folder.py (PYTHONPATH at another tree measures that tree's window alike)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

RUNS = 200
CHECKPOINTS = 10
PROBE_MS = 5
LONG_METRICS_BYTES = 1 << 20


def trained_run(root: Path) -> Path:
    """A run of the quickstart preset trained 4 steps on the built-in corpus, a checkpoint every 2."""
    from mlm_studio.core.config.presets import preset
    from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
    from mlm_studio.core.data.corpus import load_corpus
    from mlm_studio.core.data.tokenizer import train_tokenizer
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    corpus = load_corpus([ensure_builtin_corpus()])
    config = preset("quickstart")
    tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents)
    training = replace(config.training, max_steps=4, eval_interval=2, checkpoint_interval=2, warmup_steps=0)
    run = start_run(root / "trained", replace(config, training=training), corpus, tokenizer)
    list(Trainer(run, *training_blocks(run, corpus)).run())
    return run.path


def runs_folder(source: Path, root: Path) -> None:
    """RUNS copies of `source` under `root`, without their weights; every other one with a long metrics.jsonl."""
    lines = (source / "metrics.jsonl").read_text(encoding="utf-8")
    step = next(line for line in lines.splitlines() if '"type": "step"' in line) + "\n"
    padding = step * (LONG_METRICS_BYTES // len(step))
    for index in range(RUNS):
        run = root / f"run-{index:03d}"
        shutil.copytree(source, run, ignore=shutil.ignore_patterns("*.safetensors"))
        if index % 2:
            (run / "metrics.jsonl").write_text(padding + lines, encoding="utf-8")


def checkpoint(run: Path, step: int) -> Path:
    """A new checkpoint folder in `run` and its record appended, as the trainer leaves them."""
    latest = sorted((run / "checkpoints").iterdir())[-1]
    path = run / "checkpoints" / f"step-{step:07d}"
    shutil.copytree(latest, path)
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as file:
        file.write(json.dumps({"type": "checkpoint", "step": step, "path": str(path)}) + "\n")
    return path


def measure(app, root: Path) -> tuple[list[float], list[float]]:
    """Per checkpoint: the GUI thread's processor time (ms) until every list shows it, and the longest stall."""
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer

    from mlm_studio.ui.main_window import MainWindow
    from mlm_studio.ui.tasks import tasks_running

    window = MainWindow(settings=None, restore=False, runs_root=root)
    window.resize(1280, 800)
    window.show()
    window.show_panel(window.training_panel)
    panel = window.training_panel
    gaps: list[float] = []
    clock = QElapsedTimer()
    probe = QTimer()
    probe.setInterval(PROBE_MS)
    probe.timeout.connect(lambda: gaps.append(clock.restart()))
    gui_ms, stalls = [], []
    for index in range(CHECKPOINTS + 1):
        app.processEvents()
        path = checkpoint(root / "run-000", 10 + index)
        gaps.clear()
        clock.start()
        probe.start()
        start = time.thread_time()
        panel.checkpoint_written.emit(str(path))
        panel.refresh_runs()
        loop = QEventLoop()
        poll = QTimer()
        poll.timeout.connect(lambda loop=loop: tasks_running() or loop.quit())
        poll.start(1)
        loop.exec()
        poll.stop()
        app.processEvents()
        spent = (time.thread_time() - start) * 1000
        probe.stop()
        gaps.append(clock.elapsed())
        if index:  # the first: the window's first checkpoint, after its build
            gui_ms.append(spent)
            stalls.append(max(gaps) - PROBE_MS)
    window.close()
    return gui_ms, stalls


def first_listing(app, root: Path, empty: Path) -> tuple[float, float]:
    """The longest event-loop stall (ms) and the seconds until the Runs table lists every run, after `root` is
    chosen as the runs folder of a window open on `empty`."""
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer

    from mlm_studio.ui.main_window import MainWindow
    from mlm_studio.ui.tasks import tasks_running

    window = MainWindow(settings=None, restore=False, runs_root=empty)
    window.resize(1280, 800)
    window.show()
    window.show_panel(window.training_panel)
    table = window.training_panel.runs.table
    while tasks_running():
        app.processEvents()
    app.processEvents()
    gaps: list[float] = []
    clock, probe, poll = QElapsedTimer(), QTimer(), QTimer()
    probe.setInterval(PROBE_MS)
    probe.timeout.connect(lambda: gaps.append(clock.restart()))
    loop = QEventLoop()
    poll.timeout.connect(lambda: table.rowCount() == RUNS and loop.quit())
    start = time.perf_counter()
    clock.start()
    probe.start()
    poll.start(1)
    window.workspace.set_runs_root(root)
    loop.exec()
    gaps.append(clock.elapsed())
    seconds = time.perf_counter() - start
    probe.stop()
    poll.stop()
    window.close()
    return max(gaps) - PROBE_MS, seconds


def main() -> None:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        source = trained_run(Path(tmp) / "source")
        runs_folder(source, Path(tmp) / "runs")
        gui_ms, stalls = measure(app, Path(tmp) / "runs")
        (Path(tmp) / "empty").mkdir()
        listing_stall, listing_seconds = first_listing(app, Path(tmp) / "runs", Path(tmp) / "empty")
    print(f"{RUNS} runs in the folder, {CHECKPOINTS} checkpoints; {machine()}")
    print("| measure | median | max |")
    print("|---|---|---|")
    print(f"| GUI thread's processor time per checkpoint | {statistics.median(gui_ms):.1f} ms | {max(gui_ms):.1f} ms |")
    print(f"| longest event-loop stall per checkpoint | {statistics.median(stalls):.0f} ms | {max(stalls):.0f} ms |")
    print(f"choosing the folder: longest stall {listing_stall:.0f} ms; every run listed after {listing_seconds:.2f} s")


if __name__ == "__main__":
    main()
