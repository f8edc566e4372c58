"""Why a fine-tuned question-answering model gave its answer: each word of the question and of the context
attributed, over the window of the context the answer came from.

What is explained is the answer the run gives (its best, as `predict` prints it): with gradient × input and
integrated gradients, the start logit at the answer's first token plus the end logit at its last token (the
span's score before the softmax); with occlusion, the answer's score (its start probability times its end
probability, as the pipeline scores it). "No answer" (a run that learned unanswerable questions) is explained as
the same two logits at the first token ([CLS]), where the model puts it. A context longer than one window is read
in windows: the answer's is the one where its span scores best (for no answer, the one whose "no answer" score
the pipeline kept, its lowest)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from mlm_studio.core.evaluation.explain.attributions import Explainer, ExplainError, check_choices
from mlm_studio.core.evaluation.explain.choices import DEFAULT_METHOD, DEFAULT_STEPS
from mlm_studio.core.evaluation.explain.methods import Outputs
from mlm_studio.core.evaluation.explain.two_texts import TwoTextAttribution, TwoTexts, joined, over_two_texts
from mlm_studio.core.evaluation.explain.words import Words, words_of_encoding
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.qa.data import QAExample
from mlm_studio.core.finetune.qa.features import NO_ANSWER, QAFeatures, pair_layout, qa_features
from mlm_studio.core.finetune.qa.task import question_room
from mlm_studio.core.shown import shown

QA_NAMES = ("question", "context")
WINDOWS_AT_ONCE = 16  # windows of a long context read together to find the answer's


@dataclass(frozen=True)
class AnswerWindow:
    """An answer and the window of the context it came from: the question's and the window's words, the answer's
    first and last token there (the first token twice for no answer), which tokens are the context's, and which
    window it is, in words."""

    answer: dict  # as the pipeline gives it: {"score", "start", "end", "answer"}
    words: TwoTexts
    first: int
    last: int
    context: np.ndarray  # (L,) bool
    window: str


class AnswerExplainer(Explainer):
    """A fine-tuning run's question-answering model, ready to explain its answers."""

    def __init__(self, tuned: FineTuned) -> None:
        if tuned.kind != "qa":
            raise ExplainError(f"{tuned.run.name} does not answer questions; explain its labels or tags")
        super().__init__(tuned.model, tuned.tokenizer, f"{tuned.run.name} / {tuned.weights.name}")
        self.tuned = tuned

    def explain_answer(
        self,
        question: str,
        context: str,
        method: str = DEFAULT_METHOD,
        steps: int = DEFAULT_STEPS,
        baseline: str = "mask",
    ) -> TwoTextAttribution:
        """Attribute the run's best answer to `question` in `context` to the words of both (see the module)."""
        check_choices(method, steps, baseline)
        return self.explain_window(self.answer_window(question, context), method, steps, baseline)

    def answer_window(self, question: str, context: str) -> AnswerWindow:
        """The run's best answer to `question` in `context`, and the window of the context it came from."""
        answer = self.tuned.answer_text(question, context, top_k=1).answers[0]
        example = QAExample("question", question.strip(), context, (), 0)
        features = qa_features(
            self.tokenizer, [example], self.tuned.limit, self.tuned.task.doc_stride, question_room(self.tuned.limit)
        )
        window, first, last = self._window_of(features, answer)
        words = self._window_words(features, window, example.question, context)
        spans = features.spans[window]
        inside = spans[spans[:, 0] >= 0]
        said = f"window {window + 1} of {len(features)}"
        if len(inside):
            said += f" (context characters {int(inside[:, 0].min())}–{int(inside[:, 1].max())})"
        return AnswerWindow(dict(answer), words, first, last, spans[:, 0] >= 0, said)

    def explain_window(
        self,
        read: AnswerWindow,
        method: str = DEFAULT_METHOD,
        steps: int = DEFAULT_STEPS,
        baseline: str = "mask",
    ) -> TwoTextAttribution:
        """Attribute the answer of a window read by `answer_window` to the words of the question and the window."""
        check_choices(method, steps, baseline)
        words, first, last, answer = read.words, read.first, read.last, read.answer
        types = words.type_tensor.to(self.device)
        if method == "occlusion":
            outputs = _span_probability(self.model, types, first, last, read.context)
        else:
            outputs = _span_logits(self.model, types, first, last)
        explained = self._attribute(words, 0, 0, 0, method, steps, baseline, outputs)
        pieces = self.tokenizer.convert_ids([words.ids[first], words.ids[last]])
        if answer["answer"]:
            target = f"the answer {shown(answer['answer'])}"
            scored = (
                f"the start logit at its first token {shown(pieces[0])} plus the end logit at its last "
                f"{shown(pieces[1])}"
            )
        else:
            target, scored = "no answer", f"the start and end logits at the first token {shown(pieces[0])}"
        if method == "occlusion":
            scored = "its score (start probability × end probability)"
        explained = replace(
            explained, candidate=answer["answer"], candidate_id=0, probability=float(answer["score"]),
            target=f"{target}: {scored}",
        )  # fmt: skip
        return over_two_texts(explained, words, QA_NAMES, answer=answer, window=read.window)

    def _window_of(self, features: QAFeatures, answer: dict) -> tuple[int, int, int]:
        """The window the answer came from and its first and last token there (the first token twice for no
        answer)."""
        starts, ends = self._probabilities(features)
        if not answer["answer"]:
            nulls = [start[NO_ANSWER] * end[NO_ANSWER] for start, end in zip(starts, ends)]
            return int(np.argmin(nulls)), NO_ANSWER, NO_ANSWER
        best = None
        for window, spans in enumerate(features.spans):
            inside = np.flatnonzero(
                (spans[:, 0] >= answer["start"]) & (spans[:, 1] <= answer["end"]) & (spans[:, 0] >= 0)
            )
            inside = inside[spans[inside, 1] > spans[inside, 0]]
            if not len(inside) or spans[inside[0], 0] != answer["start"] or spans[inside[-1], 1] != answer["end"]:
                continue  # this window does not hold the whole answer
            first, last = int(inside[0]), int(inside[-1])
            score = starts[window][first] * ends[window][last]
            if best is None or score > best[0]:
                best = (score, window, first, last)
        if best is None:
            raise ExplainError(
                f"the answer {shown(answer['answer'])} is in no window of the context; it cannot be explained"
            )
        return best[1:]

    @torch.no_grad()
    def _probabilities(self, features: QAFeatures) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each window's start and end probabilities over its context tokens and the first token (windows of one
        length read together, some at a time)."""
        starts: list[np.ndarray] = [np.empty(0)] * len(features)
        ends = list(starts)
        by_length: dict[int, list[int]] = {}
        for number, ids in enumerate(features.ids):
            by_length.setdefault(len(ids), []).append(number)
        for numbers in by_length.values():
            for first in range(0, len(numbers), WINDOWS_AT_ONCE):
                rows = numbers[first : first + WINDOWS_AT_ONCE]
                ids, types, context = (
                    torch.from_numpy(np.stack(values)).to(self.device)
                    for values in (
                        [features.ids[row] for row in rows],
                        [features.types[row] for row in rows],
                        [features.spans[row][:, 0] >= 0 for row in rows],
                    )
                )
                context[:, NO_ANSWER] = True
                logits = self.model(ids, None, types).float().masked_fill(~context[..., None], float("-inf"))
                probabilities = logits.softmax(1).cpu().numpy()  # (B, L, 2)
                for row, number in enumerate(rows):
                    starts[number], ends[number] = probabilities[row, :, 0], probabilities[row, :, 1]
        return starts, ends

    def _window_words(self, features: QAFeatures, window: int, question: str, context: str) -> TwoTexts:
        """The words of the question (as far as the window holds it) and of the window's stretch of context."""
        layout = pair_layout(self.tokenizer)
        encoding = self.tokenizer.backend.encode(question, add_special_tokens=False)
        kept = question_room(self.tuned.limit)
        asked = words_of_encoding(question, encoding.ids[:kept], encoding.word_ids[:kept], encoding.offsets[:kept])
        spans, ids = features.spans[window], features.ids[window]
        inside = np.flatnonzero(spans[:, 0] >= 0)
        read = words_of_encoding(context, ids[inside], features.words[window][inside], spans[inside])
        if not len(inside):
            read = Words(context, (), (), (), ())
        first_at = len(layout.before)
        second_at = int(inside[0]) if len(inside) else len(ids)
        return joined(asked, read, tuple(ids), tuple(features.types[window]), (first_at, second_at))

    def _label_name(self, label: int) -> str:
        return ""

    def _candidate_id(self, candidate: int | str) -> int:
        return 0


def _span_logits(model: torch.nn.Module, types: torch.Tensor, first: int, last: int) -> Outputs:
    """(B, 1): the start logit at token `first` plus the end logit at token `last`."""

    def outputs(ids: torch.Tensor, attention_mask: torch.Tensor | None, where: torch.Tensor) -> torch.Tensor:
        logits = model(ids, attention_mask, types.expand(len(ids), -1))  # (B, L, 2)
        return (logits[:, first, 0] + logits[:, last, 1])[:, None]

    return outputs


def _span_probability(
    model: torch.nn.Module, types: torch.Tensor, first: int, last: int, context: np.ndarray
) -> Outputs:
    """(B, 2): the logarithms of the span's score p (its start × end probability over the context's tokens and the
    first token, as the pipeline scores it) and of 1 - p, whose softmax is (p, 1 - p)."""
    visible = torch.from_numpy(context.copy())
    visible[NO_ANSWER] = True

    def outputs(ids: torch.Tensor, attention_mask: torch.Tensor | None, where: torch.Tensor) -> torch.Tensor:
        logits = model(ids, attention_mask, types.expand(len(ids), -1)).float()  # (B, L, 2)
        hidden = ~visible.to(ids.device)[None, :, None]
        log_p = logits.masked_fill(hidden, float("-inf")).log_softmax(1)
        score = log_p[:, first, 0] + log_p[:, last, 1]
        return torch.stack([score, torch.log(-torch.expm1(score))], 1)

    return outputs
