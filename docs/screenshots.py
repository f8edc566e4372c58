"""Screenshots of every panel in the light and the dark scheme, for the README: `python docs/screenshots.py
[--steps N] [--only NAME…]`.

Trains a short run on the built-in corpus first (300 steps by default: about half a minute on an idle
machine, far longer on a busy one), so the plots and the playground have something to show, evaluates it,
searches the corpus with it and fine-tunes it on a labelled task; writes assets/<panel>-<scheme>.png at
1366×768 (with --only, the PNGs whose names begin so). Offscreen unless QT_QPA_PLATFORM says otherwise: the
README's were rendered on an X server (`QT_QPA_PLATFORM=xcb`, Xvfb at 1366×768); each PNG names its platform,
size and style in its Description text.
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
EVALUATION_TABS = ("samples", "failures", "contexts", "task", "search")  # assets/evaluation-<tab>-<scheme>.png
FINETUNE_TABS = ("curves", "scores")  # assets/finetune-<tab>-<scheme>.png: the first two of the panel's tabs


def main() -> None:
    parser = argparse.ArgumentParser(description="Render the README's screenshots into assets/.")
    parser.add_argument("--steps", type=int, default=300, help="steps of the run the panels show (default 300)")
    parser.add_argument("--only", nargs="+", default=[""], metavar="NAME", help="write only the PNGs named so")
    args = parser.parse_args()
    steps, only = args.steps, tuple(args.only)
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
        task = evaluate(app, window.evaluation_panel, Path(runs))
        search(app, window.evaluation_panel)
        fine_tune(app, window.finetune_panel, task)
        for scheme in ("light", "dark"):
            apply_scheme(app, scheme)
            for name in PANELS:
                window.show_panel(getattr(window, f"{name}_panel"))
                for _ in range(20):
                    app.processEvents()
                training.plots.redraw(everything=True)
                save(window, ASSETS / f"{name}-{scheme}.png", only)
            for panel, tabs, name in (
                (window.evaluation_panel, window.evaluation_panel.tabs, "evaluation"),
                (window.finetune_panel, window.finetune_panel.results, "finetune"),
            ):
                window.show_panel(panel)
                for number, tab in enumerate(EVALUATION_TABS if name == "evaluation" else FINETUNE_TABS):
                    tabs.setCurrentIndex(number)
                    for _ in range(20):
                        app.processEvents()
                    save(window, ASSETS / f"{name}-{tab}-{scheme}.png", only)
        window.close()


def save(window, path: Path, only: tuple[str, ...]) -> None:
    """The window's picture, with how it was rendered in its Description (if its name begins as one of `only`)."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    if not path.name.startswith(only):
        return
    image = window.grab().toImage()
    how = f"{window.width()}x{window.height()}, {QGuiApplication.platformName()}, {QApplication.style().name()} style"
    image.setText("Description", f"MLM Studio's window: {how}")
    image.save(str(path))
    print(f"{path} ({how})")


def wait(app, signal) -> None:
    done = []
    signal.connect(lambda *_: done.append(True))
    while not done:
        app.processEvents()


def evaluate(app, panel, folder: Path) -> Path:
    """Every checkpoint scored with the package task of benchmarks/bench_task_probe.py, then the latest one
    evaluated and the word "list" mapped; returns the task's file."""
    import csv

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from bench_task_probe import package_task

    texts, labels = package_task()
    task = folder / "packages.csv"
    with task.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *zip(texts, labels)])
    panel.choice.refresh()
    panel.task_view.path_edit.setText(str(task))
    panel.track()
    wait(app, panel.tracked)
    panel.evaluate()
    wait(app, panel.evaluated)
    panel.probe()
    wait(app, panel.probed)
    panel.samples_view.filter_combo.setCurrentIndex(0)
    panel.context_view.word_edit.setText("list")
    panel.map_word("list", panel.context_view.layer_spin.value())
    wait(app, panel.mapped)
    return task


def search(app, panel) -> None:
    """The corpus embedded by the evaluated model, then the documents nearest a query."""
    view = panel.search_view
    view.embed()
    wait(app, view.embedded)
    view.query_edit.setText("sort a list in place")
    view.search()


def fine_tune(app, panel, task: Path) -> None:
    """The run fine-tuned on the first 60 texts of each label of the package task, for three epochs."""
    import csv

    with task.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    by_label = {}
    for row in rows:
        by_label.setdefault(row["label"], []).append(row)
    kept = [row for label in sorted(by_label) for row in by_label[label][:60]]
    small = task.with_name("packages-60.csv")
    with small.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, ["text", "label"])
        writer.writeheader()
        writer.writerows(kept)
    panel.form.refresh_models()
    panel.form.task_edit.setText(str(small))
    panel.form.learning_rate.setValue(2e-4)
    panel.start()
    while panel.controller.busy or panel.mistakes_task.running:
        app.processEvents()


if __name__ == "__main__":
    main()
