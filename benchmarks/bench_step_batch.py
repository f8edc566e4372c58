"""From a click on a point of the Training panel's loss curve to that step's batch shown, on the default preset: the
run's blocks read (the first click) and then each click timed from the mouse press to the step's blocks drawn in
the step's batch window, replayed with the checkpoint before the step.

The run is the default preset trained on the built-in corpus for STEPS steps, a checkpoint at every step (so each
click replays a step with its own weights, as the test in tests/ui/alone does).

Run: python benchmarks/bench_step_batch.py [--clicks 8] (PYTHONPATH at another tree measures that tree's window alike)
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
    list(Trainer(run, *training_blocks(run, corpus)).run())
    return run.path


def click_times(run: Path, clicks: int) -> tuple[float, list[float]]:
    """Seconds of the first click (the blocks read) and of each later one, on steps 2.. in turn."""
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from mlm_studio.ui.panels.training import TrainingPanel
    from mlm_studio.ui.workspace import Workspace

    app = QApplication.instance() or QApplication([])
    panel = TrainingPanel(Workspace(runs_root=run.parent))
    panel.resize(1200, 760)
    panel.show()
    panel.refresh_runs()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run = trained_run(Path(folder))
        first, later = click_times(run, args.clicks)
    ms = [s * 1000 for s in later]
    print(f"default preset, {machine()}, load average {os.getloadavg()[0]:.2f}")
    print(f"first click (the run's blocks read): {first * 1000:.0f} ms")
    print(f"{len(ms)} later clicks: median {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms, min {min(ms):.0f} ms")


if __name__ == "__main__":
    main()
