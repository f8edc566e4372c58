"""The workbench's own cost: training tokens/s with the window open and plots live against the same run
headless, the longest event-loop stall while training (a 5 ms timer probe), start-up to window shown and the
longest stall of a first launch while the engine loads.

Run: python benchmarks/bench_gui.py (--launch: the launch figures alone)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mlm_studio.ui.app import keep_openmp_threads_ready

keep_openmp_threads_ready()  # as the application does before PyTorch loads
from common import machine  # noqa: E402

STEPS = 300
REPEATS = 3
PROBE_MS = 5
LAUNCHES = 5


def headless(config, corpus, tokenizer, root: Path) -> float:
    from mlm_studio.core.runs.records import StepRecord
    from mlm_studio.core.training.runs import NewRun, new_run_path, prepare_trainer

    trainer = prepare_trainer(new_run_path(root, "cli"), begin=lambda: NewRun(config, corpus, tokenizer))
    rates = [r.tokens_per_second for r in trainer.run() if isinstance(r, StepRecord)]
    return statistics.median(rates)


def in_the_window(app, config, corpus, tokenizer, root: Path) -> tuple[float, float, float]:
    """Median tokens/s and the longest gaps between 5 ms timer ticks, training from the Training panel:
    over the whole run, and once the first training record has been plotted."""
    from PySide6.QtCore import QElapsedTimer, QTimer

    from mlm_studio.core.runs.records import StepRecord
    from mlm_studio.ui.main_window import MainWindow
    from mlm_studio.ui.tasks import tasks_running

    window = MainWindow(settings=None, restore=False, runs_root=root)
    window.resize(1280, 800)
    window.show()
    window.workspace.set_tokenizer(tokenizer)  # first, or the corpus would start training a tokenizer of its own
    window.workspace.set_corpus(corpus)
    window.workspace.set_config(config)
    window.show_panel(window.training_panel)
    while tasks_running():  # the corpus statistics and the masking preview, computed once the corpus arrives
        app.processEvents()
    rates, gaps, steady = [], [], []
    clock = QElapsedTimer()
    probe = QTimer()
    probe.setInterval(PROBE_MS)

    def tick() -> None:
        if clock.isValid():
            gaps.append(clock.restart())
            if rates:
                steady.append(gaps[-1])
        else:
            clock.start()

    probe.timeout.connect(tick)
    window.training_panel.controller.record.connect(
        lambda r: isinstance(r, StepRecord) and rates.append(r.tokens_per_second)
    )
    window.training_panel.controller.state_changed.connect(lambda state: state == "running" and probe.start())
    window.training_panel.run_finished.connect(app.quit)
    window.training_panel.start()
    app.exec()
    probe.stop()
    window.close()
    return statistics.median(rates), max(gaps) - PROBE_MS, max(steady) - PROBE_MS


LAUNCH = r"""
import os, sys, tempfile, time
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from mlm_studio.ui.app import keep_openmp_threads_ready
keep_openmp_threads_ready()
from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv[:1])
from mlm_studio.ui.main_window import MainWindow
from mlm_studio.ui.tasks import collect_garbage_on_the_gui_thread
collector = collect_garbage_on_the_gui_thread()  # as the application collects
settings = QSettings(os.path.join(tempfile.mkdtemp(), "first.ini"), QSettings.Format.IniFormat)  # a first launch
window = MainWindow(settings, deferred=True)
window.show()
app.processEvents()
print("shown", flush=True)
PANELS = ("corpus", "masking", "config", "training", "playground", "evaluation")
def stage():  # what the window had built by the end of a gap: the work the gap was spent on
    if window.ready:
        return "menus and session"
    built = [name for name in PANELS if hasattr(window, name + "_panel")]
    if not built:
        return "engine loading"
    panel = getattr(window, built[-1] + "_panel")
    if built[-1] == "training":
        return f"training panel, plot {len(panel.plots.plots)}"
    if built[-1] == "evaluation":
        return f"evaluation panel, tab {panel.tabs.count()}"
    return built[-1] + " panel"
gaps, last = [(0.0, "")], [time.perf_counter()]
def tick():
    now = time.perf_counter()
    gaps.append((now - last[0], stage()))
    last[0] = now
probe = QTimer()
probe.setInterval(PROBE_MS)
probe.timeout.connect(tick)
probe.start()
def ready():
    tick()
    print("ready", flush=True)
    gap, where = max(gaps)
    training = max(g for g, at in gaps if at.startswith("training panel"))
    print(f"{(gap * 1000 - PROBE_MS):.0f} {(training * 1000 - PROBE_MS):.0f} {where}", flush=True)
    app.quit()
window.panels_ready.connect(ready)
app.exec()
""".replace("PROBE_MS", str(PROBE_MS))


def launch_seconds() -> tuple[float, float, float, str, float]:
    """A cold first launch as the application makes it (no settings yet): seconds until the window is shown and
    until its panels are ready (PyTorch imported in the background), measured from outside the process, the
    longest event-loop stall in milliseconds between the two (a 5 ms timer probe), what it was spent on, and the
    longest stall while the Training panel was built."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", LAUNCH], stdout=subprocess.PIPE, text=True)
    child.stdout.readline()
    shown = time.perf_counter() - started
    child.stdout.readline()
    ready = time.perf_counter() - started
    stall, training, where = child.stdout.readline().split(" ", 2)
    child.wait()
    return shown, ready, float(stall), where.strip(), float(training)


def main() -> None:
    from PySide6.QtWidgets import QApplication

    from mlm_studio.core.config.presets import preset
    from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
    from mlm_studio.core.data.corpus import load_corpus
    from mlm_studio.core.data.tokenizer import train_tokenizer

    app = QApplication.instance() or QApplication([])
    corpus = load_corpus([ensure_builtin_corpus()])
    config = preset("quickstart")
    tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents)
    config = replace(
        config, training=replace(config.training, max_steps=STEPS, eval_interval=100, checkpoint_interval=10**6)
    )
    cli, gui, stalls, steady = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(REPEATS):
            cli.append(headless(config, corpus, tokenizer, Path(tmp)))
            rate, stall, settled = in_the_window(app, config, corpus, tokenizer, Path(tmp))
            gui.append(rate)
            stalls.append(stall)
            steady.append(settled)
    print(f"quickstart preset, {STEPS} steps per run, {REPEATS} runs alternated; {machine()}")
    print("| measure | value |")
    print("|---|---|")
    print(f"| tokens/s headless (median of runs) | {statistics.median(cli):,.0f} ({min(cli):,.0f}–{max(cli):,.0f}) |")
    print(f"| tokens/s in the window, plots live | {statistics.median(gui):,.0f} ({min(gui):,.0f}–{max(gui):,.0f}) |")
    print(f"| window ÷ headless | {statistics.median(gui) / statistics.median(cli):.2f}× |")
    runs = ", ".join(f"{s:.0f}" for s in stalls)
    print(f"| longest event-loop stall, whole run (start included) | {max(stalls):.0f} ms (runs: {runs}) |")
    runs = ", ".join(f"{s:.0f}" for s in steady)
    print(f"| longest event-loop stall once training is under way | {max(steady):.0f} ms (runs: {runs}) |")
    print_launches()


def print_launches() -> None:
    """The table rows of five cold first launches."""
    shown, ready, launch_stalls, where, training = zip(*(launch_seconds() for _ in range(LAUNCHES)))
    for label, seconds in zip(("window shown", "panels ready (PyTorch loaded behind it)"), (shown, ready)):
        spread = f"{min(seconds):.2f}–{max(seconds):.2f}"
        print(
            f"| launch to {label}, median of {LAUNCHES} cold starts | {statistics.median(seconds):.2f} s ({spread}) |"
        )
    runs = ", ".join(f"{s:.0f} ({at})" for s, at in zip(launch_stalls, where))
    print(
        f"| longest event-loop stall from window shown to panels ready | {max(launch_stalls):.0f} ms (runs: {runs}) |"
    )
    runs = ", ".join(f"{s:.0f}" for s in training)
    print(f"| longest stall while the Training panel is built | {max(training):.0f} ms (runs: {runs}) |")


if __name__ == "__main__":
    if sys.argv[1:] == ["--launch"]:  # the launch rows alone, in a minute
        print_launches()
    else:
        main()
