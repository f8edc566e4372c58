"""What a fine-tuning run shows in the Fine-tune panel, each tab naming the run it shows: its curves, its test
scores, the confusion matrix (cells shaded by count) beside each class's precision, recall and F1, and the test
examples the model gets wrong: a table of texts (one line each) with their true and predicted labels, or, for
tagging, each sentence's entities as coloured chips, the true ones above the predicted ones; for question
answering, exact match and F1 and each wrong answer marked in its context (`answers.py`)."""

from __future__ import annotations

import html
import math
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.finetune.mistakes import Mistake
from mlm_studio.core.finetune.scores import entities, per_class_rows
from mlm_studio.core.runs.records import TestRecord, answer_scores
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.ui.panels.finetune.answers import AnswerMistakesView
from mlm_studio.ui.theme import blended, readable_on
from mlm_studio.ui.widgets.elided_label import ElidedLabel

CHIP_COLOURS = ("#f4a261", "#8ecae6", "#b5e48c", "#e9c46a", "#cdb4db", "#ffafcc", "#a3c4bc")
MATRIX_TIP = "Rows: the true label; columns: the predicted one. Darker cells hold more examples."
NO_RESULTS = "The test scores, the confusion matrix and the mistakes appear here when a fine-tuning ends."


def read_only_table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    return table


def cell(value: object, align_right: bool = False) -> QTableWidgetItem:
    item = QTableWidgetItem(str(value))
    if align_right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _measured(share: float | None) -> bool:
    return share is not None and not math.isnan(share)


class ResultsView(QTabWidget):
    """One run's curves, scores (with the confusion matrix and per-class table) and mistakes, as three tabs, each
    headed by the run it shows (`set_subject`)."""

    def __init__(self, curves: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.captions: list[ElidedLabel] = []
        self.summary = QLabel(NO_RESULTS)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.confusion = QTableWidget()
        self.confusion.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.confusion.setToolTip(MATRIX_TIP)
        self.per_class = read_only_table(["label", "precision", "recall", "F1", "support"])
        self.confusion.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # uncut
        self.per_class.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)  # the rest
        for table in (self.confusion, self.per_class):  # the tab's height filled, each label's row level in both
            table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.tables = tables = QSplitter(Qt.Orientation.Horizontal)
        tables.setObjectName("finetune-confusion-per-class")
        tables.addWidget(self.confusion)
        tables.addWidget(self.per_class)
        self.answer_table = read_only_table(["questions", "exact match", "F1"])  # question answering's scores
        self.answer_table.setObjectName("finetune-answer-scores")
        self.answer_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.answer_table.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.answer_table.hide()
        self.mistakes = read_only_table(["row", "text", "true", "predicted"])
        header = self.mistakes.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.mistakes.setWordWrap(False)  # one line each, as long as the others: the whole text in its tooltip
        self.mistakes.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.spans = QTextBrowser()
        self.spans.setOpenLinks(False)
        self.mistakes_label = QLabel("No mistakes to show yet.")
        self.mistakes_label.setWordWrap(True)
        self.spans.hide()
        self.answers = AnswerMistakesView()
        self.answers.hide()
        self.curves = self._add_page("Curves", curves)
        self.scores = self._add_page("Test scores", self.summary, self.answer_table, (tables, 1))
        self.scores.layout().addStretch()  # the scores at the top when there are no tables to fill the tab
        self.mistakes_page = self._add_page(
            "Mistakes", self.mistakes_label, (self.mistakes, 1), (self.spans, 1), (self.answers, 1)
        )
        self.set_subject("")
        self._test: TestRecord | None = None

    def _add_page(self, title: str, *parts) -> QWidget:
        """A tab of `parts` (widgets, or (widget, stretch)) under a caption naming the run it shows."""
        page = QWidget()
        layout = QVBoxLayout(page)
        caption = ElidedLabel()
        bold = caption.font()
        bold.setBold(True)
        caption.setFont(bold)
        self.captions.append(caption)
        layout.addWidget(caption)
        for part in parts:
            widget, stretch = part if isinstance(part, tuple) else (part, 0)
            layout.addWidget(widget, stretch)
        self.addTab(page, title)
        return page

    def set_subject(self, subject: str) -> None:
        """Head the curves, the scores and the mistakes with the run they show ("" while they show none)."""
        for caption in self.captions:
            caption.setText(subject)
            caption.setVisible(bool(subject))
        for page in (self.curves, self.scores, self.mistakes_page):
            self.setTabToolTip(self.indexOf(page), subject)

    def subject(self) -> str:
        return self.captions[0].text()

    def clear(self) -> None:
        self._test = None
        self.summary.setText(NO_RESULTS)
        for table in (self.confusion, self.per_class, self.mistakes):
            table.setRowCount(0)
        self.confusion.setColumnCount(0)
        self.answer_table.setRowCount(0)
        self.answer_table.hide()
        self.spans.clear()
        self.answers.show_mistakes([])
        self.mistakes_label.setText("No mistakes to show yet.")

    # --- scores -------------------------------------------------------------------------------------
    def show_test(self, test: TestRecord, tagging: bool) -> None:
        self._test = test
        self.tables.setVisible(test.f1 is None)
        if test.f1 is not None:  # question answering: no labels to tabulate, its scores instead
            self.summary.setText(f"Test, with {test.weights_said}: {answer_scores(test, bold=True)}")
            self._fill_answer_scores(test)
            return
        entity = (
            ""
            if test.entity_f1 is None
            else f" · entities: precision {test.entity_precision:.1%}, recall {test.entity_recall:.1%}, "
            f"<b>F1 {test.entity_f1:.1%}</b>"
        )
        examples = sum(support for *_, support in test.per_class)
        unit = "words" if tagging else "examples"
        self.summary.setText(
            f"Test ({examples:,} {unit}), with {test.weights_said}: "
            f"accuracy <b>{test.accuracy:.1%}</b> · macro-F1 <b>{test.macro_f1:.1%}</b>{entity}"
            + (
                f" · <b>{test.seen_in_training:,} of the test {unit} are training texts</b>: not scored on unseen texts"
                if test.seen_in_training
                else ""
            )
        )
        self._fill_confusion()
        self.per_class.setRowCount(len(test.per_class))
        for row, values in enumerate(per_class_rows(test)):  # a label the test data lacks: "—", not 0.0%
            for column, value in enumerate(values):
                self.per_class.setItem(row, column, cell(value, column > 0))

    def _fill_answer_scores(self, test: TestRecord) -> None:
        """Exact match and F1 over every test question, and (SQuAD v2.0) those with an answer and those without
        (where F1 is exact match: the answer is none or not)."""
        rows = [("all", test.exact_match, test.f1)]
        if _measured(test.has_answer_f1):  # none where no test question has an answer
            rows.append(("with an answer", test.has_answer_exact_match, test.has_answer_f1))
        if _measured(test.no_answer_exact_match):
            rows.append(("without one", test.no_answer_exact_match, test.no_answer_exact_match))
        table = self.answer_table
        table.setRowCount(len(rows))
        for row, (name, exact, f1) in enumerate(rows):
            for column, value in enumerate((name, f"{exact:.1%}", f"{f1:.1%}")):
                table.setItem(row, column, cell(value, column > 0))
        table.resizeRowsToContents()
        rows_height = sum(table.rowHeight(row) for row in range(len(rows)))
        table.setFixedHeight(rows_height + table.horizontalHeader().height() + 2 * table.frameWidth())
        columns_width = sum(table.columnWidth(column) for column in range(table.columnCount()))
        table.setFixedWidth(columns_width + 2 * table.frameWidth())
        table.show()

    def _fill_confusion(self) -> None:
        """Each cell tinted by its count against the largest one, its text readable on the tint."""
        test = self._test
        if not test.confusion:
            self._fill_top_confusions()
            return
        labels, counts = test.labels, test.confusion
        self.confusion.setToolTip(MATRIX_TIP)
        self.confusion.setRowCount(len(labels))
        self.confusion.setColumnCount(len(labels))
        self.confusion.setHorizontalHeaderLabels([f"→ {label}" for label in labels])
        self.confusion.setVerticalHeaderLabels(list(labels))
        largest = max((max(row) for row in counts), default=0) or 1
        palette = self.palette()
        base, accent = palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Highlight)
        for r, row in enumerate(counts):
            for c, count in enumerate(row):
                item = cell(f"{count:,}", True)
                tint = blended(accent, count / largest, base)
                item.setBackground(tint)
                item.setForeground(readable_on(tint))
                item.setToolTip(f"true {labels[r]}, predicted {labels[c]}: {count:,}")
                self.confusion.setItem(r, c, item)

    def _fill_top_confusions(self) -> None:
        """Too many labels for a matrix: the most frequent mistakes, a row each."""
        found = self._test.confusions
        self.confusion.setToolTip(
            f"{len(self._test.labels):,} labels are too many for a matrix: the {len(found):,} most frequent mistakes."
        )
        self.confusion.setRowCount(len(found))
        self.confusion.setColumnCount(3)
        self.confusion.setHorizontalHeaderLabels(["true", "predicted", "count"])
        self.confusion.setVerticalHeaderLabels([""] * len(found))
        for row, (true, predicted, count) in enumerate(found):
            for column, value in enumerate((true, predicted, f"{count:,}")):
                self.confusion.setItem(row, column, cell(value, column == 2))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._test is not None:
            self._fill_confusion()  # the tints follow the scheme

    # --- mistakes -----------------------------------------------------------------------------------
    def show_mistakes(self, mistakes: list[Mistake], tagging: bool) -> None:
        answering = self._test is not None and self._test.f1 is not None
        self.answers.setVisible(answering)
        if answering:
            self.mistakes.hide()
            self.spans.hide()
            self.mistakes_label.setText(
                f"{len(mistakes):,} test questions answered wrongly (not exactly a gold answer)."
                if mistakes
                else "The model answers every test question exactly."
            )
            self.answers.show_mistakes(mistakes)
            return
        said = "sentences with a mistagged word" if tagging else "test examples predicted wrongly"
        self.mistakes_label.setText(
            f"{len(mistakes):,} {said}." if mistakes else "The model gets every test example right."
        )
        self.mistakes.setVisible(not tagging)
        self.spans.setVisible(tagging)
        if tagging:
            self.spans.setHtml(self._chips_html(mistakes))
            return
        self.mistakes.setRowCount(len(mistakes))
        for row, mistake in enumerate(mistakes):
            text = " / ".join(mistake.inputs)
            for column, value in enumerate([mistake.row, text, *mistake.true, *mistake.predicted]):
                item = cell(value, column == 0)
                item.setToolTip(str(value))
                self.mistakes.setItem(row, column, item)

    def _chips_html(self, mistakes: list[Mistake]) -> str:
        """Each sentence twice, true entities then predicted ones, each entity a chip coloured by its type."""
        kinds = sorted({span[0] for m in mistakes for tags in (m.true, m.predicted) for span in entities(list(tags))})
        colours = {kind: CHIP_COLOURS[i % len(CHIP_COLOURS)] for i, kind in enumerate(kinds)}
        muted = self.palette().color(QPalette.ColorRole.PlaceholderText).name()
        parts = []
        for mistake in mistakes:
            lines = [f"<span style='color:{muted}'>row {mistake.row}</span>"]
            for name, tags in (("true", mistake.true), ("predicted", mistake.predicted)):
                lines.append(
                    f"<span style='color:{muted}'>{name}:</span> {self._sentence(mistake.inputs, tags, colours)}"
                )
            parts.append(f"<p style='margin-bottom:6px'>{'<br>'.join(lines)}</p>")
        return "".join(parts)

    @staticmethod
    def _sentence(words: tuple[str, ...], tags: tuple[str, ...], colours: dict[str, str]) -> str:
        spans = {first: (kind, last) for kind, first, last in entities(list(tags))}
        out, position = [], 0
        while position < len(words):
            if position in spans:
                kind, last = spans[position]
                colour = QColor(colours[kind])
                text = html.escape(" ".join(words[position : last + 1]))
                out.append(
                    f"<span style='background:{colour.name()};color:{readable_on(colour).name()}'>"
                    f"&nbsp;{text}&nbsp;<small><b>{html.escape(kind)}</b></small>&nbsp;</span>"
                )
                position = last + 1
            else:
                out.append(html.escape(words[position]))
                position += 1
        return " ".join(out)


def tags_words(path: Path | None) -> bool:
    """Whether the run in `path` tags words (with entity tags or not) rather than labelling texts."""
    if path is None:
        return False
    try:
        task = RunDir(path).task
    except CheckpointError:  # a task.json damaged since the run was shown: its mistakes are said as a text's
        return False
    return task is not None and task.kind == "tokens"
