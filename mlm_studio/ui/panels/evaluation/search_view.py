"""The Evaluation panel's "Search" tab: the corpus's documents embedded by the evaluated model, then the nearest
to what the user types, ranked with their cosine scores."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.data.corpus import Corpus
from mlm_studio.core.errors import UserError
from mlm_studio.core.evaluation.search import Hit, SearchIndex, build_index
from mlm_studio.core.evaluation.subject import Subject
from mlm_studio.core.models.encoder import layer_count
from mlm_studio.ui.tasks import TaskRunner, show_progress
from mlm_studio.ui.widgets.message_bar import MessageBar

SHOWN_CHARACTERS = 400  # of each document in the table (its tooltip holds it whole)


class SearchView(QWidget):
    """Embeds the corpus with the evaluated model in the background (progress, cancel), then answers queries."""

    embedded = Signal()  # the documents are embedded: queries can be typed
    searched = Signal()  # a query's nearest documents are shown

    def __init__(self, subject: Callable[[], Subject | None], corpus: Callable[[], Corpus | None]) -> None:
        """`subject()` is the evaluated model (None before an evaluation), `corpus()` the workspace's corpus."""
        super().__init__()
        self.subject, self.corpus = subject, corpus
        self.index: SearchIndex | None = None
        self.embedded_by = ""  # the model whose vectors the index holds
        self.hits: list[Hit] = []
        self.layer_spin = QSpinBox()
        self.layer_spin.setRange(0, 1)
        self.layer_spin.setSpecialValueText("last, as the head reads it")
        self.layer_spin.setToolTip("Whose output is averaged over a document's tokens into its vector")
        self.embed_button = QPushButton("Embed the corpus")
        self.embed_button.setToolTip("Read every document of the Corpus panel's corpus with the evaluated model")
        self.embed_button.clicked.connect(self.embed)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.hide()
        self.progress_bar = QProgressBar()
        self.progress_bar.hide()
        self.query_edit = QLineEdit()
        self.query_edit.setPlaceholderText("Embed the corpus, then type what to look for and press Enter")
        self.query_edit.setEnabled(False)
        self.query_edit.returnPressed.connect(self.search)
        self.k_spin = QSpinBox()
        self.k_spin.setRange(1, 1000)
        self.k_spin.setValue(10)
        self.k_spin.setPrefix("top ")
        self.k_spin.setToolTip("How many documents to show, the nearest first")
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["rank", "cosine", "document"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.message_bar = MessageBar()
        self.runner = TaskRunner(self)
        self.runner.progress.connect(partial(show_progress, self.progress_bar))
        self.runner.succeeded.connect(self._on_embedded)
        self.runner.failed.connect(lambda message: self.message_bar.show_message(message, "error"))
        self.runner.cancelled.connect(self._on_cancelled)
        self.runner.finished.connect(lambda: self._busy(False))
        self.cancel_pressed = False  # the embedding stops at the user's word, not because the model changed
        self.cancel_button.clicked.connect(self._on_cancel_pressed)

        embed_row = QHBoxLayout()
        embed_row.addWidget(self.layer_spin)
        embed_row.addWidget(self.embed_button)
        embed_row.addWidget(self.cancel_button)
        embed_row.addStretch(1)
        query_row = QHBoxLayout()
        query_row.addWidget(self.query_edit, 1)
        query_row.addWidget(self.k_spin)
        form = QFormLayout()
        form.addRow("Layer", embed_row)
        form.addRow("Query", query_row)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.table, 1)

    def embed(self) -> None:
        """Embed the corpus's documents with the evaluated model, in the background."""
        subject, corpus = self.subject(), self.corpus()
        missing = _missing(subject is None, corpus is None)
        if missing:
            self.message_bar.show_message(missing, "warning")
            return
        layer = self.layer_spin.value() or None

        def work(progress) -> SearchIndex:
            return build_index(subject.encoder, subject.tokenizer, list(corpus.iter_documents()), layer, progress)

        self.clear()
        self.embedded_by = subject.title
        self._busy(True)
        self.runner.start(work)

    def _on_embedded(self, index: SearchIndex) -> None:
        self.index = index
        said = f"Embedded {index.documents:,} documents with {self.embedded_by}."
        repeated = index.documents - len(index.texts)
        if repeated:
            said += f" {repeated:,} of them repeat another's text: {len(index.texts):,} distinct texts are searched."
        if index.cut:
            said += f" {index.cut_note[0].upper()}{index.cut_note[1:]}."
        self.message_bar.show_message(said, "info")
        self.query_edit.setEnabled(True)
        self.query_edit.setFocus()
        self.embedded.emit()

    def search(self) -> None:
        """Show the documents nearest the typed query."""
        if self.index is None:
            return
        try:
            self.hits = self.index.nearest(self.query_edit.text(), self.k_spin.value())
        except UserError as exc:
            self.message_bar.show_message(str(exc), "warning")
            return
        self.table.setRowCount(len(self.hits))
        for row, (hit, score) in enumerate(zip(self.hits, cosines([hit.score for hit in self.hits]))):
            text = " ".join(hit.text.split())
            shown = text[:SHOWN_CHARACTERS] + ("…" if len(text) > SHOWN_CHARACTERS else "")
            copies = f" (the corpus holds it {hit.copies} times; listed once)" if hit.copies > 1 else ""
            for column, value in enumerate([str(row + 1), score, f"×{hit.copies}  {shown}" if copies else shown]):
                item = QTableWidgetItem(value)
                if column < 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                else:
                    item.setToolTip(hit.text[:4000] + copies)
                self.table.setItem(row, column, item)
        self.table.resizeColumnToContents(0)
        self.table.resizeColumnToContents(1)
        self.table.resizeRowsToContents()
        shown = "The document" if len(self.hits) == 1 else f"The {len(self.hits)} distinct documents"
        self.message_bar.show_message(f"{shown} nearest {self.query_edit.text()!r}, by {self.embedded_by}.", "info")
        self.searched.emit()

    def clear(self) -> None:
        """Forget the embedded documents, the documents found and what was said of them (another model was
        evaluated, or none is)."""
        self.runner.cancel()
        self.index, self.hits = None, []
        self.table.setRowCount(0)
        self.query_edit.setEnabled(False)
        self.message_bar.clear()

    def _on_cancel_pressed(self) -> None:
        self.cancel_pressed = True
        self.runner.cancel()

    def _on_cancelled(self) -> None:
        if self.cancel_pressed:
            self.message_bar.show_message("Cancelled.", "info")
        self.cancel_pressed = False

    def _busy(self, busy: bool) -> None:
        self.embed_button.setEnabled(not busy)
        self.cancel_button.setVisible(busy)
        self.progress_bar.setVisible(busy)
        self.progress_bar.setRange(0, 0)

    def set_model(self, subject: Subject) -> None:
        """A newly evaluated model: its layers offered, the documents embedded by another model forgotten."""
        self.clear()
        self.layer_spin.setRange(0, layer_count(subject.encoder))


def _missing(model: bool, corpus: bool) -> str:
    """What the search lacks, in words ("" when nothing)."""
    if model and corpus:
        return "Evaluate a model and load a corpus on the Corpus panel first: search reads both."
    if model:
        return "Evaluate a model first: search reads the corpus with its vectors."
    if corpus:
        return "Load a corpus on the Corpus panel first: search finds its documents."
    return ""


def cosines(scores: list[float]) -> list[str]:
    """The scores with as many decimals (3 to 6) as it takes for two that differ to read differently."""
    for places in range(3, 7):
        shown = [f"{score:.{places}f}" for score in scores]
        if all(a != b or x == y for a, b, x, y in zip(shown, shown[1:], scores, scores[1:])):
            break
    return shown
