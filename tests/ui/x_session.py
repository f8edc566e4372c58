"""One start of the real window on an X server (the xcb platform), as the application launches it: the deferred
build, the user's settings file, the panel it was left on. It shows the window at a size, waits until the panels
are built and the corpus is read, shows every panel once, ends on the panel given, closes (saving the settings)
and prints what it saw as JSON: each named splitter's orientation and its first part's share (None while never
laid out), the window's narrowest width and each panel's, what is cut at that width, and the panel it
opened on."""

import json
import sys
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QSplitter, QTabBar, QToolButton

TIMEOUT_MS = 120_000


def cut_at(app, window, width: int) -> list[str]:
    """Each panel shown at `width`: what it cannot show whole (a table or text scrolled sideways, tabs that need
    arrows to be reached)."""
    window.resize(width, window.height())
    cut = []
    for row in range(window.navigation.count()):
        window.navigation.setCurrentRow(row)
        for _ in range(20):
            app.processEvents()
        panel, title = window.stack.currentWidget(), window.navigation.item(row).text()
        for area in panel.findChildren(QAbstractScrollArea):
            if area.isVisible() and area.horizontalScrollBar().isVisible():
                cut.append(f"{title}: a {type(area).__name__} scrolls sideways")
        for tabs in panel.findChildren(QTabBar):
            if tabs.isVisible() and any(arrow.isVisible() for arrow in tabs.findChildren(QToolButton)):
                cut.append(f"{title}: tabs {[tabs.tabText(i) for i in range(tabs.count())]} need arrows")
    return cut


def main(settings_file: str, runs: str, last_panel: int, width: int, height: int) -> int:
    from mlm_studio.ui.main_window import MainWindow

    app = QApplication([sys.argv[0], "-platform", "xcb"])
    window = MainWindow(QSettings(settings_file, QSettings.Format.IniFormat), runs_root=Path(runs), deferred=True)
    window.resize(width, height)
    window.show()
    seen: dict = {}

    def check() -> None:
        if not (window.ready and window.workspace.corpus is not None):
            QTimer.singleShot(100, check)
            return
        seen["opened_on"] = window.navigation.currentRow()
        for row in range(window.navigation.count()):
            window.navigation.setCurrentRow(row)
            app.processEvents()
        seen["splitters"] = {
            s.objectName(): [s.orientation().name, s.sizes()[0] / sum(s.sizes()) if sum(s.sizes()) else None]
            for s in window.findChildren(QSplitter)
            if s.objectName()
        }
        seen["narrowest"] = window.minimumSizeHint().width()
        seen["panels"] = {
            window.navigation.item(row).text(): window.stack.widget(row).minimumSizeHint().width()
            for row in range(window.navigation.count())
        }
        seen["cut"] = cut_at(app, window, seen["narrowest"])
        window.navigation.setCurrentRow(last_panel)
        window.close()
        app.quit()

    QTimer.singleShot(0, check)
    QTimer.singleShot(TIMEOUT_MS, app.quit)
    app.exec()
    print(json.dumps(seen))
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
