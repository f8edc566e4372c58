"""The window in both schemes: our icon, readable text (contrast ≥ 4.5:1) and settings that survive a restart."""

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QIcon, QPalette
from PySide6.QtWidgets import QApplication

from mlm_studio.ui.main_window import MainWindow
from mlm_studio.ui.panels.corpus.tokenizer_section import PIECE_TINTS, UNKNOWN_TINT
from mlm_studio.ui.panels.masking.masked_samples import KIND_COLOURS
from mlm_studio.ui.theme import TONES, app_icon, apply_scheme, blended, contrast, palette_for, readable_on, tone

ROLES = (QPalette.ColorRole.Window, QPalette.ColorRole.Base)


@pytest.fixture
def restore_palette(qapp):
    before = qapp.palette()
    yield
    qapp.setProperty("scheme", None)
    qapp.setPalette(before)


@pytest.fixture
def window(qtbot, tmp_path, restore_palette):
    widget = MainWindow(None, restore=False, runs_root=tmp_path / "runs")
    qtbot.addWidget(widget)
    widget.resize(1366, 768)
    widget.show()
    return widget


def test_the_window_wears_our_icon(window):
    ours = app_icon().pixmap(64, 64).toImage()
    assert not ours.isNull() and window.windowIcon().pixmap(64, 64).toImage() == ours


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_colour_reads_on_its_background_in_both_schemes(scheme):
    palette = palette_for(scheme)
    for role in ROLES:
        background = palette.color(role)
        assert contrast(palette.color(QPalette.ColorRole.Text), background) >= 4.5
        assert contrast(palette.color(QPalette.ColorRole.PlaceholderText), background) >= 4.5  # muted tokens
        for colour in TONES[scheme].values():
            assert contrast(palette.color(QPalette.ColorRole.Text).__class__(colour), background) >= 4.5, colour
    pieces = [blended(*tint, palette.color(QPalette.ColorRole.Base)) for tint in (*PIECE_TINTS, UNKNOWN_TINT)]
    for chip in (*KIND_COLOURS.values(), *pieces):
        assert contrast(readable_on(chip), chip) >= 4.5, chip.name()


def test_switching_to_dark_recolours_the_plots_and_the_labels_and_is_remembered(qtbot, tmp_path, restore_palette):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings, restore=False, runs_root=tmp_path / "runs")
    qtbot.addWidget(window)
    window.show()
    dark = next(action for action in window.scheme_actions if action.data() == "dark")
    dark.trigger()
    app = QApplication.instance()
    base = app.palette().color(QPalette.ColorRole.Base)
    assert app.property("scheme") == "dark" and base.lightness() < 60
    view = window.training_panel.plots.view
    qtbot.wait_until(lambda: view.backgroundBrush().color() == base)  # the palette change is delivered as an event
    axis_text = window.training_panel.plots.plots["loss"].getAxis("left").textPen().color()
    assert contrast(axis_text, base) >= 4.5
    reason = window.training_panel.reason_label
    assert reason.palette().color(QPalette.ColorRole.WindowText) == tone("warning")
    assert contrast(tone("warning"), app.palette().color(QPalette.ColorRole.Window)) >= 4.5
    window.training_panel.curves.axis_combo.setCurrentIndex(1)
    window.training_panel.curves.smoothing_slider.setValue(85)
    window.show_panel(window.config_panel)
    window.close()

    again = MainWindow(settings, restore=True, runs_root=tmp_path / "runs")
    qtbot.addWidget(again)
    assert again.scheme == "dark" and again.training_panel.curves.axis_combo.currentData() == "tokens"
    assert again.training_panel.curves.smoothing_slider.value() == 85
    assert again.stack.currentWidget() is again.config_panel
    again.reset_settings()
    again.close()
    assert settings.allKeys() == []
    apply_scheme(app, "light")


def test_legends_already_drawn_change_colour_with_the_scheme(qtbot, restore_palette):
    from mlm_studio.ui.widgets.live_plots import LivePlots

    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.add(
        "step",
        {"step": 1, "loss": 5.0, "accuracy": 0.1, "learning_rate": 1e-3, "grad_norm": 1.0, "tokens_per_second": 1e4},
    )
    apply_scheme(QApplication.instance(), "dark")
    base = QApplication.instance().palette().color(QPalette.ColorRole.Base)
    qtbot.wait_until(lambda: plots.view.backgroundBrush().color() == base)
    assert plots.legends["loss"].names == ["training"]
    assert contrast(plots.legends["loss"].colour, base) >= 4.5  # the header legend's text
    apply_scheme(QApplication.instance(), "light")


def test_after_a_live_switch_to_dark_messages_and_disabled_controls_read(qtbot, window):
    """A message shown in the light scheme stays readable after the switch; greyed-out Pause and Stop keep a glyph
    that stands out from their button (3:1, WCAG's figure for a control's parts)."""
    panel = window.training_panel
    panel.message_bar.show_message("Training completed at step 30.", "info")
    window.set_scheme("dark")
    qtbot.waitUntil(lambda: panel.pause_button.palette().color(QPalette.ColorRole.Button).lightness() < 80)
    text = panel.message_bar._text
    assert contrast(text.palette().color(QPalette.ColorRole.WindowText), window.palette().color(ROLES[0])) >= 4.5
    for button in (panel.pause_button, panel.stop_button):
        assert not button.isEnabled()
        glyph = button.icon().pixmap(16, 16, QIcon.Mode.Disabled).toImage()
        inked = [glyph.pixelColor(x, y) for x in range(glyph.width()) for y in range(glyph.height())]
        ink = max(inked, key=lambda c: c.alpha())
        assert contrast(ink, button.palette().color(QPalette.ColorRole.Button)) >= 3.0, button.text()


def test_the_tokenizer_pieces_are_dark_chips_in_the_dark_scheme(qtbot, small_tokenizer, restore_palette):
    """Seen on the window: light chips in a dark panel. The chips painted in each scheme take its background's
    lightness (a pixel of each chip's corner, away from its text)."""
    from mlm_studio.ui.panels.corpus.tokenizer_section import TokenizerSection
    from mlm_studio.ui.workspace import Workspace

    workspace = Workspace()
    section = TokenizerSection(workspace)
    qtbot.addWidget(section)
    section.resize(520, 400)
    section.show()
    workspace.set_tokenizer(small_tokenizer)
    section.sample_edit.setText("the list ✓")
    lightness = {}
    for scheme in ("light", "dark"):
        apply_scheme(QApplication.instance(), scheme)
        tint = blended(*PIECE_TINTS[0], palette_for(scheme).color(QPalette.ColorRole.Base))
        qtbot.waitUntil(lambda: section.pieces.cells[0].background == tint)  # noqa: B023
        image = section.pieces.grab().toImage()
        ratio = image.devicePixelRatio()
        rects = [section.pieces.cell_rect(i) for i in range(len(section.pieces.cells))]
        lightness[scheme] = [
            image.pixelColor(int((r.x() + 2) * ratio), int(r.center().y() * ratio)).lightness() for r in rects
        ]  # fmt: skip  (left of the text, halfway down)
    assert min(lightness["light"][:2]) > 170 and max(lightness["dark"]) < 110, lightness


def _boundary_contrast(box, palette) -> float:
    """The strongest contrast between an unchecked check box's pixels and the field it is drawn on."""
    from PySide6.QtGui import QColor

    box.setPalette(palette)
    box.resize(box.sizeHint())
    image = box.grab().toImage()
    field = palette.color(QPalette.ColorRole.Window)
    pixels = (image.pixelColor(x, y) for x in range(min(18, image.width())) for y in range(image.height()))
    return max(contrast(QColor(p.rgb()), field) for p in pixels)


def test_an_unchecked_check_box_stands_out_on_the_dark_scheme(qtbot, restore_palette):
    """Its outline keeps 3:1 against the window behind it (WCAG's bound for a control's boundary)."""
    from PySide6.QtWidgets import QCheckBox

    app = QApplication.instance()
    style = app.style()
    apply_scheme(app, "dark")
    box = QCheckBox("")
    qtbot.addWidget(box)
    try:
        assert _boundary_contrast(box, palette_for("dark")) >= 3.0
    finally:
        app.setStyle(style.name())


@pytest.mark.parametrize("schemes", [("dark",), ("dark", "light"), ("light", "dark", "light", "dark")])
def test_the_navigation_glyphs_take_the_schemes_text_colour(qtbot, window, restore_palette, schemes):
    """On every switch of the scheme while the window is open, not only the first."""
    from PySide6.QtGui import QColor

    window.show()
    for scheme in schemes:
        apply_scheme(QApplication.instance(), scheme)
    text = palette_for(schemes[-1]).color(QPalette.ColorRole.WindowText)
    qtbot.waitUntil(lambda: window.navigation.palette().color(QPalette.ColorRole.WindowText) == text)
    for row in range(window.navigation.count()):
        image = window.navigation.item(row).icon().pixmap(20, 20).toImage()
        opaque = [image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())]
        drawn = [QColor(c.rgb()) for c in opaque if c.alpha() > 200]
        assert drawn and all(contrast(c, text) < 1.2 for c in drawn), window.navigation.item(row).text()
