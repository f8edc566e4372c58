"""The Evaluation panel's "What it learned" view: a word's occurrences as points, coloured by cluster, each
hoverable to its context; a click lists its nearest contexts; a sentence of your own lands as a star."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QListWidget, QPushButton, QSpinBox, QVBoxLayout, QWidget

from mlm_studio.core.evaluation.contexts import ContextMap
from mlm_studio.ui.widgets.plots import ThemedPlot, show_ticks

CLUSTER_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


class ContextView(QWidget):
    requested = Signal(str, int)  # word, layer
    place_requested = Signal(str)  # a sentence with the word

    def __init__(self) -> None:
        super().__init__()
        self.word_edit = QLineEdit("list")
        self.word_edit.setPlaceholderText("a word of the corpus")
        self.layer_spin = QSpinBox()
        self.layer_spin.setRange(1, 1)
        self.layer_spin.setToolTip("Which layer's output: the last one is what the head reads")
        self.show_button = QPushButton("Show its contexts")
        self.show_button.clicked.connect(
            lambda: self.requested.emit(self.word_edit.text().strip(), self.layer_spin.value())
        )
        self.sentence_edit = QLineEdit()
        self.sentence_edit.setPlaceholderText("a sentence of your own with the word, to place among them")
        self.place_button = QPushButton("Place it")
        self.place_button.clicked.connect(lambda: self.place_requested.emit(self.sentence_edit.text()))
        self.word_edit.returnPressed.connect(self.show_button.click)
        self.sentence_edit.returnPressed.connect(self.place_button.click)
        self.plot = ThemedPlot("first principal component", "second principal component")
        self.other_plot = ThemedPlot("first principal component", "second principal component")
        self.other_scatter = pg.ScatterPlotItem(size=9, hoverable=True, tip=lambda x, y, data: data)
        self.other_plot.addItem(self.other_scatter)
        self.other_plot.hide()
        for plot in (self.plot, self.other_plot):
            show_ticks(plot.getPlotItem(), False)  # until a map is drawn: an empty plot has no values to mark
        self.scatter = pg.ScatterPlotItem(size=9, hoverable=True, tip=lambda x, y, data: data)
        self.scatter.sigClicked.connect(self._on_click)
        self.plot.addItem(self.scatter)
        self.star = pg.ScatterPlotItem(size=18, symbol="star", brush=pg.mkBrush("#ffd700"), pen=pg.mkPen("k"))
        self.plot.addItem(self.star)
        self.nearest = QListWidget()
        self.nearest.setWordWrap(True)
        self.caption = QLabel("Type a word and show its contexts: each point is one occurrence in the corpus.")
        self.caption.setWordWrap(True)
        self.context: ContextMap | None = None
        top = QHBoxLayout()
        top.addWidget(QLabel("Word"))
        top.addWidget(self.word_edit, 1)
        top.addWidget(QLabel("Layer"))
        top.addWidget(self.layer_spin)
        top.addWidget(self.show_button)
        mine = QHBoxLayout()
        mine.addWidget(self.sentence_edit, 1)
        mine.addWidget(self.place_button)
        side = QVBoxLayout()
        side.addWidget(QLabel("Nearest contexts of the clicked point"))
        side.addWidget(self.nearest, 1)
        body = QHBoxLayout()
        body.addWidget(self.plot, 3)
        body.addWidget(self.other_plot, 3)
        body.addLayout(side, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.caption)
        layout.addLayout(body, 1)
        layout.addLayout(mine)

    def set_layers(self, count: int) -> None:
        self.layer_spin.setRange(1, count)
        self.layer_spin.setValue(count)

    def show_map(self, context: ContextMap, *others: tuple[str, ContextMap]) -> None:
        """The map of the evaluated model, and beside it that of a model compared (`(title, map)`), if any."""
        self.context = context
        _draw(self.scatter, context)
        self.other_plot.setVisible(bool(others))
        for _, other in others:
            _draw(self.other_scatter, other)
        show_ticks(self.plot.getPlotItem(), True)
        show_ticks(self.other_plot.getPlotItem(), bool(others))
        self.star.setData([])
        self.nearest.clear()
        groups = len(set(context.clusters.tolist()))
        compared = "".join(f" On the right, the same contexts as {title} places them." for title, _ in others)
        self.caption.setText(
            f"<b>{len(context.snippets)}</b> occurrences of <b>{context.word}</b> at layer {context.layer}, in "
            f"{groups} clusters of similar contexts. Hover a point to read it; click it for its nearest contexts."
            f"{compared}"
        )

    def clear(self) -> None:
        """Forget the maps (another model was evaluated)."""
        self.context = None
        for scatter in (self.scatter, self.other_scatter, self.star):
            scatter.setData([])
        self.other_plot.hide()
        for plot in (self.plot, self.other_plot):
            show_ticks(plot.getPlotItem(), False)
        self.nearest.clear()
        self.caption.setText("Type a word and show its contexts: each point is one occurrence in the corpus.")

    def show_placed(self, point: np.ndarray) -> None:
        self.star.setData([point[0]], [point[1]])

    def _on_click(self, _item, points, *_) -> None:
        if self.context is None or not len(points):
            return
        index = int(points[0].index())
        self.nearest.clear()
        self.nearest.addItem(f"▶ {self.context.snippets[index]}")
        for other in self.context.nearest(index):
            self.nearest.addItem(self.context.snippets[other])


def _draw(scatter: pg.ScatterPlotItem, context: ContextMap) -> None:
    brushes = [pg.mkBrush(CLUSTER_COLOURS[c % len(CLUSTER_COLOURS)]) for c in context.clusters]
    scatter.setData(pos=context.points, brush=brushes, data=list(context.snippets))
