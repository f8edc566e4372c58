"""What README says of the window is what the window is: its panels, their shortcuts and its narrowest width."""

import re
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from mlm_studio.ui.main_window import MainWindow

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
NUMBERS = {"Five": 5, "Six": 6, "Seven": 7, "Eight": 8, "Nine": 9}


@pytest.fixture
def window(qtbot, tmp_path):
    widget = MainWindow(None, restore=False, runs_root=tmp_path / "runs")
    qtbot.addWidget(widget)
    widget.resize(1280, 720)
    widget.show()
    return widget


def test_the_panels_their_order_and_their_shortcuts_are_as_readme_says(window):
    said = re.search(r"(\w+) panels, in order \(Ctrl\+1 … Ctrl\+(\d)\): ([^.]+)\.", README)
    titles = [window.navigation.item(row).text() for row in range(window.navigation.count())]
    assert NUMBERS[said.group(1)] == int(said.group(2)) == len(titles)
    assert [t.strip() for t in said.group(3).replace("\n", " ").split(",")] == titles
    assert [a.shortcut().toString() for a in window.view_actions] == [f"Ctrl+{n + 1}" for n in range(len(titles))]
    for title in titles:
        assert f"**{title}.**" in README or f"*{title}* panel" in README, title


def test_the_narrowest_width_readme_quotes_is_measured(window):
    """Every panel shown once (a panel may widen when first laid out), the window's minimum is what README says,
    within the 900 px the tests hold it to."""
    claimed = int(re.search(r"narrows to (\d+) px", README).group(1))
    for row in range(window.navigation.count()):
        window.navigation.setCurrentRow(row)
        QApplication.processEvents()
    measured = window.minimumSizeHint().width()
    panels = range(window.navigation.count())
    widths = {window.navigation.item(r).text(): window.stack.widget(r).minimumSizeHint().width() for r in panels}
    assert measured <= claimed <= 900, f"the panels' own minimum widths: {widths}"
    assert claimed - measured <= 10, f"README says {claimed} px, the window narrows to {measured} px"
