"""The Evaluation panel's masked samples with the question "why?": clicking any answer (right or wrong) explains
the model's first candidate there, the sentence shaded by attribution and the attention of every layer beside,
and (Every checkpoint) that answer's attribution at each checkpoint of the run, as it formed."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter

from mlm_studio.core.data.masking import MaskKind
from mlm_studio.core.evaluation.diagnosis import Answer
from mlm_studio.core.evaluation.explain.attributions import Explainer
from mlm_studio.core.evaluation.subject import Subject
from mlm_studio.ui.panels.evaluation.results import Choice
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

    def __init__(
        self,
        samples: SamplesView,
        subject: Callable[[], Subject | None],
        shown: Callable[[], Choice | None] = lambda: None,
    ) -> None:
        """`shown`: the model chosen when the samples were scored (a run's checkpoints explain an answer as it
        formed)."""
        super().__init__(Qt.Orientation.Vertical)
        self.setObjectName("evaluation-samples-explanation")  # remembered between starts, as every splitter
        self.samples = samples
        self.subject = subject
        self.shown = shown
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
                     pieces=sample.shown, position=position, run=self._run(),
                     where=where_answered(answer, subject.tokenizer.id_to_token(sample.shown[position])))
        )  # fmt: skip

    def put_away(self) -> None:
        """The samples have gone: so has the explanation of one of their answers."""
        self.explanation.put_away(HINT)

    def _run(self) -> str:
        """The folder of the run the samples were scored with ("" for a Hugging Face model: no checkpoints)."""
        shown = self.shown()
        return "" if shown is None or shown.path is None or shown.imported else str(shown.path)
