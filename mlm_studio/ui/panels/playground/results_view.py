"""One model's candidates in the Playground: per mask, buttons with probability bars, the text filled in iterative
mode, and an ELECTRA model's view of which tokens were replaced."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.ui.panels.playground.prediction import Prediction
from mlm_studio.ui.theme import PALETTE_CHANGES, blended
from mlm_studio.ui.widgets.candidate_label import written_form
from mlm_studio.ui.widgets.explanation import why_button
from mlm_studio.ui.widgets.model_choice import model_combo
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView

REPLACED_COLOUR = "#d62728"
BAR_WIDTH = 160  # a candidate's probability bar: long enough to compare, short enough to read its share beside it
WEIGHTS_TOOLTIP = {
    True: "Int8 weights, for speed: on 399 masks in text a trained model had not seen, the first candidate was the "
    "exact weights' in 99% of them, probabilities within 2.6 points (tick Exact weights for the exported model's "
    "numbers).",
    False: "Exact weights: the same candidates and probabilities as the CLI and the exported model.",
}


class ResultsView(QGroupBox):
    """One model's candidates: per mask, buttons with probability bars."""

    candidate_clicked = Signal(int, object)  # mask number, Candidate
    why_clicked = Signal(int, object)  # mask number, Candidate: explain it

    def __init__(self, title: str) -> None:
        super().__init__(title)
        self.default_title = title
        self.subject: str | None = None  # the model whose candidates are shown, None while none are
        self.prediction: Prediction | None = None  # the candidates shown, None while none are
        self._replaced: tuple[tuple[str, float], ...] = ()
        self.model_combo = model_combo("The model: the current run's latest checkpoint, a saved run, or a folder")
        self.latency = QLabel()
        self.body = QWidget()
        self.grid = QGridLayout(self.body)
        self.grid.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.grid.setColumnStretch(4, 1)  # the candidates keep to the left; the space left over stays empty
        self.filled = QLabel()
        self.filled.setWordWrap(True)
        self.detector_label = QLabel("<b>Replaced?</b> the discriminator's view of each token (darker: more likely "
                                     "replaced; hover for the probability)")  # fmt: skip
        self.detector_label.setWordWrap(True)
        self.detector = TokenView()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.body)
        header = QHBoxLayout()
        header.addWidget(self.model_combo, 1)
        header.addWidget(self.latency)
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.filled)
        layout.addWidget(self.detector_label)
        layout.addWidget(self.detector)
        layout.addWidget(scroll, 1)
        self._show_detector(())
        self.buttons: list[list[QPushButton]] = []

    def show_prediction(self, prediction: Prediction, subject: str) -> None:
        """`prediction`'s candidates, made by the model at `subject`."""
        self._clear()
        self.subject, self.prediction = subject, prediction
        self.latency.setText(f"{prediction.milliseconds:.1f} ms · {'int8' if prediction.int8 else 'exact'} weights")
        self.latency.setToolTip(WEIGHTS_TOOLTIP[prediction.int8])
        self.filled.setText(f"Filled: <b>{prediction.filled}</b>" if prediction.filled else "")
        self.filled.setVisible(bool(prediction.filled))
        self._show_detector(prediction.replaced)
        row = 0
        for number, candidates in enumerate(prediction.masks):
            self.grid.addWidget(QLabel(f"<b>[MASK] {number + 1}</b>"), row, 0, 1, 3)
            row += 1
            buttons = []
            for candidate in candidates:
                label, tooltip, writable = written_form(candidate)
                button = QPushButton(label)
                button.setFlat(True)
                button.setToolTip(tooltip.replace("the mask", f"[MASK] {number + 1}"))
                button.setEnabled(writable)
                button.clicked.connect(lambda _=False, n=number, c=candidate: self.candidate_clicked.emit(n, c))
                bar = QProgressBar()
                bar.setRange(0, 1000)
                bar.setValue(round(candidate.score * 1000))
                bar.setTextVisible(False)  # the share is read beside the bar, not over its fill
                bar.setFixedSize(BAR_WIDTH, 12)
                share = QLabel(f"{candidate.score:.1%}")
                self.grid.addWidget(button, row, 0)
                self.grid.addWidget(bar, row, 1)
                self.grid.addWidget(share, row, 2)
                self.grid.addWidget(why_button(lambda n=number, c=candidate: self.why_clicked.emit(n, c)), row, 3)
                buttons.append(button)
                row += 1
            self.buttons.append(buttons)

    def _show_detector(self, replaced: tuple[tuple[str, float], ...]) -> None:
        """Each token shaded by the probability that it was replaced (an ELECTRA model's detector)."""
        self._replaced = replaced
        cells, base, red = [], self.palette().color(QPalette.ColorRole.Base), QColor(REPLACED_COLOUR)
        for piece, probability in replaced:
            colour = blended(red, 0.08 + 0.92 * probability, base)  # so that the text colour can follow it
            cells.append(TokenCell(piece, colour, f"{piece}: replaced with probability {probability:.1%}"))
        self.detector.set_cells(cells)
        self.detector.setVisible(bool(cells))
        self.detector_label.setVisible(bool(cells))

    def changeEvent(self, event: QEvent) -> None:
        """The chips are blended over the background: a new colour scheme blends them again."""
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            self._show_detector(self._replaced)

    def show_message(self, text: str) -> None:
        """`text` instead of candidates, under the view's own title (no model answered)."""
        self._clear()
        self.subject, self.prediction = None, None
        self.setTitle(self.default_title)
        self._show_detector(())
        self.latency.setText("")
        self.filled.setVisible(False)
        label = QLabel(text)
        label.setWordWrap(True)
        self.grid.addWidget(label, 0, 0, 1, 4)

    def _clear(self) -> None:
        self.buttons = []
        while self.grid.count():
            widget = self.grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
