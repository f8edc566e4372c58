"""A question answered from a context as `transformers`' question-answering pipeline answers it: each window's
start and end logits made probabilities over its context tokens (the first token kept in the softmax, as the
pipeline keeps it, and its own chance set aside), every span of at most `max_answer_length` tokens scored by the
product of its start and end probabilities, the best spans of all windows together, as characters of the
context."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MASKED = -10000.0  # the logit the pipeline gives a token outside the context


@dataclass(frozen=True)
class Span:
    score: float
    start: int  # the answer's first character in the context
    end: int  # one past its last character

    def as_pipeline(self, context: str) -> dict:
        """The pipeline's answer: {"score", "start", "end", "answer"}."""
        return {"score": self.score, "start": self.start, "end": self.end, "answer": context[self.start : self.end]}


def window_spans(
    start_logits: np.ndarray, end_logits: np.ndarray, offsets: list, top_k: int, max_answer_length: int
) -> tuple[list[Span], float]:
    """A window's `top_k` best spans inside its context (`offsets`: each token's characters, None outside the
    context), and its chance of no answer (its first token's start and end probabilities)."""
    inside = np.asarray([offset is not None for offset in offsets])
    readable = inside.copy()
    readable[0] = True  # the first token stays in the softmax, as the pipeline's p_mask leaves it
    start = _softmax(np.where(readable, start_logits, MASKED))
    end = _softmax(np.where(readable, end_logits, MASKED))
    null = float(start[0] * end[0])
    start[0] = end[0] = 0.0
    candidates = np.tril(np.triu(np.outer(start, end)), max_answer_length - 1)  # (T, T): start ≤ end < start + max
    flat = candidates.ravel()
    order = [int(np.argmax(flat))] if top_k == 1 else np.argsort(-flat, kind="stable")[:top_k]
    spans = []
    for index in order:
        first, last = divmod(int(index), candidates.shape[1])
        if inside[first] and inside[last]:
            spans.append(Span(float(flat[index]), offsets[first][0], offsets[last][1]))
    return spans, null


def best_spans(
    windows: list[tuple[np.ndarray, np.ndarray, list]], top_k: int, max_answer_length: int, impossible: bool = False
) -> list[Span]:
    """The `top_k` best spans of all a question's windows ((start logits, end logits, offsets) each); with
    `impossible`, "no answer" among them (an empty span at 0 scored by the windows' least chance of none)."""
    spans, null = [], 1.0
    for start_logits, end_logits, offsets in windows:
        found, chance = window_spans(start_logits, end_logits, offsets, top_k, max_answer_length)
        spans, null = spans + found, min(null, chance)
    if impossible:
        spans.append(Span(null, 0, 0))
    return sorted(spans, key=lambda span: -span.score)[:top_k]


def _softmax(logits: np.ndarray) -> np.ndarray:
    exponents = np.exp(logits - logits.max())
    return exponents / exponents.sum()
