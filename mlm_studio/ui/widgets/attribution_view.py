"""A sentence shaded by each word's attribution to one prediction, on a diverging blue–orange scale that
colour-blind readers tell apart (orange: the word supported the prediction, blue: it argued against it), the
numbers on hover. Full colour stands for what the words explain (the logit's change, the candidate's probability;
`Attribution.scale`), never for the sentence's own largest score: a prediction no word carried is drawn pale, and
the caption says so."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from mlm_studio.core.evaluation.explain.attributions import COMPLETE_WITHIN, Attribution, amount
from mlm_studio.core.evaluation.explain.choices import METHODS
from mlm_studio.core.evaluation.explain.forming import Formed
from mlm_studio.core.evaluation.explain.two_texts import TwoTextAttribution
from mlm_studio.ui.theme import PALETTE_CHANGES, blended
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView

SUPPORTS = "#e66101"  # orange
OPPOSES = "#0072b2"  # Okabe and Ito's blue: told from the orange with any of the common colour-vision deficiencies
LEGEND = (
    f"<span style='color:{SUPPORTS}'>■</span> for the prediction · <span style='color:{OPPOSES}'>■</span> against "
    "it · the deeper, the more of the prediction the word moved (full colour: the scale the caption gives). Hover "
    "a word for its score."
)

TEXT_NAMES = {"text": "Text", "text2": "Second text", "question": "Question", "context": "Context"}


def diverging(share: float, background: QColor) -> QColor:
    """A share in [-1, 1] as a tint over `background`: orange for positive, blue for negative, none at 0."""
    colour = QColor(SUPPORTS if share >= 0 else OPPOSES)
    return blended(colour, min(abs(share), 1.0) * 0.85, background)


def attribution_cells(attribution: Attribution, background: QColor, scale: float | None = None) -> list[TokenCell]:
    """Each word as a chip shaded by its score's share of the scale (the attribution's own, or `scale` for several
    attributions drawn on one), the raw score on hover."""
    scale = scale or attribution.scale()
    cells, full = [], amount(scale, attribution.unit)
    for word, score, share in zip(attribution.words, attribution.scores, attribution.shares(scale)):
        tooltip = f"{word}: {score:+.3g} {attribution.unit} ({share:+.0%} of full colour, {full})"
        cells.append(TokenCell(word, diverging(share, background), tooltip))
    return cells


def scale_said(attribution: Attribution, scale: float | None = None) -> str:
    """Full colour's size and, when no word carried the prediction, that in bold."""
    said = f"full colour: {amount(scale or attribution.scale(), attribution.unit)}"
    uncarried = attribution.uncarried(scale)
    return said + (f". <b>{uncarried}</b>: nothing in the text carried it" if uncarried else "")


def caption(attribution: Attribution) -> str:
    """What is shown: which word, label or answer, where, by which method, in which unit."""
    method = METHODS[attribution.method][0]
    where = html.escape(attribution.target or f"at [MASK] {attribution.mask + 1}", quote=False)
    what = f"<b>{html.escape(attribution.candidate, quote=False)}</b> ({attribution.probability:.1%}) {where}"
    if isinstance(attribution, TwoTextAttribution) and attribution.answer is not None:
        what = f"{where} (score {attribution.probability:.1%}), read in {html.escape(attribution.window, quote=False)}"
    line = f"Why {what}: {method}, in {attribution.unit} units"
    if attribution.gap is not None:
        line += (
            f"; {attribution.steps} steps from a {attribution.baseline} baseline, the words sum to "
            f"{attribution.total:+.3g} of the logit's {attribution.gap:+.3g} change"
        )
        if attribution.completeness_error() > COMPLETE_WITHIN:
            line += (
                f", <b>missing it by {attribution.completeness_error():.1%}</b> (more steps, as the CLI's --steps "
                "gives, would close it)"
            )
    line += f"; {scale_said(attribution)}"
    return line + (f" · {html.escape(attribution.source, quote=False)}" if attribution.source else "")


class AttributionView(QWidget):
    """The words of one explained prediction, shaded (a pair's or a question's two texts apart, each under its
    name, on one scale); recoloured when the colour scheme changes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.attribution: Attribution | None = None
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.words = TokenView()
        self.first_name, self.second_name = QLabel(), QLabel()
        self.second_words = TokenView()  # the second text's words, when there are two texts
        self.legend = QLabel(LEGEND)
        self.legend.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.first_name)
        layout.addWidget(self.words)
        layout.addWidget(self.second_name)
        layout.addWidget(self.second_words)
        layout.addWidget(self.legend)
        self._show_two(False)
        layout.addStretch(1)

    def show_attribution(self, attribution: Attribution) -> None:
        self.attribution = attribution
        self.caption.setText(caption(attribution))
        self._paint()

    def clear(self) -> None:
        self.attribution = None
        self.caption.setText("")
        self.words.set_cells([])
        self.second_words.set_cells([])
        self._show_two(False)

    def _show_two(self, two: bool) -> None:
        for part in (self.first_name, self.second_name, self.second_words):
            part.setVisible(two)

    def _paint(self) -> None:
        if self.attribution is None:
            return
        background = self.palette().color(QPalette.ColorRole.Base)
        cells = attribution_cells(self.attribution, background)
        two = isinstance(self.attribution, TwoTextAttribution)
        self._show_two(two)
        if not two:
            self.words.set_cells(cells)
            return
        parts = self.attribution.parts
        self.words.set_cells([cell for cell, part in zip(cells, parts) if part == 0])
        self.second_words.set_cells([cell for cell, part in zip(cells, parts) if part == 1])
        first, second = (TEXT_NAMES.get(name, name) for name in self.attribution.names)
        self.first_name.setText(f"<b>{html.escape(first, quote=False)}</b>")
        self.second_name.setText(f"<b>{html.escape(second, quote=False)}</b>")

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            self._paint()


def forming_caption(explained: list[Attribution], scale: float) -> str:
    """What every row shows: which candidate where, by which method, and the one scale they are drawn on (the
    largest checkpoint's scale, so that a step that had learned less is paler)."""
    if not explained:
        return "No checkpoint of the run could be read, so no attribution is drawn."
    first = explained[0]
    where = html.escape(first.target or f"at [MASK] {first.mask + 1}", quote=False)
    line = (
        f"Why <b>{html.escape(first.candidate, quote=False)}</b> {where}, at each checkpoint: "
        f"{METHODS[first.method][0]}, in {first.unit} units; every row on one scale, full colour: "
        f"{amount(scale, first.unit)}"
    )
    if not any(attribution.carried(scale) for attribution in explained):
        largest = amount(max(attribution.largest() for attribution in explained), first.unit)
        line += f". <b>At no checkpoint did a word move this prediction by more than {largest}</b>"
    return line


class FormingView(QScrollArea):
    """One prediction's attribution at every checkpoint, a row per step on one scale: the evidence forming."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.formed: list[Formed] = []
        self.rows: list[TokenView] = []
        self.clear()

    def clear(self) -> None:
        self.formed, self.rows = [], []
        self.caption = QLabel("Press Every checkpoint to see this prediction's attribution at each step of its run.")
        self.caption.setWordWrap(True)
        self.setWidget(self.caption)

    def show_formed(self, formed: list[Formed]) -> None:
        self.formed = formed
        self._paint()

    def _paint(self) -> None:
        if not self.formed:
            return
        background = self.palette().color(QPalette.ColorRole.Base)
        explained = [formed.attribution for formed in self.formed if formed.attribution is not None]
        scale = max((attribution.scale() for attribution in explained), default=0.0)
        body = QWidget()
        grid = QGridLayout(body)
        grid.setAlignment(Qt.AlignmentFlag.AlignTop)
        grid.setColumnStretch(1, 1)
        self.caption = QLabel(forming_caption(explained, scale))
        self.caption.setWordWrap(True)
        grid.addWidget(self.caption, 0, 0, 1, 2)
        self.rows = []
        for row, formed in enumerate(self.formed, start=1):
            grid.addWidget(QLabel(f"step {formed.step:,}"), row, 0, Qt.AlignmentFlag.AlignTop)
            view = TokenView()
            if formed.attribution is None:
                view.set_cells([TokenCell(formed.problem, None, "", muted=True)])
            else:
                view.set_cells(attribution_cells(formed.attribution, background, scale))
                uncarried = formed.attribution.uncarried(scale)
                view.setToolTip(
                    f"{formed.attribution.candidate}: {formed.attribution.probability:.1%} at this step"
                    + (f"; {uncarried}" if uncarried else "")
                )
            grid.addWidget(view, row, 1)
            self.rows.append(view)
        self.setWidget(body)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            self._paint()
