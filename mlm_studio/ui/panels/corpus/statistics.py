"""The Corpus panel's statistics: the corpus's totals and length histogram, and a few sample documents, as tabs."""

from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6.QtWidgets import QLabel, QTabWidget, QTextBrowser, QVBoxLayout, QWidget

from mlm_studio.core.data.corpus import Corpus
from mlm_studio.ui.panels.corpus.report import length_histogram
from mlm_studio.ui.widgets.plots import ThemedPlot, accent_colour

LENGTHS_AXIS = "words per document"
NO_CORPUS = "No corpus loaded"
SAMPLE_CHARACTERS = 600


class CorpusStatistics(QTabWidget):
    """The corpus's totals and length histogram, and a few sample documents, as tabs."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.totals = QLabel(NO_CORPUS)
        self.totals.setWordWrap(True)
        self.histogram = ThemedPlot(LENGTHS_AXIS, "documents")
        self.histogram_curve = self.histogram.plot(
            [0, 1], [0], stepMode="center", fillLevel=0, brush=accent_colour(), pen=pg.mkPen(accent_colour())
        )
        self.histogram.setLimits(yMin=0)  # counts: an empty corpus shows 0 to 1, not -0.5 to 0.5
        stats_page = QWidget()
        stats_layout = QVBoxLayout(stats_page)
        stats_layout.addWidget(self.totals)
        stats_layout.addWidget(self.histogram, 1)
        self.samples = QTextBrowser()
        self.samples.setOpenLinks(False)
        self.addTab(stats_page, "Statistics")
        self.addTab(self.samples, "Sample documents")

    def show_corpus(self, corpus: Corpus | None) -> None:
        if corpus is None:
            self.totals.setText(NO_CORPUS)
            self.histogram_curve.setData([0, 1], [0])
            self._label_lengths(LENGTHS_AXIS)
            self.samples.clear()
            return
        self.totals.setText(
            f"<b>{corpus.documents:,}</b> documents · <b>{corpus.words:,}</b> words · "
            f"<b>{corpus.characters:,}</b> characters from <b>{len(corpus.loaded_sources)}</b> source(s)"
        )
        lengths = length_histogram(corpus.doc_words)
        self.histogram_curve.setData(lengths.edges, lengths.counts)
        clipped = f"{LENGTHS_AXIS} (the last bar: {lengths.upper:,} or more)"  # the longest 1%: its axis says so
        self._label_lengths(clipped if lengths.clipped else LENGTHS_AXIS)
        self.samples.setHtml("".join(f"<p>{html.escape(s[:SAMPLE_CHARACTERS])}</p><hr>" for s in corpus.samples))

    def _label_lengths(self, text: str) -> None:
        axis = self.histogram.getAxis("bottom")
        axis.setLabel(text)
        axis.resizeEvent()  # pyqtgraph centres an axis title only on a resize: a longer one would sit off-centre
