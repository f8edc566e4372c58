"""From a click on a point of the Training panel's loss curve to that step's batch shown, on the default preset: the
run's blocks read (the first click) and then each click timed from the mouse press to the step's blocks drawn in
the step's batch window, replayed with the checkpoint before the step.

The run is the default preset trained on the built-in corpus for STEPS steps, a checkpoint at every step (so each
click replays a step with its own weights, as the test in tests/ui/alone does). First, the cost of marking a
training run's spikes live: the GUI thread's time per step record as its steps.tsv grows to --steps steps.

Run: python benchmarks/bench_step_batch.py [--clicks 8] [--steps 5000]
(PYTHONPATH at another tree measures that tree's window alike; --steps 0 leaves out the live marks, which a tree
from before them lacks)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from common import machine

STEPS = 6


def trained_run(root: Path) -> Path:
    """The default preset trained STEPS steps on the built-in corpus, a checkpoint every step."""
    from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
    from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
    from mlm_studio.core.data.corpus import load_corpus
    from mlm_studio.core.data.tokenizer import train_tokenizer
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    corpus = load_corpus([ensure_builtin_corpus()])
    config = preset(DEFAULT_PRESET)
    tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents)
    training = replace(
        config.training,
        max_steps=STEPS,
        log_interval=1,
        eval_interval=STEPS,
        checkpoint_interval=1,
        keep_checkpoints=STEPS,
    )
    run = start_run(root / "runs" / "default", replace(config, training=training), corpus, tokenizer)
    threads = torch.get_num_threads()
    list(Trainer(run, *training_blocks(run, corpus)).run())
    torch.set_num_threads(threads)  # as the window starts, not as the load made the training's thread governor set it
    return run.path


def timed(cls: type, name: str, into: list[float]) -> None:
    """Time each call of `cls.name` into `into` (seconds)."""
    method = getattr(cls, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - start)

    setattr(cls, name, wrapper)


def click_times(run: Path, clicks: int) -> tuple[float, list[float]]:
    """Seconds of the first click (the blocks read) and of each later one, on steps 2.. in turn."""
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from mlm_studio.ui.panels.training.panel import TrainingPanel
    from mlm_studio.ui.workspace import Workspace

    app = QApplication.instance() or QApplication([])
    panel = TrainingPanel(Workspace(runs_root=run.parent))
    panel.resize(1200, 760)
    panel.show()
    panel.refresh_runs()
    while panel.workspace.reading_runs:  # the folder read off the GUI thread
        app.processEvents()
        time.sleep(0.001)
    panel.open_run(run)
    batches = panel.step_batches.view

    def click(step: int) -> float:
        series = panel.plots.series["step_loss"]
        index = int((series.x("step") == step).nonzero()[0][0])
        panel.plots.redraw(everything=True)
        app.processEvents()
        scene = panel.plots.plots["loss"].vb.mapViewToScene(QPointF(step, series.y[index]))
        view = panel.plots.view
        batches.replay = None
        start = time.perf_counter()
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(scene))
        while batches.replay is None or batches.replay.step != step:
            app.processEvents()
            time.sleep(0.001)
        return time.perf_counter() - start

    first = click(STEPS)
    return first, [click(2 + index % (STEPS - 1)) for index in range(clicks)]


def live_mark_costs(root: Path, steps: int, window: int) -> tuple[list[float], list[float]]:
    """The GUI thread's seconds per step record to mark the spikes of a run being trained, its steps.tsv growing
    `window` steps a record to `steps` steps: following the file (the lines appended since the last record), and
    marking again from the whole file (as on opening a run), each at every record."""
    import numpy as np
    from PySide6.QtCore import QSignalBlocker
    from PySide6.QtWidgets import QApplication

    from mlm_studio.core.storage.step_file import append_steps
    from mlm_studio.ui.panels.training.step_batch import StepBatches
    from mlm_studio.ui.widgets.live_plots import LivePlots
    from mlm_studio.ui.workspace import Workspace

    QApplication.instance() or QApplication([])
    rng = np.random.default_rng(0)
    loss = 6.0 - np.linspace(0, 2, steps) + rng.normal(0, 0.05, steps)
    loss[rng.choice(steps, steps // 500, replace=False)] += 2.0
    run = root / "live"
    run.mkdir()
    plots = LivePlots()
    batches = StepBatches(plots, Workspace(runs_root=root))
    batches.mark(run)
    followed, whole = [], []
    for end in range(window, steps + 1, window):
        append_steps(run, [(step, float(loss[step - 1]), 1.0) for step in range(end - window + 1, end + 1)])
        start = time.thread_time()
        batches.mark_new()  # what the step record's `stepped` calls
        followed.append(time.thread_time() - start)
        with QSignalBlocker(plots):
            plots.add("step", {"step": end, "loss": float(loss[end - 1]), "accuracy": 0.1, "grad_norm": 1.0})
        if end % (steps // 10) == 0:  # the whole file again, at ten points of the run
            start = time.thread_time()
            batches.mark(run)
            whole.append(time.thread_time() - start)
    return followed, whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5000, help="steps of the run whose spikes are followed")
    args = parser.parse_args()
    from mlm_studio.core.training import replay
    from mlm_studio.ui.panels.training.step_batch import StepBatchView

    replays, draws = [], []
    if hasattr(replay, "Replayer"):  # a tree from before it replays otherwise: its clicks are timed whole
        timed(replay.Replayer, "replay", replays)
    timed(StepBatchView, "_show", draws)
    with tempfile.TemporaryDirectory() as folder:
        followed, whole = live_mark_costs(Path(folder), args.steps, 10) if args.steps else ([], [])
        run = trained_run(Path(folder))
        first, later = click_times(run, args.clicks)
    ms = [s * 1000 for s in later]
    print(f"default preset, {machine()}, load average {os.getloadavg()[0]:.2f} (1 min) after the clicks")
    print(f"first click (the run's blocks read): {first * 1000:.0f} ms")
    print(f"{len(ms)} later clicks: median {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms, min {min(ms):.0f} ms")
    for said, seconds in (("the replay (its task's thread)", replays[1:]), ("drawing the batch", draws[1:])):
        part = [s * 1000 for s in seconds]
        if part:
            print(f"  of which {said}: median {statistics.median(part):.0f} ms, max {max(part):.0f} ms")
    if followed:
        print(
            f"spikes of a run being trained, {args.steps} steps, 10 a record: the GUI thread per record "
            f"{statistics.median(followed) * 1000:.2f} ms median, {max(followed) * 1000:.2f} ms max, "
            f"{statistics.median(followed[-50:]) * 1000:.2f} ms over the last 50 records; the whole file read again "
            f"{whole[-1] * 1000:.1f} ms at {args.steps} steps"
        )


if __name__ == "__main__":
    main()
