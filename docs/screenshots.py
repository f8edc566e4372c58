"""Screenshots of every panel in the light and the dark scheme, for the README: `python docs/screenshots.py
[--steps N]`.

Trains a short run on the built-in corpus first (300 steps by default: about half a minute on an idle
machine, far longer on a busy one), so the plots and the playground have something to show; writes
assets/<panel>-<scheme>.png at 1366×768. Offscreen unless QT_QPA_PLATFORM says otherwise: the README's were
rendered on an X server (`QT_QPA_PLATFORM=xcb`, Xvfb at 1366×768); each PNG names its platform, size and style
in its Description text.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ASSETS = Path(__file__).resolve().parent.parent / "assets"
PANELS = ("corpus", "masking", "config", "training", "playground")
EVALUATION_TABS = ("samples", "failures", "contexts", "task")  # assets/evaluation-<tab>-<scheme>.png


def main() -> None:
    parser = argparse.ArgumentParser(description="Render the README's screenshots into assets/.")
    parser.add_argument("--steps", type=int, default=300, help="steps of the run the panels show (default 300)")
    steps = parser.parse_args().steps
    from PySide6.QtWidgets import QApplication

    from mlm_studio.ui.main_window import MainWindow
    from mlm_studio.ui.theme import apply_scheme

    app = QApplication(sys.argv[:1])
    app.setStyle("Fusion")
    with tempfile.TemporaryDirectory() as runs:
        window = MainWindow(None, restore=False, runs_root=Path(runs))
        window.resize(1366, 768)
        window.show()
        window.corpus_panel.use_builtin()
        while window.workspace.tokenizer is None or window.corpus_panel.runner.running:
            app.processEvents()
        training = window.training_panel
        config = window.workspace.config
        lengths = {"max_steps": steps, "eval_interval": max(1, steps // 6), "checkpoint_interval": max(1, steps // 3)}
        window.workspace.set_config(replace(config, training=replace(config.training, **lengths)))
        training.start()
        while training.controller.busy:
            app.processEvents()
        window.playground_panel.text_edit.setText("Return a [MASK] of the list.")
        window.playground_panel.predict_now()
        evaluate(app, window.evaluation_panel, Path(runs))
        for scheme in ("light", "dark"):
            apply_scheme(app, scheme)
            for name in PANELS:
                window.show_panel(getattr(window, f"{name}_panel"))
                for _ in range(20):
                    app.processEvents()
                training.plots.redraw(everything=True)
                save(window, ASSETS / f"{name}-{scheme}.png")
            window.show_panel(window.evaluation_panel)
            for number, tab in enumerate(EVALUATION_TABS):
                window.evaluation_panel.tabs.setCurrentIndex(number)
                for _ in range(20):
                    app.processEvents()
                save(window, ASSETS / f"evaluation-{tab}-{scheme}.png")
        window.close()


def save(window, path: Path) -> None:
    """The window's picture, with how it was rendered in its Description."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    image = window.grab().toImage()
    how = f"{window.width()}x{window.height()}, {QGuiApplication.platformName()}, {QApplication.style().name()} style"
    image.setText("Description", f"MLM Studio's window: {how}")
    image.save(str(path))
    print(f"{path} ({how})")


def evaluate(app, panel, folder: Path) -> None:
    """Every checkpoint scored with the package task of benchmarks/bench_task_probe.py, then the latest one
    evaluated and the word "list" mapped."""
    import csv

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from bench_task_probe import package_task

    texts, labels = package_task()
    task = folder / "packages.csv"
    with task.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *zip(texts, labels)])
    panel.refresh_models()
    panel.task_view.path_edit.setText(str(task))

    def wait(signal) -> None:
        done = []
        signal.connect(lambda *_: done.append(True))
        while not done:
            app.processEvents()

    panel.track()
    wait(panel.tracked)
    panel.evaluate()
    wait(panel.evaluated)
    panel.probe()
    wait(panel.probed)
    panel.samples_view.filter_combo.setCurrentIndex(0)
    panel.context_view.word_edit.setText("list")
    panel.map_word("list", panel.context_view.layer_spin.value())
    wait(panel.mapped)


if __name__ == "__main__":
    main()
