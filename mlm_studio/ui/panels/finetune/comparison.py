"""What a comparison ends with, as the Fine-tune panel shows it, live or reopened from its folder: its name, state,
model and task, the verdict in a sentence, one table as tall as its rows (each contender's mean test score, its
spread and every seed's score, each header naming the score) and under it one plot (every seed's score as a point,
side by side in seed order, the mean as a bar across them), contenders side by side."""

from __future__ import annotations

import statistics

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QSizePolicy, QVBoxLayout, QWidget

from mlm_studio.core.finetune.compare import Outcome
from mlm_studio.core.finetune.comparisons import Comparison
from mlm_studio.ui.panels.finetune.results import cell, read_only_table
from mlm_studio.ui.widgets.curve_data import COLOURS
from mlm_studio.ui.widgets.elided_label import ElidedLabel
from mlm_studio.ui.widgets.plots import ThemedPlot

NO_COMPARISON = (
    "Compare fine-tunes your model, the model it started from (when it continued an imported one) and the same "
    "architecture from scratch, with the same recipe and several seeds; their test scores appear here."
)
MEAN_HALF_WIDTH = 0.3  # of the bar marking a contender's mean, in the plot's x units (one per contender)
SEEDS_HALF_WIDTH = 0.15  # seeds' points side by side in seed order, so equal scores stay apart


class ComparisonView(QWidget):
    """The name, state and verdict, the table and the plot of one comparison."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = ElidedLabel()
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        self.verdict = QLabel(NO_COMPARISON)
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = read_only_table(["contender", "mean", "spread (min – max)", "± sd", "per seed"])
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.plot = ThemedPlot("contender", "test score", percent=("left",))
        self.plot.getPlotItem().setMouseEnabled(x=False, y=False)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.verdict)
        layout.addWidget(self.table)
        layout.addWidget(self.plot, 1)
        self.clear()

    def clear(self) -> None:
        self.title.setText("")
        self.title.hide()
        self.verdict.setText(NO_COMPARISON)
        self.table.setRowCount(0)
        self._fit_table()
        self.plot.getPlotItem().clear()

    def show_comparison(self, comparison: Comparison) -> None:
        """A comparison as its folder tells it: its state, model and task, its verdict (once every run has finished)
        and the test scores of the runs that finished."""
        self.title.setText(
            f"Comparison {comparison.path.name}: {comparison.state} — {comparison.model} on {comparison.task}"
        )
        self.title.show()
        self.verdict.setText(comparison.verdict)
        self.show_outcomes(comparison.outcomes, comparison.score_name)

    def show_outcomes(self, found: list[Outcome], score_name: str) -> None:
        """The test scores (`score_name`: macro-F1 or entity F1) of each contender over its seeds."""
        for column, header in enumerate(
            ("contender", f"mean test {score_name}", "spread (min – max)", "± sd", f"per seed (test {score_name})")
        ):
            self.table.horizontalHeaderItem(column).setText(header)
        self.table.setRowCount(len(found))
        plot = self.plot.getPlotItem()
        plot.clear()
        plot.setLabel("left", f"test {score_name}")
        for row, outcome in enumerate(found):
            scores = outcome.score
            mean = statistics.fmean(scores) if scores else float("nan")
            sd = statistics.stdev(scores) if len(scores) > 1 else 0.0
            values = [
                outcome.contender.label,
                f"{mean:.1%}" if scores else "–",
                f"{min(scores):.1%} – {max(scores):.1%}" if scores else "–",
                f"± {sd:.1%}" if scores else "–",
                "  ".join(f"{score:.1%}" for score in scores),
            ]
            for column, value in enumerate(values):
                self.table.setItem(row, column, cell(value, 0 < column < 4))
            colour = COLOURS[row % len(COLOURS)]
            if scores:
                beside = np.linspace(-SEEDS_HALF_WIDTH, SEEDS_HALF_WIDTH, len(scores)) if len(scores) > 1 else [0.0]
                plot.plot(row + np.asarray(beside), scores, pen=None, symbol="o", symbolBrush=colour, symbolSize=8)
                bar = [row - MEAN_HALF_WIDTH, row + MEAN_HALF_WIDTH]
                plot.plot(bar, [mean, mean], pen=pg.mkPen(colour, width=3))
        self._fit_table()
        plot.getAxis("bottom").setTicks([[(row, o.contender.label) for row, o in enumerate(found)]])
        plot.setXRange(-0.6, len(found) - 0.4, padding=0)
        plot.setYRange(0, 1)  # the whole scale: a difference of a point looks as small as it is

    def _fit_table(self) -> None:
        """As tall as its header and rows: two contenders take two rows' height, not half the tab."""
        rows = max(self.table.rowCount(), 1)  # an empty table keeps a row's room
        table = self.table
        height = table.horizontalHeader().sizeHint().height() + rows * table.verticalHeader().defaultSectionSize()
        table.setFixedHeight(height + 2 * table.frameWidth())
