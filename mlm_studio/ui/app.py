"""Start the Qt application: the interactive window, or an offscreen screenshot of it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

SCREENSHOT_SIZE = (1280, 800)
SCREENSHOT_TIMEOUT_MS = 300_000
POLL_MS = 100


def run_gui(screenshot: Path | None = None) -> int:
    """Open the main window; with `screenshot`, render it offscreen once loaded, save the PNG and exit."""
    if screenshot is not None:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from mlm_studio.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("MLM Studio")
    app.setApplicationName("MLM Studio")
    app.setStyle("Fusion")
    if screenshot is None:
        window = MainWindow(QSettings())
        window.show()
        return app.exec()

    window = MainWindow(settings=None, restore=False)
    window.resize(*SCREENSHOT_SIZE)
    window.show()
    window.corpus_panel.use_builtin()
    outcome = {"code": 1}

    def capture_when_ready() -> None:
        if window.corpus_panel.runner.running or window.device_label.text().endswith("detecting…"):
            return
        poll.stop()
        if window.workspace.corpus is None:
            print("The built-in corpus could not be loaded; no screenshot was written.", file=sys.stderr)
        elif window.grab().save(str(screenshot)):
            outcome["code"] = 0
            print(f"Screenshot written to {screenshot}")
        else:
            print(f"Could not write {screenshot}.", file=sys.stderr)
        window.close()
        app.quit()

    def give_up() -> None:
        print("Timed out waiting for the built-in corpus; no screenshot was written.", file=sys.stderr)
        window.close()
        app.quit()

    poll = QTimer(window)
    poll.timeout.connect(capture_when_ready)
    poll.start(POLL_MS)
    QTimer.singleShot(SCREENSHOT_TIMEOUT_MS, give_up)
    app.exec()
    return outcome["code"]
