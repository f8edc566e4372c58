"""How well a fine-tuned model does: accuracy, macro-F1, the confusion matrix and each class's precision, recall
and F1 (scikit-learn); for tags that mark entities also entity-level precision, recall and F1 in the `seqeval`
convention (entities are spans of one type opened by B-, or by I- after another type or O; an entity counts when
its type, start and end are all right). Whether a task's tags mark entities is decided once, from its training
tags (`entity_tags`): that decides the score that chooses a run's best checkpoint and weighs a comparison."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

OUTSIDE = "O"
PREFIXES = ("B", "I", "E", "S")  # begin, inside, end, single: BIO and BIOES tags
# the names of the score that chooses the best checkpoint
ENTITY_F1, MACRO_F1, ANSWER_F1 = "entity F1", "macro-F1", "answer F1"


@dataclass(frozen=True)
class ClassScore:
    """A label's scores. A label the test data lacks (support 0, as an inside tag added for later pieces) has no
    recall or F1 (None), and a precision only where the model predicted it (then 0.0, its every prediction wrong)."""

    label: str
    precision: float | None
    recall: float | None
    f1: float | None
    support: int


@dataclass(frozen=True)
class Scores:
    accuracy: float  # of the texts, or of the words (their first pieces)
    macro_f1: float
    confusion: tuple[tuple[int, ...], ...]  # rows: true label, columns: predicted, in `per_class` order (or ())
    per_class: tuple[ClassScore, ...]
    entity_precision: float | None = None  # tags that mark entities only
    entity_recall: float | None = None
    entity_f1: float | None = None
    confusions: tuple[tuple[str, str, int], ...] = ()  # with too many labels for the matrix: the most frequent


def entity_tags(labels: list[str] | tuple[str, ...]) -> bool:
    """Whether tags mark entities: each one O, or B-, I-, E- or S- and a type. Otherwise (integers, parts of
    speech) they are plain tags, scored as labels of words."""
    return all(tag == OUTSIDE or (tag.partition("-")[0] in PREFIXES and tag.partition("-")[2]) for tag in labels)


def main_score_name(task: str, labels: list[str] | tuple[str, ...]) -> str:
    """The name of the validation score that chooses the best checkpoint and stops early (and that a comparison
    weighs), decided from the training labels: entity F1 for tags that mark entities, else macro-F1; answers'
    F1 for question answering."""
    if task == "qa":
        return ANSWER_F1
    return ENTITY_F1 if task == "tokens" and entity_tags(labels) else MACRO_F1


def main_score(scores) -> float:
    """That score of `scores` (a Scores, or a validation or test record): answers' F1 or entity F1 where it was
    measured."""
    return getattr(scores, score_field(scores)[0])


def score_field(record) -> tuple[str, str]:
    """(field, name) of that score in a Scores or a validation or test record (or its dict): answers' F1 where it
    was measured, else entity F1 where it was, else macro-F1."""
    value = record.get if isinstance(record, dict) else lambda field: getattr(record, field, None)
    if value("f1") is not None:
        return "f1", ANSWER_F1
    return ("entity_f1", ENTITY_F1) if value("entity_f1") is not None else ("macro_f1", MACRO_F1)


def class_scores(true: np.ndarray, predicted: np.ndarray, labels: list[str]) -> Scores:
    """Scores of label ids `predicted` against `true` (1-D, the same length)."""
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    ids = list(range(len(labels)))
    precision, recall, f1, support = precision_recall_fscore_support(true, predicted, labels=ids, zero_division=0.0)
    present, guessed = support > 0, np.bincount(predicted, minlength=len(labels)) > 0
    per_class = tuple(
        ClassScore(labels[i], float(precision[i]), float(recall[i]), float(f1[i]), int(support[i]))
        if present[i]
        else ClassScore(labels[i], 0.0 if guessed[i] else None, None, None, 0)
        for i in ids
    )
    dense = len(labels) <= MATRIX_LABELS
    return Scores(
        accuracy=float((true == predicted).mean()) if len(true) else float("nan"),
        macro_f1=float(f1[present].mean()) if present.any() else float("nan"),
        confusion=tuple(tuple(int(v) for v in row) for row in confusion_matrix(true, predicted, labels=ids))
        if dense
        else (),
        per_class=per_class,
        confusions=() if dense else top_confusions(true, predicted, labels),
    )


MATRIX_LABELS = 50  # the most labels a confusion matrix is kept for (2,500 cells); past them, the top confusions
TOP_CONFUSIONS = 100  # kept instead


def top_confusions(true: np.ndarray, predicted: np.ndarray, labels: list[str]) -> tuple[tuple[str, str, int], ...]:
    """The most frequent mistakes: (true label, predicted label, how often), most frequent first, ties in the
    labels' order."""
    wrong = true != predicted
    pairs, counts = np.unique(np.stack([true[wrong], predicted[wrong]], axis=1), axis=0, return_counts=True)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -counts))[:TOP_CONFUSIONS] if len(counts) else []
    return tuple((labels[pairs[i, 0]], labels[pairs[i, 1]], int(counts[i])) for i in order)


def tag_scores(true: list[list[str]], predicted: list[list[str]], labels: list[str]) -> Scores:
    """Word-level scores of tag sequences, and where `labels` mark entities, entity-level precision, recall and F1
    (micro-averaged)."""
    index = {label: i for i, label in enumerate(labels)}
    flat_true = np.asarray([index[t] for row in true for t in row], dtype=np.int64)
    flat_predicted = np.asarray([index[t] for row in predicted for t in row], dtype=np.int64)
    words = class_scores(flat_true, flat_predicted, labels)
    if not entity_tags(labels):
        return words
    precision, recall, f1 = entity_scores(true, predicted)
    return replace(words, entity_precision=precision, entity_recall=recall, entity_f1=f1)


def entity_scores(true: list[list[str]], predicted: list[list[str]]) -> tuple[float, float, float]:
    """(precision, recall, F1) over the entities of all sentences together; 0 where nothing is to count."""
    expected = {(n, *span) for n, row in enumerate(true) for span in entities(row)}
    found = {(n, *span) for n, row in enumerate(predicted) for span in entities(row)}
    right = len(expected & found)
    precision = right / len(found) if found else 0.0
    recall = right / len(expected) if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def entities(tags: list[str]) -> list[tuple[str, int, int]]:
    """The (type, first, last) spans of a tag sequence: B-X opens one, I-X continues one of type X and opens one
    after O or another type, E-X ends one, S-X is one alone, O is outside; a tag without a prefix is its own
    type."""
    spans, current = [], None  # current: [type, first, last]
    previous = OUTSIDE
    for position, tag in enumerate([*tags, OUTSIDE]):
        prefix, kind = _parts(tag)
        prev_prefix, prev_kind = _parts(previous)
        ends = current is not None and (prev_prefix in ("E", "S") or prefix in ("B", "S", OUTSIDE) or kind != prev_kind)
        if ends:
            spans.append((current[0], current[1], current[2]))
            current = None
        starts = prefix in ("B", "S") or (prefix != OUTSIDE and current is None)
        if starts:
            current = [kind, position, position]
        elif current is not None:
            current[2] = position
        previous = tag
    return spans


def _parts(tag: str) -> tuple[str, str]:
    """(prefix, type) of a tag: ("B", "PER") for B-PER, ("O", "") for O, ("I", "PER") for a bare PER."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, dash, kind = tag.partition("-")
    if dash and prefix in ("B", "I", "E", "S"):
        return prefix, kind
    return "I", tag


def per_class_rows(test) -> list[tuple[str, str, str, str, str]]:
    """A test record's scores by class as the tables write them: (label, precision, recall, F1, support), a score
    that has no value (`ClassScore`) as "—" and the support of a label the test data lacks as "0 (absent)"."""
    rows = []
    for label, *measures, support in test.per_class:
        shown = ["—" if value is None else f"{value:.1%}" for value in _written(test, label, measures, support)]
        rows.append((label, *shown, f"{support:,}" if support else "0 (absent)"))
    return rows


def _written(test, label: str, measures: list, support: int) -> list:
    """A label's measures as `ClassScore` has them, also from a record written before an absent label's were None
    (then 0.0 each)."""
    return measures if support else [measures[0] if _predicted(test, label) else None, None, None]


def _predicted(test, label: str) -> int:
    """How often the model predicted `label` on the test data: its column of the confusion matrix, or without
    one, its count among the most frequent mistakes (every prediction of an absent label is one)."""
    if test.confusion:
        column = [name for name, *_ in test.per_class].index(label)  # the matrix is in the classes' order
        return sum(row[column] for row in test.confusion)
    return sum(count for _, guess, count in test.confusions if guess == label)
