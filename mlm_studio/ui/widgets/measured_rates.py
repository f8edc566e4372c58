"""What the masking preview measured: each configured rate beside the measured one with its 95% interval, and
the span lengths against the law they should follow."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGroupBox, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout

from mlm_studio.core.config.sections import MaskingConfig
from mlm_studio.core.data.masking_preview import MaskingPreview
from mlm_studio.ui.widgets.plots import ThemedPlot, accent_colour
from mlm_studio.ui.widgets.reflow_splitter import ReflowSplitter

ROWS = ("selected", "mask", "random", "keep")


class MeasuredRates(ReflowSplitter):
    """The rates table on the left, the span-length histogram (span masking only) on the right, or below it where
    the width holds not both."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("masking-rates-spans")  # remembered between starts by this name
        self.table = QTableWidget(4, 3)  # what was counted is each measured cell's tooltip: the table stays narrow
        self.table.setHorizontalHeaderLabels(["Configured", "Measured", "95% interval"])
        self.table.setVerticalHeaderLabels(["Selected", "→ [MASK]", "→ random", "→ kept"])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setWordWrap(False)
        self.caption = QLabel()
        self.caption.setWordWrap(True)  # a long caption wraps rather than widening the window
        rates_box = QGroupBox("Measured rates")
        rates_layout = QVBoxLayout(rates_box)
        rates_layout.addWidget(self.caption)
        rates_layout.addWidget(self.table)
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

    def _keep_whole(self) -> None:
        """The table never narrower than its columns: it is read whole, never scrolled sideways (measured once the
        columns have taken their contents' widths)."""
        table = self.table
        table.resizeColumnsToContents()
        table.verticalHeader().resizeSections(QHeaderView.ResizeMode.ResizeToContents)
        columns = sum(table.columnWidth(c) for c in range(table.columnCount()))
        table.setMinimumWidth(columns + table.verticalHeader().sizeHint().width() + 2 * table.frameWidth())

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
