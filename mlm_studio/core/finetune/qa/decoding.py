"""Answers read off a question-answering model's start and end logits, scored as `transformers`' question-answering
pipeline scores them: in each window a softmax over the context's tokens and the first token, the first token's start
× end probability the "no answer" score, a span's score its start × end probability, spans of at most
`max_answer_length` tokens with both ends in the context; the best spans of every window of an example merged, the
lowest "no answer" score of its windows competing with them when unanswerable questions are allowed (SQuAD v2.0); a
span is given once, however many windows find it. A span is widened to whole words (the pipeline's `align_to_words`)
unless told not to, and its text is cut from the original context by its characters. Every window is scored at once,
in NumPy, a batch of windows at a time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from mlm_studio.core.finetune.qa.data import QAExample
from mlm_studio.core.finetune.qa.features import QAFeatures

HIDDEN = -10000.0  # the logit a token outside the context gets before the softmax, as in the pipeline
SCORES_AT_ONCE = 1 << 22  # span scores held at once (windows × tokens × answer lengths)


@dataclass(frozen=True)
class Answer:
    """An answer in its context: its text, score and characters [start, end); "" at 0, 0 for no answer."""

    text: str
    score: float
    start: int
    end: int

    def as_pipeline(self) -> dict:
        """What `transformers`' question-answering pipeline returns for it."""
        return {"score": self.score, "start": self.start, "end": self.end, "answer": self.text}


@dataclass(frozen=True)
class _Spans:
    """The best spans of some windows, best first in each: (window, start token, end token, score) each."""

    window: np.ndarray
    start: np.ndarray
    end: np.ndarray
    score: np.ndarray


def best_answers(
    examples: list[QAExample],
    features: QAFeatures,
    start_logits: list[np.ndarray],
    end_logits: list[np.ndarray],
    *,
    max_answer_length: int = 30,
    allow_impossible: bool = False,
    top_k: int = 1,
    align_to_words: bool = True,
) -> list[list[Answer]]:
    """Each example's `top_k` answers, best first, from every window's logits (each window's first `len(ids)`
    logits are read; padding after them is ignored): each window's best spans merged, as the pipeline merges them,
    but a span found in two windows (or two spans widened to the same words) given once, at its best score, where
    the pipeline lists it twice, and the next best in its place; an example with no span that fits gets the empty
    answer."""
    if min(max_answer_length, top_k) < 1:
        raise ValueError(f"max_answer_length {max_answer_length} and top_k {top_k} must be positive")
    if not len(start_logits) == len(end_logits) == len(features):
        raise ValueError(f"{len(features)} windows but {len(start_logits)} and {len(end_logits)} rows of logits")
    for row, ids in enumerate(features.ids):
        if min(np.size(start_logits[row]), np.size(end_logits[row])) < len(ids):
            raise ValueError(f"window {row} has {len(ids)} tokens but fewer logits")
    if not examples:
        return []
    kept = top_k  # spans read of each window: more when the best of some are one span
    while True:
        found, null = _spans_of_windows(features, start_logits, end_logits, kept, max_answer_length)
        answers, complete = _answers_of(examples, features, found, null, kept, top_k, allow_impossible, align_to_words)
        if complete:
            return answers
        kept *= 4


def _spans_of_windows(
    features: QAFeatures, start_logits: list[np.ndarray], end_logits: list[np.ndarray], kept: int, longest: int
) -> tuple[_Spans, np.ndarray]:
    """The `kept` best spans of every window (of at most `longest` tokens) and each window's "no answer" score,
    some windows at a time."""
    spans, null = [], np.empty(len(features))
    at_once = max(1, SCORES_AT_ONCE // (max(map(len, features.ids), default=1) * longest))
    for first in range(0, len(features), at_once):
        rows = range(first, min(first + at_once, len(features)))
        found, null[rows.start : rows.stop] = _best_spans(features, rows, start_logits, end_logits, kept, longest)
        spans.append(found)
    fields = ("window", "start", "end", "score")
    return _Spans(*(np.concatenate([getattr(s, name) for s in spans]) for name in fields)), null


def _answers_of(
    examples: list[QAExample],
    features: QAFeatures,
    found: _Spans,
    null: np.ndarray,
    kept: int,
    top_k: int,
    allow_impossible: bool,
    align_to_words: bool,
) -> tuple[list[list[Answer]], bool]:
    """Each example's `top_k` answers of the spans found, and whether they are surely its best: False when a
    window gave all the `kept` spans asked of it and a span beyond them might outscore the last answer (the best
    spans were few once those of the same characters were counted once)."""
    by_example = np.split(
        np.arange(len(found.window)), np.searchsorted(features.example[found.window], range(1, len(examples)))
    )
    windows_of = np.split(np.arange(len(features)), np.searchsorted(features.example, range(1, len(examples))))
    # the best score a span not read could have: the lowest read of a window that gave all the spans asked of it
    lowest_read = np.full(len(features), np.inf)
    np.minimum.at(lowest_read, found.window, found.score)
    unread = np.where(np.bincount(found.window, minlength=len(features)) == kept, lowest_read, 0.0)
    answers, complete = [], True
    for example, chosen, windows in zip(examples, by_example, windows_of):
        chosen = chosen[np.argsort(-found.score[chosen], kind="stable")]  # ties: the earlier window first
        candidates = _distinct(
            (
                _answer(example.context, features, int(found.window[i]), int(found.start[i]), int(found.end[i]),
                        float(found.score[i]), align_to_words)
                for i in chosen
            ),
            top_k,
        )  # fmt: skip
        best_unread = float(unread[windows].max()) if len(windows) else 0.0
        if best_unread > 0 and (len(candidates) < top_k or candidates[-1].score < best_unread):
            complete = False
        lowest_null = float(null[windows].min()) if len(windows) else 0.0
        if allow_impossible or not candidates:
            candidates.append(Answer("", lowest_null, 0, 0))
        answers.append(sorted(candidates, key=lambda answer: answer.score, reverse=True)[:top_k])
    return answers, complete


def _best_spans(
    features: QAFeatures,
    rows: range,
    start_logits: list[np.ndarray],
    end_logits: list[np.ndarray],
    kept: int,
    max_answer_length: int,
) -> tuple[_Spans, np.ndarray]:
    """The `kept` best spans of each window in `rows` (best first) and each window's "no answer" score."""
    lengths = np.asarray([len(features.ids[row]) for row in rows])
    longest = int(lengths.max())
    context = np.zeros((len(rows), longest), dtype=bool)  # (W, T): the tokens an answer may hold
    start = np.full((len(rows), longest), HIDDEN)  # (W, T)
    end = np.full((len(rows), longest), HIDDEN)
    for i, row in enumerate(rows):
        n = lengths[i]
        context[i, :n] = features.spans[row][:, 0] >= 0
        start[i, :n] = np.asarray(start_logits[row], dtype=np.float64).reshape(-1)[:n]
        end[i, :n] = np.asarray(end_logits[row], dtype=np.float64).reshape(-1)[:n]
    visible = context.copy()
    visible[:, 0] = True  # the first token takes part in the softmax: its probability is the "no answer" score
    start_p, end_p = (
        _softmax(np.where(visible, start, HIDDEN), visible),
        _softmax(np.where(visible, end, HIDDEN), visible),
    )
    null = start_p[:, 0] * end_p[:, 0]
    # (W, T, L): the score of the span from token t to token t + l
    padded_end = np.concatenate([end_p * context, np.zeros((len(rows), max_answer_length - 1))], axis=1)
    ends = np.lib.stride_tricks.sliding_window_view(padded_end, max_answer_length, axis=1)
    scores = (start_p * context)[:, :, None] * ends
    flat = scores.reshape(len(rows), -1)
    kept = min(kept, flat.shape[1])
    if kept == 1:
        best = flat.argmax(axis=1)[:, None]
    else:
        best = np.argpartition(-flat, kept - 1, axis=1)[:, :kept]
        order = np.argsort(-np.take_along_axis(flat, best, axis=1), axis=1, kind="stable")
        best = np.take_along_axis(best, order, axis=1)
    best_scores = np.take_along_axis(flat, best, axis=1)
    window, rank = np.nonzero(best_scores > 0)  # a span outside the context scores 0
    token, length = np.divmod(best[window, rank], max_answer_length)
    found = _Spans(window + rows.start, token, token + length, best_scores[window, rank])
    return found, null


def _distinct(answers: Iterator[Answer], top_k: int) -> list[Answer]:
    """The first `top_k` answers of different characters: a span found again (in the overlap of two windows, or
    widened to the same words) is left out, its best score kept."""
    found: dict[tuple[int, int], Answer] = {}
    for answer in answers:
        found.setdefault((answer.start, answer.end), answer)
        if len(found) == top_k:
            break
    return list(found.values())


def _softmax(logits: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """(W, T) each row's softmax over its visible tokens (the others 0)."""
    exp = np.exp(logits - logits.max(axis=1, keepdims=True)) * visible
    return exp / exp.sum(axis=1, keepdims=True)


def _answer(
    context: str, features: QAFeatures, window: int, start: int, end: int, score: float, align_to_words: bool
) -> Answer:
    """A span of tokens as characters of the context, widened to the words it touches when `align_to_words`."""
    spans, words = features.spans[window], features.words[window]
    if align_to_words:
        while start > 0 and words[start - 1] == words[start] >= 0:
            start -= 1
        while end + 1 < len(words) and words[end + 1] == words[end] >= 0:
            end += 1
    first, last = int(spans[start, 0]), int(spans[end, 1])
    return Answer(context[first:last], score, first, last)
