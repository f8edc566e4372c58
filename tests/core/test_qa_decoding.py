"""Decoded answers: given the same logits, the same answers, characters and scores (within 1e-6) as the
`transformers` question-answering pipeline's post-processing (its `select_starts_ends` with the pipeline's
merging of windows, "no answer" score and word alignment, restated) for every tokenizer kind, with and without
unanswerable questions, but a span found twice given once; a hand-worked window; padding ignored; a validation
set's worth decoded quickly."""

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mlm_studio.core.finetune.qa.data import QAExample
from mlm_studio.core.finetune.qa.decoding import Answer, best_answers
from mlm_studio.core.finetune.qa.features import QAFeatures, pair_layout, qa_features
from tests.core.qa_helpers import KINDS, QUESTION, TEXT, tokenizer_pair


@pytest.fixture(scope="module", params=[k for k in KINDS if k != "bpe-trimmed"])  # features hold its quirks
def tokenizers(request, tmp_path_factory):
    return tokenizer_pair(request.param, tmp_path_factory.mktemp(request.param))


def pipeline_answers(reference, question, context, max_length, stride, start_logits, end_logits, **options):
    """What the question-answering pipeline of `transformers` 4.x returns for these logits of each window: its
    `postprocess` (the pipeline is gone from 5.x; its span selection, `select_starts_ends`, remains), restated."""
    from transformers.pipelines.document_question_answering import select_starts_ends

    encoded = reference(
        question,
        context,
        truncation="only_second",
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_token_type_ids=True,
    )
    top_k, impossible = options["top_k"], options["handle_impossible_answer"]
    every_span = max(len(ids) for ids in encoded["input_ids"]) ** 2
    min_null_score, answers = 1000000, []
    for i, ids in enumerate(encoded["input_ids"]):
        p_mask = np.asarray([s != 1 for s in encoded.sequence_ids(i)], dtype=int)
        p_mask[np.asarray(ids) == reference.cls_token_id] = 0
        starts, ends, scores, min_null_score = select_starts_ends(
            start_logits[i][None], end_logits[i][None], p_mask, np.ones((1, len(ids)), dtype=int), min_null_score,
            every_span, impossible, options["max_answer_len"],
        )  # fmt: skip
        encoding = encoded.encodings[i]
        for s, e, score in zip(starts, ends, scores):
            try:
                if not options["align_to_words"]:
                    raise ValueError
                begin = encoding.word_to_chars(encoding.token_to_word(s), sequence_index=1)[0]
                end = encoding.word_to_chars(encoding.token_to_word(e), sequence_index=1)[1]
            except Exception:
                begin, end = encoding.offsets[s][0], encoding.offsets[e][1]
            answers.append({"score": score.item(), "start": begin, "end": end, "answer": context[begin:end]})
    # MLM Studio's one change: a span found twice (in two windows' overlap, or two spans of one word) is listed
    # once, at its best score, and the next best in its place (the pipeline reads each window's top k)
    answers = sorted(answers, key=lambda answer: answer["score"], reverse=True)
    answers = list({(answer["start"], answer["end"]): answer for answer in reversed(answers)}.values())[::-1]
    if impossible:
        answers.append({"score": min_null_score, "start": 0, "end": 0, "answer": ""})
    return sorted(answers, key=lambda answer: answer["score"], reverse=True)[:top_k]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    context=TEXT,
    question=QUESTION,
    stride=st.integers(0, 8),
    extra=st.integers(2, 30),
    seed=st.integers(0, 2**32 - 1),
    top_k=st.integers(1, 4),
    impossible=st.booleans(),
    longest=st.integers(1, 20),
    align=st.booleans(),
)
def test_answers_equal_the_pipelines_given_the_same_logits(
    tokenizers, context, question, stride, extra, seed, top_k, impossible, longest, align
):
    tokenizer, reference = tokenizers
    assume(tokenizer.tokens(context))
    max_question = len(tokenizer.tokens(question))
    max_length = max_question + pair_layout(tokenizer).added + stride + extra
    example = QAExample("q", question, context, (), 1)
    features = qa_features(tokenizer, [example], max_length, stride, max_question)
    rng = np.random.default_rng(seed)
    starts, ends = ([rng.normal(0, 3, len(ids)) for ids in features.ids] for _ in range(2))
    ours = best_answers(
        [example], features, starts, ends, max_answer_length=longest, allow_impossible=impossible, top_k=top_k,
        align_to_words=align,
    )[0]  # fmt: skip
    theirs = pipeline_answers(
        reference, question, context, max_length, stride, starts, ends,
        top_k=top_k, handle_impossible_answer=impossible, max_answer_len=longest, align_to_words=align,
    )  # fmt: skip
    # the pipeline fills its top k with spans of probability 0 (from the first token) when a window has fewer
    theirs = [answer for answer in theirs if answer["score"] > 0]
    assert [(a.text, a.start, a.end) for a in ours] == [(a["answer"], a["start"], a["end"]) for a in theirs]
    np.testing.assert_allclose([a.score for a in ours], [a["score"] for a in theirs], rtol=1e-6)
    assert all(a.as_pipeline() == {"score": a.score, "start": a.start, "end": a.end, "answer": a.text} for a in ours)


def window(context_spans, before=3, after=1, words=None):
    """A hand-made window: `before` tokens outside the context, then tokens with these characters, `after` more."""
    spans = np.asarray([[-1, -1]] * before + list(context_spans) + [[-1, -1]] * after, dtype=np.int64)
    words = np.asarray([-1] * before + list(words or range(len(context_spans))) + [-1] * after, dtype=np.int64)
    return spans, words


def features_of(windows, example_of):
    spans, words = zip(*windows)
    ids = [np.zeros(len(s), dtype=np.int64) for s in spans]
    zeros = np.zeros(len(spans), dtype=np.int64)
    return QAFeatures(ids, ids, list(spans), list(words), np.asarray(example_of), zeros, zeros)


def test_a_hand_worked_window():
    context = "red fox"
    features = features_of([window([(0, 3), (4, 7)])], [0])
    # logits over [CLS] q [SEP] red fox [SEP]: the question and separators never count
    start = np.log([1.0, 50, 50, 3.0, 1.0, 50])
    end = np.log([1.0, 50, 50, 1.0, 2.0, 50])
    # probabilities over [CLS], red, fox: start 1/5, 3/5, 1/5; end 1/4, 1/4, 2/4
    best = best_answers([QAExample("q", "Which?", context, (), 1)], features, [start], [end], top_k=4)[0]
    assert [(a.text, a.start, a.end) for a in best] == [("red fox", 0, 7), ("red", 0, 3), ("fox", 4, 7)]
    np.testing.assert_allclose([a.score for a in best], [3 / 5 * 2 / 4, 3 / 5 * 1 / 4, 1 / 5 * 2 / 4])
    impossible = best_answers(
        [QAExample("q", "Which?", context, (), 1)], features, [start], [end], top_k=4, allow_impossible=True
    )[0]
    assert impossible[3] == Answer("", pytest.approx(1 / 5 * 1 / 4), 0, 0)  # [CLS]'s probabilities
    longest_one = best_answers([QAExample("q", "Which?", context, (), 1)], features, [start], [end], top_k=4,
                               max_answer_length=1)[0]  # fmt: skip
    assert [a.text for a in longest_one] == ["red", "fox"]


def test_no_answer_wins_when_the_first_token_is_likeliest_in_every_window():
    context = "one two three"
    spans = [(0, 3), (4, 7), (8, 13)]
    features = features_of([window(spans[:2]), window(spans[1:])], [0, 0])
    starts = [np.asarray([9.0, 0, 0, 1, 0, 0]), np.asarray([5.0, 0, 0, 0, 3, 0])]
    ends = [np.asarray([9.0, 0, 0, 0, 1, 0]), np.asarray([5.0, 0, 0, 0, 3, 0])]
    example = QAExample("q", "Which?", context, (), 1)
    [best] = best_answers([example], features, starts, ends, allow_impossible=True)[0]
    assert (best.text, best.start, best.end) == ("", 0, 0)
    second = np.exp(5.0) / (np.exp(5.0) + 1 + np.exp(3.0))
    assert best.score == pytest.approx(second**2)  # the lowest of the two windows' no-answer scores
    [span] = best_answers([example], features, starts, ends)[0]
    assert span.text == "three"  # the second window's span outscores the first's


def test_a_span_two_windows_find_is_given_once_at_its_best_score():
    context = "one two three"
    spans = [(0, 3), (4, 7), (8, 13)]
    features = features_of([window(spans[:2]), window(spans[1:])], [0, 0])  # both windows hold "two"
    starts = [np.asarray([0.0, 0, 0, 0, 4, 0]), np.asarray([0.0, 0, 0, 3, 1, 0])]
    ends = [np.asarray([0.0, 0, 0, 0, 4, 0]), np.asarray([0.0, 0, 0, 3, 1, 0])]
    example = QAExample("q", "Which?", context, (), 1)
    answers = best_answers([example], features, starts, ends, top_k=3)[0]
    assert [(a.text, a.start, a.end) for a in answers] == [("two", 4, 7), ("two three", 4, 13), ("one two", 0, 7)]
    first = np.exp(4.0) / (np.exp(4.0) + 2)
    assert answers[0].score == pytest.approx(first**2)  # the first window's, the better of the two
    with_none = best_answers([example], features, starts, ends, top_k=10, allow_impossible=True)[0]
    assert len({(a.start, a.end) for a in with_none}) == len(with_none) == 6  # five spans and no answer


def test_spans_widen_to_whole_words_unless_told_not_to():
    context = "unbelievable"
    features = features_of([window([(0, 2), (2, 8), (8, 12)], words=[0, 0, 0])], [0])
    start = np.asarray([0.0, -9, -9, -9, 5, -9, -9])
    end = np.asarray([0.0, -9, -9, -9, 5, -9, -9])
    example = QAExample("q", "Which?", context, (), 1)
    assert best_answers([example], features, [start], [end])[0][0].text == "unbelievable"
    assert best_answers([example], features, [start], [end], align_to_words=False)[0][0].text == "believ"
    assert [a.text for a in best_answers([example], features, [start], [end], top_k=5)[0]] == ["unbelievable"]
    two_words = features_of([window([(0, 2), (2, 8), (8, 12), (13, 16)], words=[0, 0, 0, 1])], [0])
    start = np.asarray([0.0, -9, -9, 2, 5, 2, -20, -9])  # [CLS] q [SEP] un believ able fox [SEP]
    end = np.asarray([0.0, -9, -9, 2, 5, 2, -4, -9])
    context = "unbelievable fox"  # the best six spans are all "unbelievable": the seventh is read too
    answers = best_answers([QAExample("q", "Which?", context, (), 1)], two_words, [start], [end], top_k=2)[0]
    assert [a.text for a in answers] == ["unbelievable", "unbelievable fox"]
    assert answers[1].score == pytest.approx(np.exp(5 - 4) / (1 + 2 * np.exp(2) + np.exp(5)) ** 2, rel=0.01)


def test_padding_after_a_window_is_ignored_and_mismatches_are_refused():
    context = "red fox"
    features = features_of([window([(0, 3), (4, 7)])], [0])
    start, end = np.log([1.0, 50, 50, 3.0, 1.0, 50]), np.log([1.0, 50, 50, 1.0, 2.0, 50])
    example = QAExample("q", "Which?", context, (), 1)
    padded = best_answers([example], features, [np.append(start, [99.0] * 4)], [np.append(end, [99.0] * 4)])
    assert padded == best_answers([example], features, [start], [end])
    with pytest.raises(ValueError, match="1 windows but 2 and 1 rows of logits"):
        best_answers([example], features, [start, start], [end])
    with pytest.raises(ValueError, match="window 0 has 6 tokens but fewer logits"):
        best_answers([example], features, [start[:5]], [end])
    with pytest.raises(ValueError, match="must be positive"):
        best_answers([example], features, [start], [end], top_k=0)


def test_no_examples_give_no_answers(tokenizers):
    tokenizer, _ = tokenizers
    assert best_answers([], qa_features(tokenizer, [], 64, 8, 16), [], []) == []


def test_a_window_without_context_gives_the_empty_answer():
    features = features_of([window([])], [0])
    [answer] = best_answers([QAExample("q", "Which?", "\u200b", (), 1)], features, [np.zeros(4)], [np.zeros(4)])[0]
    assert (answer.text, answer.start, answer.end) == ("", 0, 0)


def test_a_validation_set_of_windows_decodes_quickly():
    rng = np.random.default_rng(0)
    examples, windows = [], []
    for index in range(2000):
        tokens = int(rng.integers(50, 360))
        spans = np.stack([np.arange(tokens) * 5, np.arange(tokens) * 5 + 4], axis=1)
        windows.append(window(spans, before=20, after=1))
        examples.append(QAExample(str(index), "Which?", "word " * tokens, (), 1))
    features = features_of(windows, list(range(2000)))
    starts = [rng.normal(0, 3, len(s)) for s, _ in windows]
    ends = [rng.normal(0, 3, len(s)) for s, _ in windows]
    began = time.perf_counter()
    answers = best_answers(examples, features, starts, ends, allow_impossible=True)
    seconds = time.perf_counter() - began
    assert len(answers) == 2000 and all(len(a) == 1 for a in answers)
    assert seconds < 10, f"2,000 windows took {seconds:.1f} s to decode"
