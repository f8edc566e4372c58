"""What the window remembers comes back to the widget that saved it, whatever order the panels were built in, and a
damaged or absurd settings file never stops the start."""

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QSplitter

from mlm_studio.ui import session
from mlm_studio.ui.main_window import MainWindow

READY_MS = 120_000
HUGE = "99999999999999999999"


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def launch(qtbot, settings, runs_root, corpus=True):
    """The application's own start: the window first, its panels built in slices once the engine is loaded."""
    window = MainWindow(settings, runs_root=runs_root, deferred=True)
    qtbot.addWidget(window)
    window.resize(1280, 720)
    window.show()
    qtbot.waitUntil(lambda: window.ready, timeout=READY_MS)
    if corpus:
        qtbot.waitUntil(lambda: window.workspace.corpus is not None, timeout=READY_MS)
    return window


def share(splitter: QSplitter) -> float:
    """The first part's share of the splitter (its sizes scale with the panel's size)."""
    sizes = splitter.sizes()
    return sizes[0] / sum(sizes)


def orientations(window) -> dict[str, Qt.Orientation]:
    return {s.objectName(): s.orientation() for s in window.findChildren(QSplitter) if s.objectName()}


def test_every_remembered_splitter_has_a_unique_name(qtbot, tmp_path):
    window = MainWindow(None, restore=False, runs_root=tmp_path)
    qtbot.addWidget(window)
    splitters = window.findChildren(QSplitter)
    names = [s.objectName() for s in splitters]
    assert len(names) >= 5 and all(names) and len(set(names)) == len(names)


def test_three_restarts_with_different_last_panels_keep_every_layout(qtbot, settings, tmp_path):
    """Each start ends on another panel (so the panels are first shown, and built, in another order); every
    splitter keeps its orientation and its own sizes, and the window still narrows to 900 px."""
    runs = tmp_path / "runs"
    first = launch(qtbot, settings, runs)
    built = orientations(first)
    assert built["training-plots-runs"] == Qt.Orientation.Vertical
    assert built["masking-samples-rates"] == Qt.Orientation.Vertical
    training = first.findChild(QSplitter, "training-plots-runs")
    first.show_panel(first.training_panel)
    training.setSizes([300, 250])
    wanted = share(training)
    for last in ("Masking preview", "Training", "Fine-tune"):
        rows = [first.navigation.item(r).text() for r in range(first.navigation.count())]
        first.navigation.setCurrentRow(rows.index(last))
        first.close()
        first = launch(qtbot, settings, runs)
        assert first.navigation.currentItem().text() == last
        assert orientations(first) == built, last
        first.show_panel(first.training_panel)  # a splitter takes its remembered sizes once shown at its size
        assert share(first.findChild(QSplitter, "training-plots-runs")) == pytest.approx(wanted, abs=0.01), last
    panels = map(first.stack.widget, range(first.stack.count()))
    widths = {type(panel).__name__: panel.minimumSizeHint().width() for panel in panels}
    widths["status"] = first.statusBar().minimumSizeHint().width()
    assert first.minimumSizeHint().width() <= 900, str(widths)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("plots/smoothing", HUGE),
        ("window/panel", HUGE),
        ("window/panel", "-3"),
        ("plots/smoothing", "a lot"),
        ("training/probes", "[1, 2]"),
        ("training/config", "[[[not toml"),
        ("corpus/paths", HUGE),
        ("splitters/training-plots-runs", "garbage"),
    ],
)
def test_an_absurd_remembered_value_is_ignored_and_the_window_becomes_ready(qtbot, settings, tmp_path, key, value):
    settings.setValue("session/version", session.VERSION)
    settings.setValue(key, value)
    settings.sync()
    window = launch(qtbot, settings, tmp_path / "runs", corpus=key != "corpus/paths")
    assert window.ready
    assert window.training_panel.curves.smoothing_slider.value() in range(0, 100)
    assert 0 <= window.navigation.currentRow() < window.navigation.count()
    assert orientations(window)["training-plots-runs"] == Qt.Orientation.Vertical


def test_splitters_saved_by_index_by_an_earlier_version_are_not_restored(qtbot, settings, tmp_path):
    """Version 1 saved splitter states under their index: they could belong to any splitter, so none is used."""
    window = MainWindow(None, restore=False, runs_root=tmp_path)
    qtbot.addWidget(window)
    horizontal = QSplitter(Qt.Orientation.Horizontal)
    for index in range(6):
        settings.setValue(f"splitters/{index}", horizontal.saveState())
    settings.sync()
    again = launch(qtbot, settings, tmp_path / "runs")
    assert orientations(again)["training-plots-runs"] == Qt.Orientation.Vertical
    again.close()
    fresh = QSettings(settings.fileName(), QSettings.Format.IniFormat)
    assert sorted(fresh.childGroups()).count("splitters") == 1
    fresh.beginGroup("splitters")
    assert "training-plots-runs" in fresh.childKeys() and "0" not in fresh.childKeys()


def test_bounded_int_takes_only_whole_numbers_in_range(settings):
    settings.setValue("t/n", "7")
    assert session.bounded_int(settings, "t/n", 1, 0, 10) == 7
    for bad in (HUGE, "-1", "7.5", "seven", ""):
        settings.setValue("t/n", bad)
        assert session.bounded_int(settings, "t/n", 1, 0, 10) == 1, bad
