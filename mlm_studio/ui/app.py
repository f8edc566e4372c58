"""Start the Qt application: the interactive window, or an offscreen screenshot of it mid-training."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

log = logging.getLogger(__name__)

SCREENSHOT_SIZE = (1280, 800)
SCREENSHOT_TIMEOUT_MS = 600_000
SCREENSHOT_EVALUATIONS = 3
POLL_MS = 100


def main() -> None:
    """The window alone: the entry point of the `mlm-studio-window` launcher (no console on Windows)."""
    sys.exit(run_gui())


def keep_openmp_threads_ready() -> None:
    """Let OpenMP's worker threads wait for the next parallel region by spinning briefly, as they do for the main
    thread. The window trains on a second thread, which gets a pool of workers of its own; with more pools than
    cores GNU OpenMP puts idle workers to sleep at once, and waking them for each of a step's small operations made
    training in the window 15-20% slower than headless. Read when PyTorch loads: call this before; the user's own
    settings of these variables win."""
    if "torch" in sys.modules:
        log.warning("PyTorch is already loaded: OpenMP's wait policy can no longer be set")
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")
    os.environ.setdefault("GOMP_SPINCOUNT", "300000")  # the default spin before sleeping (ACTIVE alone never sleeps)


def run_gui(screenshot: Path | None = None) -> int:
    """Open the main window; with `screenshot`, train briefly offscreen, save a PNG of the window and exit."""
    keep_openmp_threads_ready()
    if screenshot is not None:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("MLM Studio")
    app.setApplicationName("MLM Studio")
    app.setStyle("Fusion")
    from mlm_studio.ui.theme import app_icon

    app.setWindowIcon(app_icon())  # dialogs and the taskbar too
    app.setDesktopFileName("mlm-studio")  # matches the launcher entry, so the taskbar groups it with the icon
    from mlm_studio.ui.main_window import MainWindow
    from mlm_studio.ui.tasks import bugs_said_in, collect_garbage_on_the_gui_thread

    collector = collect_garbage_on_the_gui_thread()
    try:
        if screenshot is None:
            window = MainWindow(QSettings(), deferred=True)
            window.show()
            with bugs_said_in(window):
                return app.exec()
        with tempfile.TemporaryDirectory() as runs:
            window = MainWindow(settings=None, restore=False, runs_root=Path(runs))
            return _screenshot(app, window, screenshot)
    finally:
        collector.timer.stop()


def _screenshot(app, window, path: Path) -> int:
    """Built-in corpus, tokenizer, a quick-start training evaluated every 5 steps; capture after the third
    evaluation (step 15), the curves and the validation points drawn."""
    from PySide6.QtCore import QTimer

    window.resize(*SCREENSHOT_SIZE)
    window.show()
    window.corpus_panel.use_builtin()
    config = window.workspace.config
    window.workspace.set_config(replace(config, training=replace(config.training, eval_interval=5, log_interval=1)))
    evaluations = []
    window.training_panel.controller.record.connect(lambda r: r.kind == "eval" and evaluations.append(r))
    outcome = {"code": 1, "started": False}

    def step() -> None:
        panel = window.training_panel
        if not outcome["started"]:
            ready = window.workspace.tokenizer is not None and not window.corpus_panel.runner.running
            if ready and not window.status.device_label.text().endswith("detecting…"):
                window.show_panel(panel)
                panel.start()
                outcome["started"] = True
            return
        if panel.message_bar.level == "error":
            finish(f"Training failed: {panel.message_bar.text}")
        elif len(evaluations) >= SCREENSHOT_EVALUATIONS:
            panel.plots.redraw(everything=True)
            if window.grab().save(str(path)):
                outcome["code"] = 0
                print(f"Screenshot written to {path}")
            finish(None if outcome["code"] == 0 else f"Could not write {path}.")

    def finish(error: str | None) -> None:
        poll.stop()
        if error:
            print(error, file=sys.stderr)
        window.training_panel.controller.stop()
        window.training_panel.controller.wait(60_000)
        window.close()
        app.quit()

    poll = QTimer(window)
    poll.timeout.connect(step)
    poll.start(POLL_MS)
    QTimer.singleShot(SCREENSHOT_TIMEOUT_MS, lambda: finish("Timed out before the screenshot could be taken."))
    app.exec()
    return outcome["code"]
