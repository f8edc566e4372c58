import subprocess
import sys

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QFileDialog

from mlm_studio.ui.main_window import TITLE_BAR_ALLOWANCE, MainWindow
from mlm_studio.ui.panels.corpus.report import BUILTIN_LABEL

LOAD_TIMEOUT_MS = 60_000


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def open_window(qtbot, settings, runs_root=None):
    window = MainWindow(settings, runs_root=runs_root)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.workspace.corpus is not None, timeout=LOAD_TIMEOUT_MS)
    return window


def test_first_start_opens_on_the_builtin_corpus(qtbot, settings):
    window = open_window(qtbot, settings)
    assert window.corpus_panel.table.item(0, 0).text() == BUILTIN_LABEL
    assert window.status.corpus_label.text().startswith("Corpus: ") and "documents" in window.status.corpus_label.text()
    qtbot.waitUntil(lambda: "detecting" not in window.status.device_label.text(), timeout=LOAD_TIMEOUT_MS)
    assert window.status.device_label.text().startswith("Device: ") and "CPU" in window.status.device_label.toolTip()
    titles = [window.navigation.item(i).text() for i in range(window.navigation.count())]
    assert titles == ["Corpus", "Masking preview", "Configuration", "Training", "Playground", "Evaluation", "Fine-tune"]
    assert window.status.memory_label.text().startswith("Memory: ")


def test_sources_and_options_are_remembered_between_starts(qtbot, settings, tmp_path, monkeypatch):
    f = tmp_path / "mine.txt"
    f.write_text("one\ntwo\nthree", encoding="utf-8")
    window = open_window(qtbot, settings)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *args, **kw: ([str(f)], ""))
    panel = window.corpus_panel
    panel.options_row.unit_combo.blockSignals(True)
    panel.options_row.unit_combo.setCurrentIndex(panel.options_row.unit_combo.findData("line"))
    panel.options_row.unit_combo.blockSignals(False)
    panel.builtin_button.click()
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=LOAD_TIMEOUT_MS)
    panel.table.selectRow(0)
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        window.open_corpus_action.trigger()
    names = [panel.table.item(r, 0).text() for r in range(panel.table.rowCount())]
    assert names == [BUILTIN_LABEL, "mine.txt"] or names == ["mine.txt", BUILTIN_LABEL]
    window.close()

    again = open_window(qtbot, settings)
    qtbot.waitUntil(lambda: not again.corpus_panel.runner.running, timeout=LOAD_TIMEOUT_MS)
    assert sorted(str(p) for p in again.corpus_panel.paths) == sorted(str(p) for p in panel.paths)
    assert again.workspace.read_options.text_unit == "line"


def test_cli_help_lists_the_commands():
    result = subprocess.run([sys.executable, "-m", "mlm_studio", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    assert "gui" in result.stdout and "--screenshot" in result.stdout


@pytest.mark.slow  # a fresh interpreter trains the default preset to its third evaluation
def test_screenshot_command_writes_the_window_image(tmp_path):
    out = tmp_path / "shot.png"
    result = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "--screenshot", str(out)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    assert len({image.pixel(x, y) for x in range(0, 1280, 40) for y in range(0, 800, 40)}) > 5


@pytest.mark.slow  # a tokenizer on the built-in corpus and a training, by the mouse
def test_the_whole_workflow_with_the_mouse(qtbot, settings, tmp_path):
    """Built-in corpus → tokenizer → masking preview → a tiny training → a prediction in the playground."""
    from PySide6.QtCore import Qt

    window = open_window(qtbot, settings, runs_root=tmp_path / "runs")
    qtbot.waitUntil(lambda: window.workspace.tokenizer is not None, timeout=LOAD_TIMEOUT_MS)
    window.show_panel(window.masking_panel)
    qtbot.waitUntil(lambda: window.masking_panel.preview is not None, timeout=LOAD_TIMEOUT_MS)
    assert window.masking_panel.rates.table.item(0, 1).text()

    window.show_panel(window.config_panel)
    config_panel = window.config_panel
    config_panel.preset_combo.setCurrentIndex(config_panel.preset_combo.findData("tiny"))
    for field, text in (
        (("training", "max_steps"), "20"),
        (("training", "eval_interval"), "10"),
        (("training", "checkpoint_interval"), "10"),
    ):
        editor = config_panel.editors[field]
        editor.selectAll()
        qtbot.keyClicks(editor, text)
    assert config_panel.error == ""
    assert window.workspace.config.training.max_steps == 20

    window.show_panel(window.training_panel)
    with qtbot.waitSignal(window.training_panel.run_finished, timeout=LOAD_TIMEOUT_MS * 3):
        qtbot.mouseClick(window.training_panel.start_button, Qt.MouseButton.LeftButton)
    assert "Training completed at step 20" in window.training_panel.message_bar.text

    window.show_panel(window.playground_panel)
    playground = window.playground_panel
    assert playground.views[0].model_combo.currentText().startswith("Current run:")
    with qtbot.waitSignal(playground.predicted, timeout=LOAD_TIMEOUT_MS):
        playground.text_edit.setText("Return a [MASK] of the list.")
    assert len(playground.views[0].buttons[0]) == 5


def test_each_view_entry_and_its_shortcut_opens_its_own_panel(qtbot, settings):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    window = open_window(qtbot, settings)
    for row, action in enumerate(window.view_actions):
        window.navigation.setCurrentRow((row + 1) % len(window.view_actions))
        action.trigger()  # the menu entry
        assert window.navigation.currentRow() == row
        window.navigation.setCurrentRow((row + 1) % len(window.view_actions))
        QTest.keyClick(window, Qt.Key(Qt.Key.Key_1.value + row), Qt.KeyboardModifier.ControlModifier)
        assert window.navigation.currentRow() == row, action.text()


def test_the_launched_window_shows_before_the_engine_and_then_gains_its_panels(qtbot, tmp_path):
    script = (
        "import sys, mlm_studio.ui.main_window\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'tokenizers'}))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr  # showing the window needs neither

    window = MainWindow(None, restore=False, runs_root=tmp_path, deferred=True)
    qtbot.addWidget(window)
    window.show()
    assert window.stack.currentWidget() is window.loading and window.navigation.count() == 0
    with qtbot.waitSignal(window.panels_ready, timeout=60_000):
        pass
    assert window.navigation.count() == 7 and window.stack.currentWidget() is window.corpus_panel
    assert window.view_actions and window.config_panel.editors


def test_the_window_fits_a_laptop_and_cuts_nothing_at_its_narrowest(qtbot, settings):
    """Every panel at the window's minimum width (at most 900 px) shows its forms and tables whole: no scroll area
    scrolls sideways. The first window fits the screen's height."""
    from PySide6.QtWidgets import QAbstractScrollArea

    window = open_window(qtbot, settings)
    qtbot.waitUntil(lambda: window.workspace.tokenizer is not None, timeout=LOAD_TIMEOUT_MS)
    free = window.screen().availableGeometry()
    assert window.height() <= free.height() - TITLE_BAR_ALLOWANCE
    narrowest = window.minimumSizeHint().width()
    assert narrowest <= 900
    window.resize(narrowest, 720)
    for row in range(window.navigation.count()):
        window.navigation.setCurrentRow(row)
        panel = window.stack.currentWidget()

        def scrolled(panel=panel):
            areas = panel.findChildren(QAbstractScrollArea)
            return [type(a).__name__ for a in areas if a.isVisible() and a.horizontalScrollBar().isVisible()]

        try:
            qtbot.waitUntil(lambda p=panel: p.isVisible() and not scrolled(p), timeout=2000)  # once laid out
        except AssertionError:
            pytest.fail(f"{window.navigation.item(row).text()}: {scrolled()} scroll sideways at {narrowest} px")
