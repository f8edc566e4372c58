"""What the masking preview measured: each configured rate beside the measured one with its 95% interval, and
the span lengths against the law they should follow."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QGroupBox,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from mlm_studio.core.config.sections import MaskingConfig
from mlm_studio.core.data.masking_preview import MaskingPreview
from mlm_studio.ui.widgets.plots import ThemedPlot, accent_colour
from mlm_studio.ui.widgets.reflow_splitter import ReflowSplitter

ROWS = ("selected", "mask", "random", "keep")
UNBOUNDED = 16_777_215  # Qt's largest widget size


class MeasuredRates(ReflowSplitter):
    """The rates table on the left, the span-length histogram (span masking only) on the right, or below it where
    the width holds not both."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("masking-rates-spans")  # remembered between starts by this name
        self.table = QTableWidget(4, 3)  # what was counted is each measured cell's tooltip: the table stays small
        self.table.setHorizontalHeaderLabels(["Configured", "Measured", "95% interval"])
        self.table.setVerticalHeaderLabels(["Selected", "→ [MASK]", "→ random", "→ kept"])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)  # the box's width
        self.table.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)  # its rows' height
        self.table.setWordWrap(False)
        self.caption = QLabel()
        self.caption.setWordWrap(True)  # a long caption wraps rather than widening the window
        rates_box = self.rates_box = QGroupBox("Measured rates")
        rates_layout = QVBoxLayout(rates_box)
        rates_layout.addWidget(self.caption)
        rates_layout.addWidget(self.table)
        rates_layout.addStretch(1)
        self.span_plot = ThemedPlot("span length (words)", "share of spans")
        self.span_bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush=accent_colour())
        self.span_plot.addItem(self.span_bars)
        self.span_theory = self.span_plot.plot([], [], pen=pg.mkPen("#d9534f", width=1), symbol="o", symbolSize=6)
        self.span_box = QGroupBox("Span lengths")
        key = QLabel("Bars: measured. Red: the truncated geometric law they should follow.")
        key.setWordWrap(True)
        span_layout = QVBoxLayout(self.span_box)
        span_layout.addWidget(key)
        span_layout.addWidget(self.span_plot)
        self.addWidget(rates_box)
        self.addWidget(self.span_box)
        self.setSizes([640, 360])  # the table whole; the histogram reads at a third of the width

    def show_spans(self, shown: bool) -> None:
        """The span-length histogram beside the table (span masking), or the table alone, no taller than its
        rows: the samples above take the rest."""
        self.span_box.setVisible(shown)
        self.rates_box.layout().invalidate()  # its height hint as the table now is
        self.rates_box.setMaximumHeight(UNBOUNDED if shown else self.rates_box.sizeHint().height())  # and the splitter

    def _keep_whole(self) -> None:
        """The table never narrower than its columns' contents (it is read whole, never scrolled sideways), its
        columns sharing the box's width, and exactly as tall as its rows."""
        table, header = self.table, self.table.horizontalHeader()
        table.verticalHeader().resizeSections(QHeaderView.ResizeMode.ResizeToContents)
        columns = sum(max(table.sizeHintForColumn(c), header.sectionSizeHint(c)) for c in range(table.columnCount()))
        frame = 2 * table.frameWidth()
        table.setMinimumWidth(columns + table.verticalHeader().sizeHint().width() + frame)
        rows = sum(table.rowHeight(r) for r in range(table.rowCount()))
        table.setFixedHeight(header.sizeHint().height() + rows + frame)
        if not self.span_box.isVisibleTo(self):
            self.show_spans(False)

    def show_preview(self, config: MaskingConfig, preview: MaskingPreview) -> None:
        configured = (config.rate, config.mask_fraction, config.random_fraction, config.keep_fraction)
        per_span = config.strategy == "span"
        units = ("tokens", *(("spans" if per_span else "tokens"),) * 3)
        for row, (name, expected, unit) in enumerate(zip(ROWS, configured, units)):
            rate = preview.rates[name]
            low, high = rate.low, rate.high
            values = (f"{expected:.3f}", f"{rate.share:.3f}", f"{low:.3f}–{high:.3f}")
            for column, value in enumerate(values):
                item = QTableWidgetItem(value)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if column == 1:
                    item.setToolTip(f"Counted: {rate.hits:,} / {rate.trials:,} {unit}")
                if column == 2 and not low <= expected <= high:
                    item.setToolTip("The configured value lies outside the 95% interval of this measurement")
                self.table.setItem(row, column, item)
        self._keep_whole()
        per_span_note = "; the split counted per span (SpanBERT)" if per_span else ""
        self.caption.setText(
            f"Over {preview.blocks_measured:,} blocks, the trainer's masker; intervals from the spread between "
            f"blocks{per_span_note}"
        )
        spans = preview.span_lengths
        lengths = np.arange(1, len(spans) + 1)
        share = spans / spans.sum() if spans.sum() else spans.astype(float)
        self.span_bars.setOpts(x=lengths, height=share, width=0.7)
        self.span_theory.setData(lengths, config.span_length_probabilities())
