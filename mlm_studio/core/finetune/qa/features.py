"""Questions and contexts as the model reads them: the tokenizer's own layout of a pair (BERT's
`[CLS] question [SEP] context [SEP]` with segments 0 and 1, RoBERTa's `<s> question </s></s> context </s>`), the
question cut to `max_question` tokens, a context too long for one row cut into windows that overlap by `stride`
tokens (as `transformers`' fast tokenizers cut "only_second" with overflowing tokens), each context token's
characters in its context, and where the answer lies in each window (as `transformers`' question-answering
recipe trains it: the first answer's first and last tokens, or the first token where the window does not hold
the whole answer)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlm_studio.core.data.tokenizer import MLMTokenizer, batches
from mlm_studio.core.errors import UserError
from mlm_studio.core.finetune.examples import bert_layout
from mlm_studio.core.finetune.qa.data import QAExample

NO_ANSWER = 0  # the position that stands for "no answer here": the first token, [CLS] or <s>
CONTEXTS_AT_ONCE = 256  # contexts encoded together


@dataclass(frozen=True)
class QAFeatures:
    """One row per window; a long context gives its question several windows."""

    ids: list[np.ndarray]  # each (T,) int64
    types: list[np.ndarray]  # each (T,) int64: the segment of each id
    spans: list[np.ndarray]  # each (T, 2) int64: each token's characters [start, end) in its context; -1 outside it
    words: list[np.ndarray]  # each (T,) int64: each token's word in its context (as the pre-tokenizer splits); -1
    example: np.ndarray  # (windows,) int64: the index of the example each window belongs to
    start: np.ndarray  # (windows,) int64: the answer's first token in the window, or NO_ANSWER
    end: np.ndarray  # (windows,) int64: the answer's last token in the window, or NO_ANSWER

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def offsets(self) -> list[list[tuple[int, int] | None]]:
        """Each window's tokens' characters in the context, None for a token outside it (as `transformers`'
        question-answering recipe keeps them for decoding)."""
        return [[None if a < 0 else (int(a), int(b)) for a, b in spans] for spans in self.spans]


@dataclass(frozen=True)
class PairLayout:
    """Where a tokenizer's post-processor puts its special tokens around a question and a context."""

    before: list[int]  # ids before the question
    between: list[int]  # ids between the question and the context
    after: list[int]  # ids after the context
    types: tuple[list[int], list[int], list[int]]  # the segments of before, between and after
    question_type: int
    context_type: int

    @property
    def added(self) -> int:
        return len(self.before) + len(self.between) + len(self.after)


def pair_layout(tokenizer: MLMTokenizer) -> PairLayout:
    """The layout the tokenizer's post-processor (BERT's where it has none) gives a pair, read off a pair of one
    token each."""
    processor = tokenizer.backend.post_processor or bert_layout(tokenizer)
    one = tokenizer.backend.encode(tokenizer.specials.unk, add_special_tokens=False)
    laid_out = processor.process(one, one, True)
    question, context = (i for i, special in enumerate(laid_out.special_tokens_mask) if not special)
    ids, types = laid_out.ids, laid_out.type_ids
    return PairLayout(
        ids[:question],
        ids[question + 1 : context],
        ids[context + 1 :],
        (types[:question], types[question + 1 : context], types[context + 1 :]),
        types[question],
        types[context],
    )


def check_lengths(tokenizer: MLMTokenizer, max_length: int, stride: int, max_question: int) -> None:
    """ValueError unless a window holds the longest question, its special tokens and more context than `stride`."""
    added = pair_layout(tokenizer).added
    if min(max_length, max_question, stride + 1) < 1:
        raise ValueError(f"max_length {max_length}, max_question {max_question} and stride {stride} must be positive")
    if max_question + added + stride >= max_length:
        raise UserError(
            f"a window of {max_length} tokens holds a question of {max_question} tokens, {added} special tokens and "
            f"a stride of {stride} tokens with no room for new context; lengthen the window or shorten the other two"
        )


def qa_features(
    tokenizer: MLMTokenizer, examples: list[QAExample], max_length: int, stride: int, max_question: int = 64
) -> QAFeatures:
    """Each example's windows of at most `max_length` tokens: its question (cut to `max_question` tokens) and a
    stretch of its context, each stretch overlapping the one before by `stride` tokens."""
    check_lengths(tokenizer, max_length, stride, max_question)
    layout = pair_layout(tokenizer)
    backend = tokenizer.backend
    questions = backend.encode_batch([e.question for e in examples], add_special_tokens=False)
    contexts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # each context encoded once
    for batch in batches(dict.fromkeys(e.context for e in examples), CONTEXTS_AT_ONCE):
        for text, encoding in zip(batch, backend.encode_batch(batch, add_special_tokens=False)):
            words = [-1 if word is None else word for word in encoding.word_ids]
            as_arrays = (encoding.ids, np.reshape(encoding.offsets, (-1, 2)), words)
            contexts[text] = tuple(np.asarray(values, dtype=np.int64) for values in as_arrays)
    before, between, after = (np.asarray(p, dtype=np.int64) for p in (layout.before, layout.between, layout.after))
    ids, types, spans, words, owner, starts, ends = [], [], [], [], [], [], []
    for index, (example, question) in enumerate(zip(examples, questions)):
        question_ids = np.asarray(question.ids[:max_question], dtype=np.int64)
        context_ids, context_spans, context_words = contexts[example.context]
        room = max_length - layout.added - len(question_ids)
        head = np.concatenate([before, question_ids, between])
        head_types = np.asarray(
            [*layout.types[0], *[layout.question_type] * len(question_ids), *layout.types[1]], dtype=np.int64
        )
        for first, last in windows(len(context_ids), room, stride):
            ids.append(np.concatenate([head, context_ids[first:last], after]))
            segment = np.full(last - first, layout.context_type, dtype=np.int64)
            types.append(np.concatenate([head_types, segment, np.asarray(layout.types[2], dtype=np.int64)]))
            spans.append(np.concatenate([_outside(len(head), 2), context_spans[first:last], _outside(len(after), 2)]))
            words.append(np.concatenate([_outside(len(head)), context_words[first:last], _outside(len(after))]))
            found = answer_tokens(example, context_spans[first:last])
            starts.append(NO_ANSWER if found is None else found[0] + len(head))
            ends.append(NO_ANSWER if found is None else found[1] + len(head))
            owner.append(index)
    owner, starts, ends = (np.asarray(values, dtype=np.int64) for values in (owner, starts, ends))
    return QAFeatures(ids, types, spans, words, owner, starts, ends)


def _outside(tokens: int, *shape: int) -> np.ndarray:
    """-1 for `tokens` tokens outside the context (special tokens and the question)."""
    return np.full((tokens, *shape), -1, dtype=np.int64)


def windows(tokens: int, room: int, stride: int) -> list[tuple[int, int]]:
    """[first, last) of each window of a context of `tokens` tokens, `room` tokens each at most, each starting
    `room - stride` tokens after the one before, the last the first to reach the end (one window for none)."""
    step = room - stride
    firsts = range(0, max(tokens - room, 0) + step, step) if tokens > room else range(1)
    return [(first, min(first + room, tokens)) for first in firsts]


def answer_tokens(example: QAExample, spans: np.ndarray) -> tuple[int, int] | None:
    """The first answer's first and last token among a window's context tokens (`spans`: each one's characters),
    or None when the window does not hold all of it or there is none."""
    if example.impossible or not len(spans):
        return None
    text, start_char = example.answers[0]
    end_char = start_char + len(text)
    if not (spans[0, 0] <= start_char and spans[-1, 1] >= end_char):
        return None
    start = int(np.searchsorted(spans[:, 0], start_char, side="right")) - 1  # the last token starting at or before it
    end = int(np.searchsorted(spans[:, 1], end_char, side="left"))  # the first token ending at or after it
    return start, end
