import pytest
from PySide6.QtCore import QSettings, Qt

from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.ui.main_window import MainWindow
from mlm_studio.ui.panels.playground.panel import PlaygroundPanel
from mlm_studio.ui.widgets.model_choice import NO_MODEL
from mlm_studio.ui.workspace import Workspace

TIMEOUT_MS = 60_000


@pytest.fixture
def panel(qtbot, trained_runs, listed):
    workspace = Workspace()
    workspace.set_runs_root(trained_runs)
    widget = PlaygroundPanel(workspace)
    qtbot.addWidget(widget)
    widget.resize(1100, 700)
    widget.show()
    listed(workspace)
    return widget


def choose(panel, name, view=0):
    combo = panel.views[view].model_combo
    combo.setCurrentIndex(next(i for i in range(combo.count()) if combo.itemText(i) == name))


def test_typing_predicts_top_k_with_probability_bars(qtbot, panel, trained_runs):
    choose(panel, "late")
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.text_edit.setText("Return the [MASK] of the [MASK].")
    view = panel.views[0]
    assert len(view.buttons) == 2 and all(len(b) == 5 for b in view.buttons)
    expected = FillMask.from_path(trained_runs / "late", int8=True).predict("Return the [MASK] of the [MASK].")
    assert [b.text() for b in view.buttons[0]] == [("…" if c.continues else "") + c.text for c in expected[0]]
    assert view.latency.text().endswith(" ms · int8 weights") and "99%" in view.latency.toolTip()
    assert view.title() == "late / step-0000040"
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.top_k_spin.setValue(8)
    assert len(panel.views[0].buttons[0]) == 8


def test_clicking_a_candidate_fills_its_mask(qtbot, panel):
    choose(panel, "late")
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.text_edit.setText("a [MASK] b [MASK] c")
    second = panel.views[0].buttons[1][0]
    token = second.text().removeprefix("##")
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        qtbot.mouseClick(second, Qt.MouseButton.LeftButton)
    assert panel.text_edit.text() == f"a [MASK] b {token} c"


def test_mask_the_selected_word_with_the_shortcut(qtbot, panel):
    panel.text_edit.setText("Return the value of the list.")
    panel.text_edit.setSelection(len("Return the "), len("value"))
    panel.text_edit.setFocus()
    qtbot.keyClick(panel.text_edit, Qt.Key.Key_M, Qt.KeyboardModifier.ControlModifier)
    assert panel.text_edit.text() == "Return the [MASK] of the list."
    panel.text_edit.setCursorPosition(len("Return the [MASK] of the li"))
    qtbot.mouseClick(panel.mask_button, Qt.MouseButton.LeftButton)
    assert panel.text_edit.text() == "Return the [MASK] of the [MASK]."


def test_iterative_mode_shows_the_filled_sentence(qtbot, panel):
    choose(panel, "late")
    panel.mode_combo.setCurrentIndex(panel.mode_combo.findData(True))
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.text_edit.setText("the [MASK] [MASK] is")
    assert panel.views[0].filled.isVisible() and "[MASK]" not in panel.views[0].filled.text()


def test_two_models_side_by_side(qtbot, panel):
    choose(panel, "late")
    with qtbot.waitSignals([panel.predicted, panel.predicted], timeout=TIMEOUT_MS):
        panel.compare_check.setChecked(True)
        choose(panel, "early", view=1)
    assert panel.views[1].isVisible()
    assert {panel.views[0].title(), panel.views[1].title()} == {"late / step-0000040", "early / step-0000004"}


def test_text_without_a_mask_gets_a_hint(qtbot, panel):
    choose(panel, "late")
    panel.text_edit.setText("no mask at all")
    with qtbot.waitSignal(panel.runners[0].failed, timeout=TIMEOUT_MS):
        panel.predict_now()
    assert "Write [MASK] where a word is missing" in panel.views[0].grid.itemAt(0).widget().text()


def test_a_model_folder_chosen_by_the_user(qtbot, panel, trained_runs):
    checkpoint = trained_runs / "late" / "checkpoints" / "step-0000040"
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.add_folder(str(checkpoint))
    assert panel.views[0].model_combo.currentText() == "Folder: step-0000040"
    assert panel.views[0].title() == "late / step-0000040"


def test_without_any_model_the_user_is_told_what_to_do(qtbot, tmp_path):
    widget = PlaygroundPanel(Workspace(runs_root=tmp_path))
    qtbot.addWidget(widget)
    widget.predict_now()
    assert "No trained model yet" in widget.views[0].grid.itemAt(0).widget().text()


def test_a_view_on_the_current_run_follows_the_next_run(panel, trained_runs):
    panel.workspace.set_run(trained_runs / "early")
    assert panel.views[0].model_combo.currentText().startswith("Current run: early")
    panel.workspace.set_run(trained_runs / "late")  # a new run starts while an older one is listed
    assert panel.views[0].model_combo.currentText().startswith("Current run: late")
    choose(panel, "early")  # chosen by name: it stays
    panel.workspace.set_run(trained_runs / "late")
    assert panel.views[0].model_combo.currentText() == "early"


def test_a_view_without_models_names_none_in_its_title(qtbot, panel, tmp_path, listed):
    choose(panel, "late")
    with qtbot.waitSignals([panel.predicted, panel.predicted], timeout=TIMEOUT_MS):
        panel.compare_check.setChecked(True)
        choose(panel, "early", view=1)
    assert panel.views[1].title() == "early / step-0000004"
    panel.workspace.set_runs_root(tmp_path)  # no run there: both lists empty
    listed(panel.workspace)
    panel.predict_now()
    for view, title in zip(panel.views, ("Model A", "Model B")):
        assert view.model_combo.count() == 0 and view.title() == title
        assert "No trained model yet" in view.grid.itemAt(0).widget().text()


def test_byte_level_pieces_read_as_the_text_they_stand_for(qtbot):
    """A RoBERTa-style vocabulary spells bytes as characters: a piece holding half of a character says which
    bytes it is (and cannot be written alone), a new line shows as its picture, a word as the word."""
    from tokenizers import decoders

    from mlm_studio.core.evaluation.predict import Candidate
    from mlm_studio.ui.panels.playground.prediction import Prediction
    from mlm_studio.ui.panels.playground.results_view import ResultsView

    decoder = decoders.ByteLevel()
    pieces = ("Ġcopy", "âĢ", "Ċ", "ing")  # " copy", the first two bytes of "…", a new line, a word's end
    candidates = []
    for n, token in enumerate(pieces):  # as the engine writes a byte-level piece: through the decoder
        text = decoder.decode([token])
        candidates.append(Candidate(token, n, 0.25, text.lstrip(), not text[:1].isspace()))
    assert "\ufffd" in candidates[1].text and candidates[2].text == ""
    view = ResultsView("Model A")
    qtbot.addWidget(view)
    view.show_prediction(Prediction("tiny-roberta", (tuple(candidates),), None, 1.0), "model")
    buttons = view.buttons[0]
    assert [b.text() for b in buttons] == ["copy", "bytes e2 80", "␊", "…ing"]
    assert [b.isEnabled() for b in buttons] == [True, False, True, True]
    assert "part of a character" in buttons[1].toolTip()


def test_detector_chips_follow_a_live_scheme_switch(qtbot):
    from PySide6.QtGui import QColor, QPalette

    from mlm_studio.ui.panels.playground.prediction import Prediction
    from mlm_studio.ui.panels.playground.results_view import ResultsView

    view = ResultsView("Model A")
    qtbot.addWidget(view)
    light = view.palette()
    light.setColor(QPalette.ColorRole.Base, QColor("#ffffff"))
    view.setPalette(light)
    view.show_prediction(Prediction("tiny-electra", (), None, 1.0, (("the", 0.0),)), "model")
    before = view.detector.cells[0].background
    dark = view.palette()
    dark.setColor(QPalette.ColorRole.Base, QColor("#1e1f22"))
    view.setPalette(dark)
    after = view.detector.cells[0].background
    assert before.lightness() > 200 and after.lightness() < 80


def test_with_no_model_to_choose_the_chooser_says_so(qtbot, tmp_path, listed):
    widget = PlaygroundPanel(Workspace(runs_root=tmp_path))
    qtbot.addWidget(widget)
    combo = widget.views[0].model_combo
    assert combo.placeholderText() == "Reading the runs folder…"  # until the listing arrives
    listed(widget.workspace)
    assert combo.count() == 0 and combo.currentIndex() == -1 and combo.placeholderText() == NO_MODEL


def test_probability_bars_keep_a_bounded_width_with_the_share_beside_them(qtbot):
    from mlm_studio.core.evaluation.predict import Candidate
    from mlm_studio.ui.panels.playground.prediction import Prediction
    from mlm_studio.ui.panels.playground.results_view import BAR_WIDTH, ResultsView

    view = ResultsView("Model A")
    qtbot.addWidget(view)
    view.resize(1030, 500)  # a view as wide as one seen on a 1920-pixel screen
    view.show()
    candidates = tuple(Candidate(w, n, p, w, False) for n, (w, p) in enumerate((("list", 0.625), ("value", 0.05))))
    view.show_prediction(Prediction("late", (candidates,), None, 1.0), "model")
    qtbot.waitUntil(lambda: view.grid.itemAtPosition(2, 2).widget().isVisible())  # laid out
    for row, expected in ((1, "62.5%"), (2, "5.0%")):
        bar, share = (view.grid.itemAtPosition(row, column).widget() for column in (1, 2))
        assert bar.width() <= BAR_WIDTH and not bar.isTextVisible()
        assert share.text() == expected
        assert bar.geometry().right() < share.geometry().left() < bar.geometry().right() + 30  # right after it


def test_comparing_with_a_single_model_says_to_add_a_second(qtbot, trained_runs, tmp_path):
    import shutil

    from mlm_studio.ui.panels.playground.panel import NO_SECOND_MODEL

    shutil.copytree(trained_runs / "late", tmp_path / "runs" / "late")
    widget = PlaygroundPanel(Workspace(runs_root=tmp_path / "runs"))
    qtbot.addWidget(widget)
    widget.show()
    with qtbot.waitSignal(widget.predicted, timeout=TIMEOUT_MS):
        widget.compare_check.setChecked(True)
    a, b = widget.views
    assert a.title() == "late / step-0000040" and a.buttons
    assert b.title() == "Model B" and not b.buttons and not b.model_combo.isEnabled()
    assert b.grid.itemAt(0).widget().text() == NO_SECOND_MODEL


def test_exact_weights_give_the_predictors_own_candidates_and_scores(qtbot, panel, trained_runs):
    choose(panel, "late")
    text = "Return the [MASK] of the [MASK]."
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.text_edit.setText(text)
    assert panel.views[0].latency.text().endswith("int8 weights")
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.exact_check, Qt.MouseButton.LeftButton)
    view = panel.views[0]
    assert view.latency.text().endswith(" ms · exact weights") and "CLI" in view.latency.toolTip()
    expected = FillMask.from_path(trained_runs / "late").predict(text)
    shown = [[view.grid.itemAtPosition(row, column).widget().text() for column in (0, 2)] for row in range(1, 6)]
    assert shown == [[("…" if c.continues else "") + c.text, f"{c.score:.1%}"] for c in expected[0]]


def test_the_choice_of_exact_weights_is_remembered(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings, runs_root=tmp_path / "runs")
    qtbot.addWidget(window)
    assert not window.playground_panel.exact_check.isChecked()
    window.playground_panel.exact_check.setChecked(True)
    window.close()
    again = MainWindow(settings, runs_root=tmp_path / "runs")
    qtbot.addWidget(again)
    assert again.playground_panel.exact_check.isChecked()


def test_model_b_never_repeats_model_a(qtbot, panel):
    """B starts on another model than A; chosen as A's, it says so instead of showing the same candidates twice."""
    from mlm_studio.ui.panels.playground.panel import SAME_MODEL

    choose(panel, "early")
    with qtbot.waitSignals([panel.predicted, panel.predicted], timeout=TIMEOUT_MS):
        panel.compare_check.setChecked(True)
    assert panel.views[1].model_combo.currentText() == "late"
    choose(panel, "early", view=1)
    panel.predict_now()
    assert panel.views[1].grid.itemAt(0).widget().text() == SAME_MODEL and panel.views[1].title() == "Model B"


def test_candidates_never_stand_under_another_models_name(qtbot, panel):
    """Choosing another model replaces the candidates at once with a note, until that model answers."""
    choose(panel, "late")
    with qtbot.waitSignal(panel.predicted, timeout=TIMEOUT_MS):
        panel.predict_now()
    assert panel.views[0].title() == "late / step-0000040" and panel.views[0].buttons
    choose(panel, "early")
    panel.predict_now()
    view = panel.views[0]
    assert view.buttons == [] and view.title() == "Model A"
    assert view.grid.itemAt(0).widget().text() == "Predicting with early…"
    qtbot.waitUntil(lambda: view.title() == "early / step-0000004", timeout=TIMEOUT_MS)
    assert view.subject.endswith("early")


def test_looking_at_a_run_in_training_leaves_the_playground_models_as_chosen(qtbot, trained_runs, tmp_path, listed):
    """Opening a run in the Training panel is looking at it: Model A and Model B keep what the user chose."""
    window = MainWindow(None, restore=False, runs_root=trained_runs)
    qtbot.addWidget(window)
    listed(window.workspace)
    playground = window.playground_panel
    choose(playground, "late")
    playground.compare_check.setChecked(True)
    choose(playground, "early", view=1)
    window.open_run(trained_runs / "early")
    assert window.training_panel.plots.series["step_loss"].size == 4
    assert [v.model_combo.currentText() for v in playground.views] == ["late", "early"]
    assert window.workspace.run is None and window.workspace.shown_run == trained_runs / "early"
