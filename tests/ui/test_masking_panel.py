import itertools

import pytest
from PySide6.QtCore import QPoint, Qt

from mlm_studio.core.data.masking import MaskKind
from mlm_studio.ui.panels.masking import KIND_COLOURS, MaskingPanel
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
    return [[panel.rates.table.item(r, c).text() for c in range(4)] for r in range(4)]


def test_samples_are_colour_coded_with_tooltips(panel):
    assert not panel.empty_label.isVisible()
    cells = [cell for view in panel.sample_views for cell in view.cells]
    assert cells[0].text == "[CLS]" and cells[0].muted
    kinds = {token.kind for sample in panel.preview.samples for token in sample}
    assert MaskKind.MASK in kinds
    masked = next(c for c in cells if c.background == KIND_COLOURS[MaskKind.MASK])
    assert masked.tooltip.endswith("→ [MASK]; the model predicts it")
    random_cells = [c for c in cells if c.background == KIND_COLOURS[MaskKind.RANDOM]]
    assert all(" → " in c.text for c in random_cells)
    view = panel.sample_views[0]
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
        panel.rate_spin.selectAll()
        qtbot.keyClicks(panel.rate_spin, "0.4")
    assert table(panel)[0][0] == "0.400"
    assert abs(float(table(panel)[0][1]) - 0.4) < 0.02


def test_a_split_that_does_not_sum_to_one_is_flagged_and_not_applied(qtbot, panel):
    before = panel.preview
    panel.mask_spin.setValue(0.9)
    assert "must sum to 1" in panel.validation_label.text()
    assert "border" in panel.mask_spin.styleSheet()
    assert not panel._refresh_timer.isActive() and not panel.preview_runner.running  # nothing recomputed
    assert panel.preview is before
    assert panel.workspace.config.masking.mask_fraction == 0.8  # the invalid split never left the panel
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.random_spin.setValue(0.0)
    assert panel.validation_label.text() == "" and panel.mask_spin.styleSheet() == ""
    assert table(panel)[2][1] == "0.000"


def test_span_strategy_shows_the_span_length_histogram(qtbot, panel):
    assert not panel.rates.span_box.isVisible() and not panel.span_p_spin.isEnabled()
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.strategy_combo.setCurrentIndex(panel.strategy_combo.findData("span"))
    assert panel.rates.span_box.isVisible() and panel.span_p_spin.isEnabled()
    assert panel.preview.span_lengths.sum() > 500
    counted = [panel.rates.table.item(row, 3).text() for row in range(4)]
    assert counted[0].endswith(" tokens") and all(text.endswith(" spans") for text in counted[1:])
    spans = int(counted[1].split(" of ")[1].split()[0].replace(",", ""))
    assert spans == panel.preview.span_lengths.sum() and "counted per span" in panel.rates.caption.text()
    x, y = panel.rates.span_theory.getData()
    assert list(x) == list(range(1, 11)) and abs(y.sum() - 1) < 1e-9


def test_whole_word_masking_never_splits_a_word(qtbot, panel):
    panel.strategy_combo.setCurrentIndex(panel.strategy_combo.findData("whole_word"))
    qtbot.wait_until(lambda: panel.preview_config.strategy == "whole_word", timeout=TIMEOUT_MS)
    for sample in panel.preview.samples:
        for previous, token in itertools.pairwise(sample):
            if token.original.startswith("##") and not previous.special:
                assert (token.kind == MaskKind.UNTOUCHED) == (previous.kind == MaskKind.UNTOUCHED)


def test_reroll_draws_new_samples(qtbot, panel):
    before = panel.preview.samples
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.reroll_button, Qt.MouseButton.LeftButton)
    assert panel.seed_spin.value() == 1 and panel.preview.samples != before


def test_block_length_and_packing_change_the_samples(qtbot, panel):
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.length_spin.setValue(64)
    assert all(len(sample) == 64 for sample in panel.preview.samples)
    with qtbot.waitSignal(panel.preview_updated, timeout=TIMEOUT_MS):
        panel.packing_check.setChecked(False)
    assert any(len(sample) < 64 for sample in panel.preview.samples)
