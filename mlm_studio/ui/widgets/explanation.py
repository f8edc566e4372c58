"""Why a model predicted a word, in the window: the sentence shaded by each word's attribution (a method to
choose) and the attention of every layer and head, computed off the GUI thread."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QStyle,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.evaluation.explain.attention import AttentionMaps, attention_maps
from mlm_studio.core.evaluation.explain.attributions import Attribution, Explainer
from mlm_studio.core.evaluation.explain.choices import DEFAULT_METHOD, METHODS
from mlm_studio.core.evaluation.explain.forming import attributions_over_checkpoints
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.progress import Progress
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.attention_view import AttentionView
from mlm_studio.ui.widgets.attribution_view import AttributionView, FormingView


@dataclass(frozen=True)
class Question:
    """A prediction to explain: of the model at a path (read with its exact weights) or of the explainer a
    function makes (called off the GUI thread), the candidate's id at the `mask`-th [MASK] of a text, or at piece
    `position` of a block of pieces; `where` says where, for the caption (by default, at its [MASK])."""

    model: str | Callable[[], Explainer]
    mask: int
    candidate_id: int
    text: str = ""
    pieces: tuple[int, ...] = ()
    position: int = -1
    where: str = ""  # where the prediction was made, for the caption (by default, at its [MASK])
    run: str = ""  # the run whose checkpoints "Every checkpoint" reads, when `model` is no path

    @property
    def checkpoints_of(self) -> str:
        """The run (or checkpoint) whose every checkpoint can explain this prediction ("" when none)."""
        if isinstance(self.model, str) and self.text:
            return self.model
        return self.run if self.pieces else ""

    def explain(self, method: str, progress: Progress | None = None) -> Explanation:
        return explain(self, method, progress)


class Asked(Protocol):
    """Anything the view can explain (a `Question`, a fine-tuned run's prediction): computed off the GUI thread."""

    def explain(self, method: str, progress: Progress | None = None) -> Explanation: ...


@dataclass(frozen=True)
class Explanation:
    question: Asked
    attribution: Attribution
    attention: AttentionMaps


def explain(question: Question, method: str, progress: Progress | None = None) -> Explanation:
    """The attribution and the attention maps of `question`'s prediction."""
    model = question.model
    explainer = Explainer.of(FillMask.from_path(model)) if isinstance(model, str) else model()
    if progress is not None:
        explainer.check = progress.check  # a newer question stops this one between integrated gradients' batches
    if question.pieces:
        attribution = explainer.explain_pieces(
            question.pieces, question.position, question.candidate_id, method, mask=question.mask
        )
        words = explainer.read_pieces(question.pieces)
    else:
        attribution = explainer.explain(question.text, question.candidate_id, question.mask, method)
        words = explainer.read(question.text)
    if progress is not None:
        progress.check()
    if question.where:
        attribution = replace(attribution, target=question.where)
    return Explanation(question, attribution, attention_maps(explainer.model, explainer.tokenizer, words))


EVERY_CHECKPOINT = "This prediction's attribution at each checkpoint of its run, on one scale"


def every_checkpoint_refusal(question: Asked | None) -> str:
    """Why *Every checkpoint* cannot explain `question` over a run's checkpoints ("" when it can)."""
    if question is None:
        return "Click “why?” beside a prediction first: Every checkpoint explains it at each checkpoint of its run"
    if not isinstance(question, Question):
        return (
            "Every checkpoint reads a pre-training run's checkpoints, where a masked-LM predicts words; a fine-tuned "
            "model's answer is explained at the weights that gave it"
        )
    if not question.checkpoints_of:
        return "This model is not one of MLM Studio's runs here: it has no checkpoints to explain it at"
    return ""


def why_button(clicked) -> QPushButton:
    """The small button beside a prediction that asks why it was made: a button that looks like one, with the
    question mark's icon, as small as its text."""
    button = QPushButton(QApplication.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxQuestion), "why?")
    button.setIconSize(QSize(14, 14))
    button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    button.setToolTip("Which words carried this prediction, and what each layer attended to")
    button.clicked.connect(lambda _=False: clicked())
    return button


class ExplanationView(QWidget):
    """Asked a `Question`, computes its explanation in the background and shows it; a newer question replaces
    the one running."""

    explained = Signal(object)  # Explanation
    formed = Signal(object)  # list[Formed]: the attribution at every checkpoint
    failed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.question: Asked | None = None
        self.explanation: Explanation | None = None
        self.method_combo = QComboBox()
        for name, (title, unit) in METHODS.items():
            self.method_combo.addItem(title, name)
            tooltip = f"Scores in {unit} units"
            self.method_combo.setItemData(self.method_combo.count() - 1, tooltip, Qt.ItemDataRole.ToolTipRole)
        self.method_combo.setCurrentIndex(self.method_combo.findData(DEFAULT_METHOD))
        self.method_combo.currentIndexChanged.connect(self._again)
        self.status = QLabel("Click “why?” beside a candidate to see which words carried it.")
        self.status.setWordWrap(True)
        self.attribution_view = AttributionView()
        self.attention_view = AttentionView()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.attribution_view, "Attribution")
        self.tabs.addTab(self.attention_view, "Attention")
        self.forming_view = FormingView()
        self.tabs.addTab(self.forming_view, "As it formed")
        self.every_button = QPushButton("Every checkpoint")
        self._enable_every_checkpoint()
        self.every_button.clicked.connect(self.over_checkpoints)
        top = QHBoxLayout()
        top.addWidget(QLabel("Method"))
        top.addWidget(self.method_combo)
        top.addWidget(self.every_button)
        top.addWidget(self.status, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)
        self.runner = TaskRunner(self)
        self.runner.succeeded.connect(self._on_explained)
        self.runner.failed.connect(self._on_failed)
        self.forming_runner = TaskRunner(self)
        self.forming_runner.succeeded.connect(self._on_formed)
        self.forming_runner.failed.connect(self.status.setText)

    @property
    def method(self) -> str:
        return self.method_combo.currentData()

    def ask(self, question: Asked) -> None:
        self.question = question
        self._enable_every_checkpoint()
        self.forming_runner.cancel()
        self._clear_views()  # the explanation before answered another question
        self.status.setText("Explaining…")
        method = self.method
        self.runner.start(lambda progress: question.explain(method, progress))

    def put_away(self, status: str) -> None:
        """Nothing explained any more (what was asked has gone): `status` says what to do next."""
        self.runner.cancel()
        self.forming_runner.cancel()
        self.question = None
        self._enable_every_checkpoint()
        self._clear_views()
        self.status.setText(status)

    def _enable_every_checkpoint(self) -> None:
        """*Every checkpoint* enabled when it can explain the question, else its tooltip says why not."""
        refusal = every_checkpoint_refusal(self.question)
        self.every_button.setEnabled(not refusal)
        self.every_button.setToolTip(refusal or EVERY_CHECKPOINT)

    def _clear_views(self) -> None:
        self.explanation = None
        self.attribution_view.clear()
        self.attention_view.clear()
        self.forming_view.clear()

    def over_checkpoints(self) -> None:
        """The question's attribution at every checkpoint of its model's run (a text's mask, or a held-out block's
        piece)."""
        question, method = self.question, self.method
        if not isinstance(question, Question) or not question.checkpoints_of:
            return
        self.status.setText("Explaining at every checkpoint…")
        source, text, candidate, mask = question.checkpoints_of, question.text, question.candidate_id, question.mask
        pieces, position = question.pieces, question.position
        self.forming_runner.start(
            lambda progress: (
                question,
                attributions_over_checkpoints(
                    source, text, candidate, mask, method, progress, pieces=pieces, position=position
                ),
            )
        )

    def _on_formed(self, answered: tuple[Question, list]) -> None:
        question, formed = answered
        if question is not self.question:  # put away, or another question asked, before it stopped
            return
        self.status.setText("")
        self.forming_view.show_formed(formed)
        self.tabs.setCurrentWidget(self.forming_view)
        self.formed.emit(formed)

    def _again(self) -> None:
        if self.question is not None:
            self.ask(self.question)

    def _on_explained(self, explanation: Explanation) -> None:
        if explanation.question is not self.question:  # put away before it stopped
            return
        self.explanation = explanation
        self.status.setText("")
        self.attribution_view.show_attribution(explanation.attribution)
        self.attention_view.show_maps(explanation.attention)
        self.explained.emit(explanation)

    def _on_failed(self, message: str) -> None:
        self.status.setText(message)
        self._clear_views()
        self.failed.emit(message)
