"""The Fine-tune panel's *Try it* tab with the question "why?": beside the run's answer to what was typed, a
button that explains it — the label of a text or of a pair, a word's tag (the word chosen beside it), or the
answer found in the context — each word (of both texts, apart, for a pair or a question) shaded by its
attribution, and the attention of every layer and head; computed on the task runner, never the GUI thread."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QWidget

from mlm_studio.core.evaluation.explain.answer_attributions import AnswerExplainer
from mlm_studio.core.evaluation.explain.attention import task_attention_maps
from mlm_studio.core.evaluation.explain.attributions import ExplainError
from mlm_studio.core.evaluation.explain.task_attributions import TaskExplainer
from mlm_studio.core.evaluation.explain.words import Words
from mlm_studio.core.finetune.pipeline_shapes import Tagged
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.progress import Progress
from mlm_studio.ui.panels.finetune.try_it import Tried, TryItView
from mlm_studio.ui.widgets.explanation import Explanation, ExplanationView, why_button

HINT = "Press “why?” to see which words carried the answer above, and what each layer attended to."


@dataclass(frozen=True)
class TaskPrediction:
    """A fine-tuned run's prediction to explain: its model (the one that answered), what was typed, and for a
    tagger the character where the word whose tag is explained begins."""

    model: FineTuned
    text: str
    pair: str = ""
    question: str = ""
    word_start: int = 0

    def explain(self, method: str, progress: Progress | None = None) -> Explanation:
        """The attribution and the attention maps of the prediction (the label, the tag or the answer)."""
        model = self.model
        if model.kind == "qa":
            explainer = AnswerExplainer(model)
            read = explainer.answer_window(self.question, self.text)
            attribution, words = explainer.explain_window(read, method), read.words
        else:
            explainer = TaskExplainer(model)
            if self.pair.strip():
                attribution = explainer.explain_pair(self.text, self.pair, method=method)
                words = explainer.read_pair(self.text, self.pair)
            else:
                words = explainer.read(self.text)
                mask = word_at(words, self.word_start) if model.kind == "tokens" else 0
                attribution = explainer.explain(self.text, mask=mask, method=method)
        if progress is not None:
            progress.check()
        return Explanation(self, attribution, task_attention_maps(model.model, model.tokenizer, words))


def word_at(words: Words, start: int) -> int:
    """The number of the word of `words` that holds the character `start`."""
    for number, (first, last) in enumerate(words.spans):
        if first <= start < last:
            return number
    raise ExplainError(f"no word of the text begins at character {start}; type the text again")


class ExplainedTryIt(TryItView):
    """The Try it tab, with "why?" beside each answer and the explanation below."""

    why: QPushButton | None = None  # made after the tab, which answers (and clears) once while it is made

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.word_combo = QComboBox()
        self.word_combo.setToolTip("The word whose tag is explained")
        self.word_combo.currentIndexChanged.connect(self._on_word_chosen)
        self.word_label = QLabel("the tag of")
        self.why = why_button(self.explain_answer)
        row = QHBoxLayout()
        for part in (self.why, self.word_label, self.word_combo):
            row.addWidget(part)
        row.addStretch(1)
        self.explanation = ExplanationView()
        self.explanation.status.setText(HINT)
        self.explanation.explained.connect(self._on_explained)
        self.explained_for: Tried | None = None  # the answer explained (or being explained), None for none
        self.explained_word: int | None = None  # where the word whose tag is explained begins
        self.layout().addLayout(row)
        self.layout().addWidget(self.explanation, 2)  # the words and maps need more room than the answer
        self._show_nothing()
        self._forget_explanation()

    def explain_answer(self) -> None:
        """Explain the answer shown (of the text, the pair and the question it answered) in the background."""
        tried = self._kept
        if tried is None:
            return
        text, pair, question = tried.asked
        start = self.word_combo.currentData() if tried.model.kind == "tokens" else 0
        self.explained_for, self.explained_word = tried, start
        self.explanation.show()
        self.explanation.ask(TaskPrediction(tried.model, text, pair, question, start or 0))

    def set_run(self, path) -> None:
        """As the tab's, an explanation of another run's answer put away."""
        if self.why is not None and path != self.path:
            self._forget_explanation()
        super().set_run(path)

    def _forget_explanation(self) -> None:
        """Hide the explanation: what it explained is no longer shown (another run, another text, none)."""
        self.explained_for = self.explained_word = None
        self.explanation.put_away(HINT)
        self.explanation.hide()

    def _on_word_chosen(self) -> None:
        """Another word chosen: the explanation of the one before is put away (a method chosen next would
        explain a word the chooser no longer shows)."""
        if self.explained_for is not None and self.word_combo.currentData() != self.explained_word:
            self._forget_explanation()

    def _on_explained(self, _explanation) -> None:
        if self.explained_for is None:  # finished after what it explained was put away
            self.explanation.hide()

    def _on_tried(self, tried: Tried) -> None:
        super()._on_tried(tried)
        if self._kept is not tried or self.why is None:
            return  # an answer to what is no longer typed
        explained = self.explained_for
        if explained is not None and (explained.asked, explained.key) != (tried.asked, tried.key):
            self._forget_explanation()  # it explained an answer to another text, or of other weights
        self.why.show()
        tags = isinstance(tried.answer, Tagged)
        self.word_combo.blockSignals(True)  # the same answer again keeps the word explained chosen
        self.word_combo.clear()
        if tags:
            for number, word in enumerate(tried.answer.words, start=1):
                self.word_combo.addItem(f"{number}: {word['word']} ({word['entity']})", word["start"])
            self.word_combo.setCurrentIndex(max(self.word_combo.findData(self.explained_word), 0))
        self.word_combo.blockSignals(False)
        for part in (self.word_label, self.word_combo):
            part.setVisible(tags and self.word_combo.count() > 0)

    def _say_instead(self, message: str) -> None:
        super()._say_instead(message)
        if self.why is not None:
            self._forget_explanation()

    def _show_nothing(self) -> None:
        super()._show_nothing()
        if self.why is not None:
            for part in (self.why, self.word_label, self.word_combo):
                part.hide()
