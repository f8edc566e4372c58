"""The Configuration form when a published model is imported to be continued: it shows the continuation recipe and
says why; the user's edits win; Train from scratch brings the preset's rate back."""

from itertools import islice

import pytest
from PySide6.QtCore import Qt

from mlm_studio.ui.panels.config.panel import ConfigPanel
from mlm_studio.ui.workspace import Workspace
from tests.core.family_folders import make_folder


@pytest.fixture
def panel(qtbot):
    widget = ConfigPanel(Workspace())
    qtbot.addWidget(widget)
    widget.resize(1280, 720)
    widget.show()
    return widget


def test_an_import_shows_the_continuation_recipe_and_why(qtbot, panel, small_corpus, tmp_path):
    rate, warmup = panel.editors[("training", "learning_rate")], panel.editors[("training", "warmup_steps")]
    assert rate.text() == "0.002"
    folder = make_folder("bert", list(islice(small_corpus.iter_documents(), 300)), tmp_path / "published")
    with qtbot.waitSignal(panel.import_runner.succeeded, timeout=60_000):
        panel.import_folder(str(folder))
    assert rate.text() == "3e-05" and warmup.value() == 100
    assert panel.workspace.config.training.learning_rate == 3e-5
    note = panel.import_note.text()
    assert "They start from learning rate 3e-05 with 100 warm-up steps, the continuation recipe" in note
    assert "a from-scratch rate would erase what it learned" in note and panel.import_frame.isVisible()
    shown = panel.import_note
    qtbot.waitUntil(lambda: shown.height() >= shown.heightForWidth(shown.width()))  # the note whole, not clipped
    panel.grab().save(str(tmp_path / "continuation.png"))

    qtbot.mouseClick(panel.forget_button, Qt.MouseButton.LeftButton)
    assert rate.text() == "0.002" and panel.workspace.config.training.learning_rate == 2e-3

    with qtbot.waitSignal(panel.import_runner.succeeded, timeout=60_000):
        panel.import_folder(str(folder))
    assert rate.text() == "3e-05"
    rate.selectAll()
    qtbot.keyClicks(rate, "0.0003")
    assert panel.workspace.config.training.learning_rate == 3e-4  # the user's value wins
    qtbot.mouseClick(panel.forget_button, Qt.MouseButton.LeftButton)
    assert rate.text() == "0.0003" and panel.workspace.config.training.learning_rate == 3e-4  # and stays
