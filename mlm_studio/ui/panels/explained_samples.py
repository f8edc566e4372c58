"""The Evaluation panel's masked samples with the question "why?": clicking any answer (right or wrong) explains
the model's first candidate there, the sentence shaded by attribution and the attention of every layer beside."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter

from mlm_studio.core.data.masking import MaskKind
from mlm_studio.core.evaluation.diagnosis import Answer
from mlm_studio.core.evaluation.explain.attributions import Explainer
from mlm_studio.core.evaluation.subject import Subject
from mlm_studio.ui.widgets.diagnosis_views import SamplesView
from mlm_studio.ui.widgets.explanation import ExplanationView, Question

HINT = "Click a coloured token of a block to see which words carried the model's answer there."
MASKING_DID = {
    MaskKind.MASK: "masked",
    MaskKind.RANDOM: "randomly replaced by {shown}",
    MaskKind.KEPT: "kept as it was",
}


def where_answered(answer: Answer, shown: str) -> str:
    """Where in its block an answer was given and what masking did there (`shown`: the piece the model saw)."""
    did = MASKING_DID[MaskKind(answer.kind)].format(shown=shown)
    return f"at position {answer.position}, {did}"


class ExplainedSamples(QSplitter):
    """The samples above, the explanation of the answer last clicked below."""

    def __init__(self, samples: SamplesView, subject: Callable[[], Subject | None]) -> None:
        super().__init__(Qt.Orientation.Vertical)
        self.setObjectName("evaluation-samples-explanation")  # remembered between starts, as every splitter
        self.samples = samples
        self.subject = subject
        self.explanation = ExplanationView()
        self.explanation.status.setText(HINT)
        self.addWidget(samples)
        self.addWidget(self.explanation)
        self.setStretchFactor(0, 3)
        self.setStretchFactor(1, 2)
        samples.answer_clicked.connect(self.explain)

    def explain(self, block: int, position: int) -> None:
        """Why the model shown answered as it did at `position` of block number `block` (a token without an
        answer asks nothing)."""
        subject = self.subject()
        if subject is None or block >= len(self.samples.samples):
            return
        sample = self.samples.samples[block]
        numbers = {answer.position: number for number, answer in enumerate(sample.answers)}
        if position not in numbers:
            return
        answer = sample.answers[numbers[position]]
        source = subject.title + (", its generator" if subject.model is not subject.trained else "")
        self.explanation.ask(
            Question(lambda: Explainer(subject.model, subject.tokenizer, source), numbers[position], answer.top[0],
                     pieces=sample.shown, position=position,
                     where=where_answered(answer, escape(subject.tokenizer.id_to_token(sample.shown[position]))))
        )  # fmt: skip
