"""SQuAD's exact match and F1, as its official evaluation script (v2.0) computes them: answers normalised
(lower-cased, ASCII punctuation removed, the articles a, an and the removed, white space collapsed), the best over
the gold answers, an unanswerable question's only gold answer "" (a prediction scores 1 on it exactly when it is
empty too), in percent over a file, and separately over the questions with an answer and those without."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mlm_studio.core.finetune.qa.data import QAExample

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = str.maketrans("", "", string.punctuation)


@dataclass(frozen=True)
class QAScores:
    """Exact match and F1 in percent (0–100) over all questions, those with an answer and those without (None
    where there are none)."""

    exact: float
    f1: float
    total: int
    has_answer_exact: float | None
    has_answer_f1: float | None
    has_answer_total: int
    no_answer_exact: float | None
    no_answer_f1: float | None
    no_answer_total: int


def normalize_answer(text: str) -> str:
    """An answer as SQuAD compares it: lower case, no punctuation, no articles, single spaces."""
    return " ".join(ARTICLES.sub(" ", text.lower().translate(PUNCTUATION)).split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when the prediction equals a gold answer once both are normalised, else 0.0."""
    predicted = normalize_answer(prediction)
    return float(any(predicted == normalize_answer(gold) for gold in _gold(golds)))


def f1(prediction: str, golds: Sequence[str]) -> float:
    """The best word-overlap F1 between the prediction and a gold answer, both normalised; an empty one scores 1
    against an empty other, else 0."""
    predicted = normalize_answer(prediction).split()
    return max(_f1(predicted, normalize_answer(gold).split()) for gold in _gold(golds))


def _gold(golds: Sequence[str]) -> list[str]:
    """The gold answers that normalise to some text; [""] for none (an unanswerable question)."""
    return [gold for gold in golds if normalize_answer(gold)] or [""]


def _f1(predicted: list[str], gold: list[str]) -> float:
    if not predicted or not gold:
        return float(predicted == gold)
    same = sum((Counter(predicted) & Counter(gold)).values())
    if not same:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_scores(examples: list[QAExample], predictions: list[str]) -> QAScores:
    """Exact match and F1 of one predicted answer per example ("" for "no answer"), in percent."""
    if len(examples) != len(predictions):
        raise ValueError(f"{len(examples)} questions but {len(predictions)} predictions")
    exact, overlap, answered = [], [], []
    for example, prediction in zip(examples, predictions):
        golds = [text for text, _ in example.answers]
        exact.append(exact_match(prediction, golds))
        overlap.append(f1(prediction, golds))
        answered.append(not example.impossible)

    def percent(values: list[float], where: bool | None) -> tuple[float | None, int]:
        chosen = [v for v, a in zip(values, answered) if where is None or a == where]
        return (100.0 * sum(chosen) / len(chosen) if chosen else None), len(chosen)

    (all_exact, total), (all_f1, _) = percent(exact, None), percent(overlap, None)
    (has_exact, has_total), (has_f1, _) = percent(exact, True), percent(overlap, True)
    (no_exact, no_total), (no_f1, _) = percent(exact, False), percent(overlap, False)
    return QAScores(all_exact or 0.0, all_f1 or 0.0, total, has_exact, has_f1, has_total, no_exact, no_f1, no_total)
