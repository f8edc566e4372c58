import itertools

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QMainWindow

from mlm_studio.core.data.masking import MaskKind
from mlm_studio.ui.panels.masking.masked_samples import KIND_COLOURS
from mlm_studio.ui.panels.masking.panel import MaskingPanel
from mlm_studio.ui.theme import apply_scheme, tone
from mlm_studio.ui.workspace import Workspace

TIMEOUT_MS = 60_000


@pytest.fixture
def panel(qtbot, builtin_corpus, builtin_tokenizer):
    workspace = Workspace()
    widget = MaskingPanel(workspace)
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    widget.show()
    assert widget.empty_label.isVisible()
    workspace.set_corpus(builtin_corpus)
    with qtbot.waitSignal(widget.preview_updated, timeout=TIMEOUT_MS):
        workspace.set_tokenizer(builtin_tokenizer)

    def settled():  # no second preview still on its way
        return not widget._refresh_timer.isActive() and not widget.preview_runner.running

    qtbot.wait_until(settled, timeout=TIMEOUT_MS)
    return widget


def table(panel):
    return [[panel.rates.table.item(r, c).text() for c in range(panel.rates.table.columnCount())] for r in range(4)]


def test_samples_are_colour_coded_with_tooltips(panel):
    assert not panel.empty_label.isVisible()
    cells = [cell for view in panel.samples.views for cell in view.cells]
    assert cells[0].text == "[CLS]" and cells[0].muted
    kinds = {token.kind for sample in panel.preview.samples for token in sample}
    assert MaskKind.MASK in kinds
    masked = next(c for c in cells if c.background == KIND_COLOURS[MaskKind.MASK])
    assert masked.tooltip.endswith("→ [MASK]; the model predicts it")
    random_cells = [c for c in cells if c.background == KIND_COLOURS[MaskKind.RANDOM]]
    assert all(" → " in c.text for c in random_cells)
    view = panel.samples.views[0]
    assert view.cell_at(view.cell_rect(0).center()) == 0 and view.cell_at(QPoint(-5, -5)) == -1


def test_measured_rates_sit_beside_the_configured_ones(panel):
    rows = table(panel)
    assert [row[0] for row in rows] == ["0.150", "0.800", "0.100", "0.100"]
    for row in rows:
        low, high = (float(x) for x in row[2].split("–"))
        assert low <= float(row[1]) <= high
        assert abs(float(row[1]) - float(row[0])) < 0.02
    assert panel.rates.caption.text().startswith("Over 1,000 blocks")


def test_changing_the_rate_remeasures(qtbot, panel):
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.form.rate_spin.selectAll()
        qtbot.keyClicks(panel.form.rate_spin, "0.4")
    assert table(panel)[0][0] == "0.400"
    assert abs(float(table(panel)[0][1]) - 0.4) < 0.02


def test_a_split_that_does_not_sum_to_one_is_flagged_and_not_applied(qtbot, panel):
    before = panel.preview
    panel.form.mask_spin.setValue(0.9)
    assert panel.form.validation_label.text() == "[MASK], Random and Keep must sum to 1, not 1.1."
    assert not panel._refresh_timer.isActive() and not panel.preview_runner.running  # nothing recomputed
    assert panel.preview is before
    assert panel.workspace.config.masking.mask_fraction == 0.8  # the invalid split never left the panel
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.form.random_spin.setValue(0.0)
    assert panel.form.validation_label.text() == "" and not panel.form.invalid
    assert table(panel)[2][1] == "0.000"


def test_span_strategy_shows_the_span_length_histogram(qtbot, panel):
    assert not panel.rates.span_box.isVisible() and not panel.form.span_p_spin.isEnabled()
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.form.strategy_combo.setCurrentIndex(panel.form.strategy_combo.findData("span"))
    assert panel.rates.span_box.isVisible() and panel.form.span_p_spin.isEnabled()
    assert panel.preview.span_lengths.sum() > 500
    counted = [panel.rates.table.item(row, 1).toolTip() for row in range(4)]
    assert counted[0].endswith(" tokens") and all(text.endswith(" spans") for text in counted[1:])
    spans = int(counted[1].split(" / ")[1].split()[0].replace(",", ""))
    assert spans == panel.preview.span_lengths.sum() and "counted per span" in panel.rates.caption.text()
    x, y = panel.rates.span_theory.getData()
    assert list(x) == list(range(1, 11)) and abs(y.sum() - 1) < 1e-9


def test_whole_word_masking_never_splits_a_word(qtbot, panel):
    panel.form.strategy_combo.setCurrentIndex(panel.form.strategy_combo.findData("whole_word"))
    qtbot.wait_until(lambda: panel.preview_config.strategy == "whole_word", timeout=TIMEOUT_MS)
    for sample in panel.preview.samples:
        for previous, token in itertools.pairwise(sample):
            if token.original.startswith("##") and not previous.special:
                assert (token.kind == MaskKind.UNTOUCHED) == (previous.kind == MaskKind.UNTOUCHED)


def test_reroll_draws_new_samples(qtbot, panel):
    before = panel.preview.samples
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.form.reroll_button, Qt.MouseButton.LeftButton)
    assert panel.form.seed_spin.value() == 1 and panel.preview.samples != before


def test_block_length_and_packing_change_the_samples(qtbot, panel):
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.form.length_spin.setValue(64)
    assert all(len(sample) == 64 for sample in panel.preview.samples)
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.form.packing_check.setChecked(False)
    assert any(len(sample) < 64 for sample in panel.preview.samples)


def arrows(image) -> set[tuple[int, int]]:
    """Where a spin box's buttons show their arrows: the pixels of its right end that stand out from the
    buttons' background."""
    width, height = image.width(), image.height()
    background = QColor(image.pixel(width - 5, 3)).lightness()
    return {
        (x, y)
        for x in range(width - 16, width - 3)
        for y in range(4, height - 4)
        if abs(QColor(image.pixel(x, y)).lightness() - background) > 60
    }


def base(widget):
    return widget.palette().color(QPalette.ColorRole.Base)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_invalid_field_is_tinted_and_keeps_its_arrows(panel, scheme):
    apply_scheme(QApplication.instance(), scheme)
    QApplication.processEvents()  # the palette reaches the widgets
    try:
        valid = panel.form.mask_spin.grab().toImage()
        panel.form.mask_spin.setValue(0.9)
        assert panel.form.invalid == {"masking.mask_fraction", "masking.random_fraction", "masking.keep_fraction"}
        assert panel.form.mask_spin.styleSheet() == ""  # a style sheet would draw the arrows as plain bars
        page = QApplication.palette().color(QPalette.ColorRole.Base)
        tinted, error = base(panel.form.keep_spin), tone("error")
        assert tinted != page and base(panel.form.rate_spin) == page
        assert abs(tinted.redF() - error.redF()) < abs(page.redF() - error.redF())  # towards the error tone
        invalid = panel.form.mask_spin.grab().toImage()
        assert len(arrows(valid)) > 10 and arrows(invalid) == arrows(valid)  # the style sheet drew two plain bars
        assert invalid.pixel(10, valid.height() // 2) != valid.pixel(10, valid.height() // 2)  # the field is tinted
    finally:
        apply_scheme(QApplication.instance(), "light")
        QApplication.processEvents()
    assert base(panel.form.keep_spin) != QApplication.palette().color(QPalette.ColorRole.Base)  # still invalid
    assert base(panel.form.rate_spin) == QApplication.palette().color(QPalette.ColorRole.Base)  # follows the scheme


def test_samples_that_no_longer_match_the_form_are_taken_away_or_marked(qtbot, panel):
    panel.form.mask_spin.setValue(0.9)
    assert not panel.results.isVisible() and panel.empty_label.isVisible()
    assert "once the settings on the left are valid" in panel.empty_label.text()
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.form.random_spin.setValue(0.0)
    assert panel.results.isVisible() and not panel.stale_label.isVisible()
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.form.rate_spin.setValue(0.3)
        assert panel.stale_label.isVisible() and "previous settings" in panel.stale_label.text()
    assert not panel.stale_label.isVisible() and panel.preview_config.rate == 0.3


def test_no_strategy_resizes_the_window(qtbot, panel):
    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(panel)
    window.resize(1110, 700)  # the panel's share of a 1280-pixel window
    window.show()
    widths = {}
    for strategy in ("span", "whole_word", "token", "span"):
        with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
            panel.form.strategy_combo.setCurrentIndex(panel.form.strategy_combo.findData(strategy))
        qtbot.wait_until(lambda: not panel._refresh_timer.isActive() and not panel.preview_runner.running)
        QApplication.processEvents()
        widths[strategy] = panel.minimumSizeHint().width()
        assert window.width() == 1110, strategy
    window.takeCentralWidget()  # the panel stays the fixture's
    assert max(widths.values()) < 700, widths


def test_the_legend_shows_the_generator_chip_only_for_an_electra_run_s_replacements(panel):
    texts = [cell.text for cell in panel.form.legend.cells]
    assert texts == ["[MASK]", "random → new", "kept", "untouched", "[CLS]"]  # no ELECTRA run: no "a → b"
    panel.form.generator_check.setEnabled(True)
    panel.form.generator_check.setChecked(True)
    assert "a → b" in [cell.text for cell in panel.form.legend.cells]
    panel.form.generator_check.setChecked(False)
    assert "a → b" not in [cell.text for cell in panel.form.legend.cells]


def test_the_rates_table_spans_its_box_and_is_as_tall_as_its_rows_the_samples_taking_the_rest(qtbot, panel):
    table = panel.rates.table
    columns = sum(table.columnWidth(c) for c in range(table.columnCount()))
    assert columns >= table.viewport().width() - 2  # the columns share the box's width, none left empty
    rows = sum(table.rowHeight(r) for r in range(table.rowCount()))
    assert table.viewport().height() - 2 <= rows <= table.viewport().height()  # no empty area under the rows
    assert panel.rates.height() <= panel.rates.rates_box.sizeHint().height()  # token masking: the table alone
    assert panel.samples.height() > 2 * panel.rates.height()
    panel.form.strategy_combo.setCurrentIndex(panel.form.strategy_combo.findData("span"))
    qtbot.waitUntil(lambda: panel.rates.span_box.isVisible())
    qtbot.waitUntil(lambda: panel.rates.maximumHeight() > 10_000)  # the histogram gets the room it needs
