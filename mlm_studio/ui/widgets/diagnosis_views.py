"""The Evaluation panel's views of a `Diagnosis`: masked samples with the model's answers, and where it fails
(accuracy by frequency and by kind, confusions, calibration)."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.evaluation.diagnosis import KIND_NAMES, Diagnosis, Sample
from mlm_studio.ui.widgets.plots import ThemedPlot, fit_rows
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView

RIGHT, WRONG = QColor("#4caf50"), QColor("#d9534f")
FILTERS = {"all": "every answer", "wrong": "wrong answers only", "right": "right answers only"}
SAMPLES_HINT = (
    "Choose a model above and press Evaluate: held-out blocks appear here with its answer at each masked token."
)
SERIES_HEIGHT = 240  # the lowest the curves over checkpoints get: below it the tab scrolls


def answer_cells(sample: Sample, tokenizer: MLMTokenizer, show: str = "all") -> list[TokenCell]:
    """A block's tokens; each masked one coloured right or wrong, its shade the model's confidence, with the
    original, the treatment and the top-k on hover. `show` keeps only wrong or right answers coloured."""
    answers = {a.position: a for a in sample.answers}
    special = set(tokenizer.special_ids)
    cells = []
    for position, token_id in enumerate(sample.original):
        if token_id == tokenizer.pad_id:
            break
        text = tokenizer.id_to_token(token_id)
        answer = answers.get(position)
        if answer is None or (show == "wrong" and answer.correct) or (show == "right" and not answer.correct):
            cells.append(TokenCell(text, None, "", muted=token_id in special))
            continue
        colour = QColor(RIGHT if answer.correct else WRONG)
        colour.setAlphaF(0.35 + 0.65 * answer.probabilities[0])
        shown = tokenizer.id_to_token(sample.shown[position])
        lines = [f"'{text}' shown as {KIND_NAMES.get(answer.kind, shown)} ({shown})"] + [
            f"{rank}. {tokenizer.id_to_token(i)}  {p:.1%}"
            for rank, (i, p) in enumerate(zip(answer.top, answer.probabilities), start=1)
        ]
        label = text if answer.correct else f"{text} → {tokenizer.id_to_token(answer.top[0])}"
        cells.append(TokenCell(label, colour, "\n".join(lines)))
    return cells


class SamplesView(QWidget):
    """Held-out blocks with the model's answers, filtered and sorted as asked."""

    def __init__(self) -> None:
        super().__init__()
        self.filter_combo = QComboBox()
        for key, text in FILTERS.items():
            self.filter_combo.addItem(text, key)
        self.sort_check = QCheckBox("hardest blocks first (by loss)")
        self.filter_combo.currentIndexChanged.connect(self._show)
        self.sort_check.toggled.connect(self._show)
        self.views: list[TokenView] = []
        self.hint = QLabel(SAMPLES_HINT)
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.body = QVBoxLayout()
        body = QWidget()
        body.setLayout(self.body)
        self.scroll = QScrollArea()  # shown once there are samples, the hint until then
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(body)
        self.scroll.hide()
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Show"))
        controls.addWidget(self.filter_combo)
        controls.addWidget(self.sort_check)
        controls.addStretch(1)
        legend = QLabel("Green: right · red: wrong (expected → predicted) · the deeper, the more confident. Hover a "
                        "token for the top candidates.")  # fmt: skip
        legend.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(legend)
        layout.addWidget(self.hint, 1)
        layout.addWidget(self.scroll, 1)
        self.samples: tuple[Sample, ...] = ()
        self.tokenizer: MLMTokenizer | None = None

    def show_samples(self, samples: tuple[Sample, ...], tokenizer: MLMTokenizer) -> None:
        self.samples, self.tokenizer = samples, tokenizer
        self._show()

    def ordered(self) -> list[Sample]:
        samples = list(self.samples)
        if self.sort_check.isChecked():
            samples.sort(key=lambda s: -s.loss if not math.isnan(s.loss) else math.inf)
        return samples

    def _show(self) -> None:
        while self.body.count():
            widget = self.body.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.views = []
        self.hint.setVisible(self.tokenizer is None)
        self.scroll.setVisible(self.tokenizer is not None)
        if self.tokenizer is None:
            return
        for sample in self.ordered():
            view = TokenView()
            view.set_cells(answer_cells(sample, self.tokenizer, self.filter_combo.currentData()))
            view.setToolTip(f"block loss {sample.loss:.3f}")
            self.body.addWidget(view)
            self.views.append(view)
        self.body.addStretch(1)


def _table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().setVisible(False)
    table.horizontalHeader().setStretchLastSection(True)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    return table


def _fill(table: QTableWidget, rows: list[tuple], most: int = 10) -> None:
    """`rows` in `table`, as tall as they are up to `most` rows."""
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(value))
    table.resizeColumnsToContents()
    fit_rows(table, most)


def _percent(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.1%}"


class FailuresView(QWidget):
    """Accuracy by token frequency and by kind, the most frequent confusions, and the calibration plot."""

    def __init__(self) -> None:
        super().__init__()
        self.summary = QLabel()
        self.frequency_table = _table(["corpus occurrences", "positions", "accuracy"])
        self.kind_table = _table(["kind", "positions", "accuracy"])
        self.confusion_table = _table(["expected", "predicted", "times"])
        self.calibration = ThemedPlot("top-1 confidence", "accuracy", percent=("left", "bottom"))
        self.calibration.setTitle("Calibration: on the diagonal, confidence is accuracy")
        self.calibration.setXRange(0, 1)
        self.calibration.setYRange(0, 1)
        self.calibration.add_header_legend()
        grid = QGridLayout()
        grid.addWidget(QLabel("<b>By how often the token occurs in the corpus</b>"), 0, 0)
        grid.addWidget(self.frequency_table, 1, 0)
        grid.addWidget(QLabel("<b>By piece and by masking treatment</b>"), 0, 1)
        grid.addWidget(self.kind_table, 1, 1)
        grid.addWidget(QLabel("<b>Most frequent confusions</b>"), 2, 0)
        grid.addWidget(self.confusion_table, 3, 0)
        grid.addWidget(self.calibration, 2, 1, 2, 1)
        self.series = ThemedPlot("step", "accuracy", percent=("left",))
        self.series.setTitle("Over the run's checkpoints (Every checkpoint)")
        self.series.add_header_legend()
        self.series.setMinimumHeight(SERIES_HEIGHT)
        self.series_by = QComboBox()
        self.series_by.addItem("how often the token occurs in the corpus", "by_frequency")
        self.series_by.addItem("piece and masking treatment", "by_kind")
        self.series_by.currentIndexChanged.connect(self._draw_series)
        self.steps: list[int] = []
        self.over_time: list[Diagnosis] = []
        curves = QHBoxLayout()
        curves.addWidget(QLabel("Curves of accuracy by"))
        curves.addWidget(self.series_by)
        curves.addStretch(1)
        body = QWidget()
        content = QVBoxLayout(body)
        content.addWidget(self.summary)
        content.addLayout(grid, 2)
        content.addLayout(curves)
        content.addWidget(self.series, 1)
        scroll = QScrollArea()  # the tables at their full height: a low window scrolls rather than squeezes them
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)

    def show_series(self, steps: list[int], diagnoses: list[Diagnosis]) -> None:
        """The run's checkpoints as curves: all positions, and each group of the chosen breakdown."""
        self.steps, self.over_time = steps, diagnoses
        self._draw_series()

    def _draw_series(self) -> None:
        if not self.over_time:
            return
        breakdown = self.series_by.currentData()
        lines = {"all": [d.accuracy for d in self.over_time]}
        for number, share in enumerate(getattr(self.over_time[0], breakdown)):
            name = f"{share.name}× in the corpus" if breakdown == "by_frequency" else share.name
            lines[name] = [getattr(d, breakdown)[number].accuracy for d in self.over_time]
        plot_series(self.series, self.steps, lines)

    def show_diagnosis(
        self, diagnosis: Diagnosis, other: Diagnosis | None = None, titles: tuple[str, str] = ("model", "compared")
    ) -> None:
        """One model's breakdowns, or two side by side (the second model's accuracy in its own column, its
        calibration in orange); `titles` name the two in the calibration's legend."""
        summary = _summary(diagnosis)
        if other is not None:
            summary += f"<br>compared: {_summary(other)}"
        self.summary.setText(summary)
        for table, mine, theirs in (
            (self.frequency_table, diagnosis.by_frequency, other.by_frequency if other else None),
            (self.kind_table, diagnosis.by_kind, other.by_kind if other else None),
        ):
            headers = [table.horizontalHeaderItem(0).text(), "positions", "accuracy"]
            table.setColumnCount(3 if theirs is None else 4)
            table.setHorizontalHeaderLabels(headers if theirs is None else [*headers, "accuracy, compared"])
            compared = {s.name: _percent(s.accuracy) for s in theirs or ()}
            _fill(table, [(s.name, f"{s.count:,}", _percent(s.accuracy), *([compared.get(s.name, "—")] if theirs
                          else [])) for s in mine])  # fmt: skip
        _fill(self.confusion_table, [(e, p, f"{n:,}") for e, p, n in diagnosis.confusions], most=6)
        self.calibration.clear()
        diagonal = pg.mkPen((128, 128, 128), style=pg.QtCore.Qt.PenStyle.DashLine)
        self.calibration.plot([0, 1], [0, 1], pen=diagonal, name="perfectly calibrated")
        for shown, colour, title in zip((diagnosis, other), ("#1f77b4", "#ff7f0e"), titles):
            if shown is not None and shown.calibration:
                confidence, accuracy, _ = zip(*shown.calibration)
                pen = pg.mkPen(colour, width=2)
                self.calibration.plot(list(confidence), list(accuracy), pen=pen, symbol="o", symbolBrush=colour,
                                      name=title)  # fmt: skip


def _summary(diagnosis: Diagnosis) -> str:
    return (
        f"<b>{diagnosis.predicted:,}</b> masked positions · loss <b>{diagnosis.loss:.3f}</b> · accuracy "
        f"<b>{_percent(diagnosis.accuracy)}</b> · top-5 <b>{_percent(diagnosis.top5_accuracy)}</b> · "
        f"expected calibration error <b>{diagnosis.ece:.3f}</b>"
    )


def plot_series(
    plot: ThemedPlot, steps: list[int], lines: dict[str, list[float]], dashed: tuple[str, ...] = ()
) -> None:
    """One line per named series over the checkpoints' steps (gaps where a value is missing)."""
    plot.clear()
    for number, (name, values) in enumerate(lines.items()):
        style = pg.QtCore.Qt.PenStyle.DashLine if name in dashed else pg.QtCore.Qt.PenStyle.SolidLine
        pen = pg.mkPen(SERIES_COLOURS[number % len(SERIES_COLOURS)], width=2, style=style)
        plot.plot(steps, values, pen=pen, symbol="o", symbolSize=5, name=name, connect="finite")


SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#7f7f7f")
