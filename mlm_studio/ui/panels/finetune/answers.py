"""A question answerer's mistakes in the Fine-tune panel: each wrong test question with the stretch of its context
around the answers, the gold answers and the model's answer marked in two colours (a third where they overlap),
readable in either scheme and redrawn when it changes."""

from __future__ import annotations

import html

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QTextBrowser, QWidget

from mlm_studio.core.finetune.mistakes import AnswerMistake
from mlm_studio.ui.theme import PALETTE_CHANGES, readable_on, span_colour

AROUND = 160  # characters of context shown before and after the answers
MARKS = {1: "gold", 2: "predicted", 3: "both"}  # a character's mark: in a gold answer (1), the model's (2), both
NAMES = {"gold": "the gold answer", "predicted": "the model's answer", "both": "both"}


class AnswerMistakesView(QTextBrowser):
    """The wrong answers, one paragraph each: row and id, question, the context with its spans marked, and the
    answers in words."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.mistakes: list[AnswerMistake] = []

    def show_mistakes(self, mistakes: list[AnswerMistake]) -> None:
        self.mistakes = list(mistakes)
        self._render()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES and self.mistakes:
            self._render()  # the marks follow the scheme

    def _render(self) -> None:
        legend = " ".join(self._marked(NAMES[name], name) for name in MARKS.values())
        self.setHtml(f"<p>{legend}</p>" + "".join(self._paragraph(mistake) for mistake in self.mistakes))

    def _paragraph(self, mistake: AnswerMistake) -> str:
        muted = self.palette().color(QPalette.ColorRole.PlaceholderText).name()
        gold = " or ".join(f"“{html.escape(text)}”" for text, _ in mistake.gold) or "no answer"
        predicted = f"“{html.escape(mistake.predicted[0])}”" if mistake.predicted[0] else "no answer"
        lines = [
            f"<span style='color:{muted}'>row {mistake.row} (id {html.escape(mistake.id)})</span>",
            f"<b>{html.escape(mistake.question)}</b>",
            self.context_html(mistake),
            f"<span style='color:{muted}'>gold:</span> {gold} · <span style='color:{muted}'>predicted:</span> "
            f"{predicted}",
        ]
        return f"<p style='margin-bottom:8px'>{'<br>'.join(lines)}</p>"

    def context_html(self, mistake: AnswerMistake) -> str:
        """The context around the answers, each run of characters marked as in a gold answer, the model's or both
        ("…" where it is cut)."""
        spans = [(start, start + len(text), 1) for text, start in mistake.gold]
        text, start, end = mistake.predicted
        if text:
            spans.append((start, end, 2))
        context = mistake.context
        first = max(0, min((s for s, _, _ in spans), default=0) - AROUND)
        last = min(len(context), max((e for _, e, _ in spans), default=0) + AROUND)
        marks = [0] * (last - first)
        for begin, stop, mark in spans:
            for i in range(max(begin, first), min(stop, last)):
                marks[i - first] |= mark
        parts, position = ["…" if first else ""], 0
        while position < len(marks):
            run = position
            while run < len(marks) and marks[run] == marks[position]:
                run += 1
            piece = context[first + position : first + run]
            parts.append(self._marked(piece, MARKS[marks[position]]) if marks[position] else html.escape(piece))
            position = run
        parts.append("…" if last < len(context) else "")
        return "".join(parts)

    @staticmethod
    def _marked(text: str, name: str) -> str:
        colour = span_colour(name)
        return f"<span style='background:{colour.name()};color:{readable_on(colour).name()}'>{html.escape(text)}</span>"
