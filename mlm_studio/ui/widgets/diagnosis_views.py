"""The Evaluation panel's views of a `Diagnosis`: masked samples with the model's answers, and where it fails
(accuracy by frequency and by kind, confusions, calibration)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
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
DIFFERENT_BLOCKS = (
    "each on its own held-out blocks (their tokenizers or corpora differ): a row's two blocks are not the same text."
)
TITLES = (  # the Failures tab's tables
    "By how often the token occurs in the corpus",
    "By piece and by masking treatment",
    "Most frequent confusions",
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


@dataclass(frozen=True)
class AnsweredBlocks:
    """A model's held-out blocks ready to show: under each filter, each block's chips. Made where the model is
    scored, off the GUI thread (chips are plain values), so that showing them is quick."""

    title: str
    samples: tuple[Sample, ...]
    cells: dict[str, list[list[TokenCell]]]  # by filter, a list of chips per block
    originals: tuple[tuple[int, ...], ...]  # each block's token ids: two models read the same blocks or not


def answered_blocks(title: str, samples: tuple[Sample, ...], tokenizer: MLMTokenizer) -> AnsweredBlocks:
    """`samples` of the model `title` as chips, under every filter."""
    cells = {show: [answer_cells(sample, tokenizer, show) for sample in samples] for show in FILTERS}
    return AnsweredBlocks(title, samples, cells, tuple(s.original for s in samples))


class SamplesView(QWidget):
    """Held-out blocks with the model's answers, filtered and sorted as asked; with a model compared, its answers
    in a second column, block beside block."""

    answer_clicked = Signal(int, int)  # a block's number and the position of the token clicked in it

    def __init__(self) -> None:
        super().__init__()
        self.filter_combo = QComboBox()
        for key, text in FILTERS.items():
            self.filter_combo.addItem(text, key)
        self.sort_check = QCheckBox("hardest blocks first (by loss)")
        self.filter_combo.currentIndexChanged.connect(self._show)
        self.sort_check.toggled.connect(self._show)
        self.views: list[TokenView] = []  # the evaluated model's blocks, as shown
        self.compared_views: list[TokenView] = []  # the compared model's, beside them
        self.hint = QLabel(SAMPLES_HINT)
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.caption = QLabel()  # which model is in which column
        self.caption.setWordWrap(True)
        self.caption.hide()
        self.scroll = QScrollArea()  # shown once there are samples, the hint until then
        self.scroll.setWidgetResizable(True)
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
        layout.addWidget(self.caption)
        layout.addWidget(self.hint, 1)
        layout.addWidget(self.scroll, 1)
        self.blocks: AnsweredBlocks | None = None
        self.compared: AnsweredBlocks | None = None

    @property
    def samples(self) -> tuple[Sample, ...]:
        return self.blocks.samples if self.blocks is not None else ()

    def show_blocks(self, blocks: AnsweredBlocks, compared: AnsweredBlocks | None = None) -> None:
        """One model's blocks, or two models' side by side."""
        self.blocks, self.compared = blocks, compared
        self._show()

    def clear(self, hint: str = SAMPLES_HINT) -> None:
        """No blocks: `hint` in their place."""
        self.blocks = self.compared = None
        self.hint.setText(hint)
        self._show()

    def ordered(self) -> list[Sample]:
        return [self.samples[i] for i in self._order()]

    def _order(self) -> list[int]:
        """The blocks' numbers as shown: as read, or the evaluated model's hardest first."""
        numbers = list(range(len(self.samples)))
        if self.sort_check.isChecked():
            losses = [s.loss for s in self.samples]
            numbers.sort(key=lambda i: -losses[i] if not math.isnan(losses[i]) else math.inf)
        return numbers

    def _show(self) -> None:
        self.views, self.compared_views = [], []
        self.hint.setVisible(self.blocks is None)
        self.scroll.setVisible(self.blocks is not None)
        self.caption.setVisible(self.compared is not None)
        body = QWidget()
        layout = QVBoxLayout(body)
        if self.blocks is not None:
            self._fill(layout)
        # filled before it is set: the scroll area then sizes it to the blocks' height at its width (a body filled
        # in place kept the height it had, its blocks squeezed)
        self.scroll.setWidget(body)

    def _fill(self, layout: QVBoxLayout) -> None:
        show = self.filter_combo.currentData()
        columns = [self.blocks] if self.compared is None else [self.blocks, self.compared]
        if self.compared is not None:
            same = self.compared.originals == self.blocks.originals
            blocks = "on the same held-out blocks." if same else DIFFERENT_BLOCKS
            self.caption.setText(f"Left: <b>{self.blocks.title}</b> · right: <b>{self.compared.title}</b>, {blocks}")
        for number in self._order():
            row = QWidget() if self.compared is not None else None
            pair = QHBoxLayout(row) if row is not None else layout
            if row is not None:
                pair.setContentsMargins(0, 0, 0, 0)
                layout.addWidget(row)
            for column, blocks in enumerate(columns):
                view = TokenView()
                if number < len(blocks.samples):
                    view.set_cells(blocks.cells[show][number])
                    view.setToolTip(f"{blocks.title}: block loss {blocks.samples[number].loss:.3f}")
                if column == 0:
                    view.clicked.connect(lambda position, n=number: self.answer_clicked.emit(n, position))
                pair.addWidget(view, 1)
                (self.views if column == 0 else self.compared_views).append(view)
        layout.addStretch(1)


def _title(text: str) -> QLabel:
    """A table's title in bold, as tall as its line."""
    title = QLabel(f"<b>{text}</b>")
    title.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
    return title


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
        self.calibration.setMinimumHeight(SERIES_HEIGHT)
        self.titles = [_title(text) for text in TITLES]
        grid = QGridLayout()  # each title on its table, the tables at the top of their cells
        top = Qt.AlignmentFlag.AlignTop
        grid.addWidget(self.titles[0], 0, 0)
        grid.addWidget(self.frequency_table, 1, 0, top)
        grid.addWidget(self.titles[1], 0, 1)
        grid.addWidget(self.kind_table, 1, 1, top)
        grid.addWidget(self.titles[2], 2, 0)
        grid.addWidget(self.confusion_table, 3, 0, top)
        grid.addWidget(self.calibration, 2, 1, 2, 1)
        grid.setRowStretch(3, 1)  # what the calibration plot needs beyond the confusions goes under them
        self.series = ThemedPlot("step", "accuracy", percent=("left",))
        self.series.setTitle("Over the run's checkpoints (Every checkpoint)")
        self.series.add_header_legend()
        self.series_note = QLabel()  # whose checkpoints, and which curves hide one another
        self.series_note.setWordWrap(True)
        self.series.setMinimumHeight(SERIES_HEIGHT)
        self.series_by = QComboBox()
        self.series_by.addItem("how often the token occurs in the corpus", "by_frequency")
        self.series_by.addItem("piece and masking treatment", "by_kind")
        self.series_by.currentIndexChanged.connect(self._draw_series)
        self.steps: list[int] = []
        self.over_time: list[Diagnosis] = []
        self.run = ""  # whose checkpoints the curves are
        curves = QHBoxLayout()
        curves.addWidget(QLabel("Curves of accuracy by"))
        curves.addWidget(self.series_by)
        curves.addStretch(1)
        body = QWidget()
        content = QVBoxLayout(body)
        content.addWidget(self.summary)
        content.addLayout(grid)
        content.addLayout(curves)
        content.addWidget(self.series_note)
        content.addWidget(self.series, 1)
        scroll = QScrollArea()  # the tables at their full height: a low window scrolls rather than squeezes them
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)

    def show_series(self, steps: list[int], diagnoses: list[Diagnosis], run: str = "") -> None:
        """The checkpoints of the run named `run` as curves: all positions, and each group of the chosen
        breakdown."""
        self.steps, self.over_time, self.run = steps, diagnoses, run
        self._draw_series()

    def clear_series(self) -> None:
        """No curves (another run is chosen)."""
        self.steps, self.over_time, self.run = [], [], ""
        self.series.clear()
        self.series_note.clear()

    def _draw_series(self) -> None:
        if not self.over_time:
            return
        breakdown = self.series_by.currentData()
        lines = {"all": [d.accuracy for d in self.over_time]}
        for number, share in enumerate(getattr(self.over_time[0], breakdown)):
            name = f"{share.name}× in the corpus" if breakdown == "by_frequency" else share.name
            lines[name] = [getattr(d, breakdown)[number].accuracy for d in self.over_time]
        note = plot_series(self.series, self.steps, lines)
        self.series_note.setText(f"The {len(self.steps)} checkpoints of <b>{self.run}</b>. {note}".strip())

    def clear(self) -> None:
        """No diagnosis (another model is chosen); the curves over checkpoints are the run's and stay."""
        self.summary.clear()
        for table in (self.frequency_table, self.kind_table, self.confusion_table):
            table.setRowCount(0)
        self.calibration.clear()

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
        for shown, look, title in zip((diagnosis, other), CALIBRATION_LOOKS, titles):
            if shown is not None and shown.calibration:
                confidence, accuracy, _ = zip(*shown.calibration)
                colour, symbol, style = look
                see_through = QColor(colour)
                see_through.setAlpha(150)  # a point of the other model under it shows through
                self.calibration.plot(list(confidence), list(accuracy), pen=pg.mkPen(colour, width=2, style=style),
                                      symbol=symbol, symbolSize=9, symbolBrush=pg.mkBrush(see_through),
                                      symbolPen=pg.mkPen(colour), name=title)  # fmt: skip


def _summary(diagnosis: Diagnosis) -> str:
    return (
        f"<b>{diagnosis.predicted:,}</b> masked positions · loss <b>{diagnosis.loss:.3f}</b> · accuracy "
        f"<b>{_percent(diagnosis.accuracy)}</b> · top-5 <b>{_percent(diagnosis.top5_accuracy)}</b> · "
        f"expected calibration error <b>{diagnosis.ece:.3f}</b>"
    )


def plot_series(plot: ThemedPlot, steps: list[int], lines: dict[str, list[float]], dashed: tuple[str, ...] = ()) -> str:
    """One line per named series of shares over the checkpoints' steps (gaps where a value is missing), each in its
    own colour and marker. Returns what the plot cannot show: which lines lie on top of each other, which have
    no value to draw ("" when every line can be told apart)."""
    plot.clear()
    few = len(steps) <= STEP_TICKS  # a tick at each checkpoint's step, not at steps no checkpoint is at
    plot.getPlotItem().getAxis("bottom").setTicks([[(step, f"{step:,}") for step in steps]] if few else None)
    for number, (name, values) in enumerate(lines.items()):
        style = pg.QtCore.Qt.PenStyle.DashLine if name in dashed else pg.QtCore.Qt.PenStyle.SolidLine
        colour = SERIES_COLOURS[number % len(SERIES_COLOURS)]
        pen = pg.mkPen(colour, width=2, style=style)
        plot.plot(steps, values, pen=pen, symbol=SERIES_SYMBOLS[number % len(SERIES_SYMBOLS)], symbolSize=7,
                  symbolBrush=colour, symbolPen=pg.mkPen(colour), name=name, connect="finite")  # fmt: skip
    return coinciding(lines)


def coinciding(lines: dict[str, list[float]]) -> str:
    """A sentence naming the lines drawn on top of each other (the same value at every step) and those with no
    value at all; "" when there are none."""
    groups: dict[tuple, list[str]] = {}
    empty = []
    for name, values in lines.items():
        rounded = np.round(np.asarray(values, dtype=float), 6)
        if np.isnan(rounded).all():
            empty.append(name)
        else:
            groups.setdefault(tuple(np.nan_to_num(rounded, nan=-1.0).tolist()), []).append(name)
    said = []
    for values, names in groups.items():
        if len(names) > 1:
            same = f"{values[0]:.1%} at every checkpoint" if len(set(values)) == 1 else "the same at every checkpoint"
            said.append(f"{_listed(names)} lie on top of each other ({same}).")
    if empty:
        said.append(f"No masked token at any checkpoint, not drawn: {_listed(empty)}.")
    return " ".join(said)


def _listed(names: list[str]) -> str:
    quoted = [f"“{name}”" for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


STEP_TICKS = 8  # up to this many checkpoints, the step axis is labelled at theirs alone
# tab10, the palette of the application's plots, without its brown and olive (read as the red and the green)
SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#17becf", "#e377c2", "#7f7f7f")
SERIES_SYMBOLS = ("o", "s", "t", "d", "t1", "p", "h", "star")
CALIBRATION_LOOKS = (  # the evaluated model, the one compared: each its colour, marker and line
    ("#1f77b4", "o", pg.QtCore.Qt.PenStyle.SolidLine),
    ("#ff7f0e", "s", pg.QtCore.Qt.PenStyle.DashLine),
)
