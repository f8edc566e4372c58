"""Question-answering features: for WordPiece, byte-level BPE (with RoBERTa's offset-trimming post-processor too)
and Unigram tokenizers, the windows, ids, segments, offsets and answer positions equal what the `transformers` fast
tokenizer of the same vocabulary gives with the question-answering recipe's `prepare_train_features`
(truncation "only_second", overflowing tokens, a stride, offsets) on random texts, answers and strides; a long
question is cut, a 1-MB context is cut into a bounded number of windows quickly."""

import itertools
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tokenizers import processors

from mlm_studio.core.finetune.qa.data import QAExample
from mlm_studio.core.finetune.qa.features import NO_ANSWER, check_lengths, pair_layout, qa_features, windows
from tests.core.qa_helpers import KINDS, QUESTION, TEXT, tokenizer_pair


@pytest.fixture(scope="module", params=KINDS)
def tokenizers(request, tmp_path_factory):
    return tokenizer_pair(request.param, tmp_path_factory.mktemp(request.param))


def recipe_windows(reference, examples, max_length, stride):
    """The question-answering recipe's windows: its fast tokenizer, "only_second", overflowing tokens, a stride."""
    return reference(
        [e.question for e in examples],
        [e.context for e in examples],
        truncation="only_second",
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_token_type_ids=True,
    )


def recipe_positions(example, offsets, sequence, cls_index):
    """A window's answer tokens as run_qa's `prepare_train_features` finds them (restated): walking the offsets
    from the context's two ends, the first token where the window does not hold the whole answer. Where the
    answer starts in the window's last context token, its walk runs on past the context (the separator's offsets
    are (0, 0)): the third value says so."""
    context = [t for t, s in enumerate(sequence) if s == 1]
    if example.impossible or not context:
        return cls_index, cls_index, False
    text, start_char = example.answers[0]
    end_char = start_char + len(text)
    first, last = context[0], context[-1]
    if not (offsets[first][0] <= start_char and offsets[last][1] >= end_char):
        return cls_index, cls_index, False
    while first < len(offsets) and offsets[first][0] <= start_char:
        first += 1
    while offsets[last][1] >= end_char:
        last -= 1
    return first - 1, last + 1, first - 1 > context[-1]


def trimmed(text, start, end):
    """Characters [start, end) of `text` without the spaces at either end (as byte-level BPE trims them)."""
    while start < end and text[start] == " ":
        start += 1
    while end > start and text[end - 1] == " ":
        end -= 1
    return start, end


@st.composite
def qa_examples(draw, tokenizer):
    """1 to 3 examples, each answer a run of the context's tokens or any stretch of its characters."""
    examples = []
    for row in range(draw(st.integers(1, 3))):
        context = draw(TEXT)
        spans = tokenizer.backend.encode(context, add_special_tokens=False).offsets
        if draw(st.booleans()) and spans:
            first = draw(st.integers(0, len(spans) - 1))
            last = draw(st.integers(first, min(first + 8, len(spans) - 1)))
            begin, end = spans[first][0], spans[last][1]
        else:
            begin = draw(st.integers(0, len(context) - 1))
            end = draw(st.integers(begin + 1, min(begin + 30, len(context))))
        answers = () if draw(st.integers(0, 5)) == 0 or end <= begin else ((context[begin:end], begin),)
        examples.append(QAExample(f"q{row}", draw(QUESTION), context, answers, row + 1))
    return examples


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), stride=st.integers(0, 12), extra=st.integers(1, 24))
def test_features_equal_the_recipe_with_a_fast_tokenizer(tokenizers, data, stride, extra):
    tokenizer, reference = tokenizers
    examples = data.draw(qa_examples(tokenizer))
    contexts_tokens = [len(tokenizer.tokens(e.context)) for e in examples]
    assume(min(contexts_tokens) > 0)  # the recipe cannot place an answer in a window without context
    max_question = max(len(tokenizer.tokens(e.question)) for e in examples)
    max_length = max_question + pair_layout(tokenizer).added + stride + extra
    features = qa_features(tokenizer, examples, max_length, stride, max_question)
    encoded = recipe_windows(reference, examples, max_length, stride)
    trims = isinstance(reference.backend_tokenizer.post_processor, processors.RobertaProcessing)
    assert len(features) == len(encoded["input_ids"])
    assert features.example.tolist() == encoded["overflow_to_sample_mapping"]
    for i in range(len(features)):
        example = examples[features.example[i]]
        assert features.ids[i].tolist() == encoded["input_ids"][i]
        assert len(features.ids[i]) <= max_length
        sequence = encoded.sequence_ids(i)
        # `tokenizers` gives the template's segment to the context of an example's first window only, its later
        # windows keep the pair's default 1 (huggingface/tokenizers#1908): every window here has the template's
        main = encoded["overflow_to_sample_mapping"].index(features.example[i])
        context_type = encoded["token_type_ids"][main][encoded.sequence_ids(main).index(1)]
        expected = [context_type if s == 1 else t for t, s in zip(encoded["token_type_ids"][i], sequence)]
        assert features.types[i].tolist() == expected
        offsets = [tuple(o) if s == 1 else None for o, s in zip(encoded["offset_mapping"][i], sequence)]
        if trims and main != i:
            # RoBERTa's post-processor trims the spaces off the offsets of an example's first window only (the
            # same `tokenizers` issue); ours trims every window's
            offsets = [o and trimmed(example.context, *o) for o in offsets]
        # a token of spaces alone is trimmed to no characters, placed after its spaces in a first window and
        # before them in later ones: it is empty in both, wherever it is placed
        offsets = [m if r and m and r[0] == r[1] and m[0] == m[1] else r for m, r in zip(features.offsets[i], offsets)]
        assert features.offsets[i] == offsets
        walked = [o or (0, 0) for o in offsets]
        start, end, past_context = recipe_positions(
            example, walked, sequence, encoded["input_ids"][i].index(reference.cls_token_id)
        )
        if past_context:  # the recipe's walk ran past the context: ours stops at its last token
            assert features.start[i] == max(t for t, s in enumerate(sequence) if s == 1)
        else:
            assert features.start[i] == start
        assert features.end[i] == end
        if features.start[i] != NO_ANSWER:  # the tokens found hold the answer
            text, begin = example.answers[0]
            spans = features.spans[i]
            assert spans[features.start[i], 0] <= begin and spans[features.end[i], 1] >= begin + len(text)


def test_every_answer_of_one_or_two_tokens_lands_as_the_recipe_puts_it_at_every_window_edge(tokenizers):
    tokenizer, reference = tokenizers
    context = "Chopin,  born in Żelazowa Wola (1810), left for Paris; 東京は日本の首都です。 naïve café!"
    spans = tokenizer.backend.encode(context, add_special_tokens=False).offsets
    answers = [(i, j) for i in range(len(spans)) for j in (i, i + 1) if j < len(spans) and spans[j][1] > spans[i][0]]
    examples = [
        QAExample(str(n), "Who left?", context, ((context[spans[i][0] : spans[j][1]], spans[i][0]),), n + 1)
        for n, (i, j) in enumerate(answers)
    ]
    max_question = len(tokenizer.tokens("Who left?"))
    max_length = max_question + pair_layout(tokenizer).added + 8  # 8 tokens of context a window, 3 shared
    features = qa_features(tokenizer, examples, max_length, 3, max_question)
    encoded = recipe_windows(reference, examples, max_length, 3)
    assert features.example.tolist() == encoded["overflow_to_sample_mapping"]
    edges, past = 0, 0
    for i in range(len(features)):
        sequence = encoded.sequence_ids(i)
        context_tokens = [t for t, s in enumerate(sequence) if s == 1]
        offsets = [tuple(o) for o in encoded["offset_mapping"][i]]
        example = examples[features.example[i]]
        start, end, past_context = recipe_positions(example, offsets, sequence, 0)
        assert (features.start[i], features.end[i]) == (context_tokens[-1] if past_context else start, end)
        edges += features.start[i] == context_tokens[0] or features.end[i] == context_tokens[-1]
        past += past_context
    assert edges > 20 and past > 5  # answers at windows' first and last tokens, some where the recipe walks past


def test_windows_overlap_by_the_stride_and_the_last_reaches_the_end():
    assert windows(0, 5, 2) == [(0, 0)]
    assert windows(5, 5, 2) == [(0, 5)]
    assert windows(6, 5, 2) == [(0, 5), (3, 6)]
    assert windows(11, 5, 2) == [(0, 5), (3, 8), (6, 11)]
    assert windows(12, 5, 0) == [(0, 5), (5, 10), (10, 12)]


def test_a_question_longer_than_the_window_is_cut_to_max_question(tokenizers):
    tokenizer, _ = tokenizers
    question = "Who wrote the strange book in 1999 and why? " * 40
    example = QAExample("long", question, "She did, in 1999: a short, strange book.", (("She", 0),), 1)
    features = qa_features(tokenizer, [example], max_length=48, stride=4, max_question=16)
    layout = pair_layout(tokenizer)
    question_ids = tokenizer.backend.encode(question.strip(), add_special_tokens=False).ids[:16]
    for ids in features.ids:
        assert len(ids) <= 48
        assert ids[len(layout.before) : len(layout.before) + 16].tolist() == question_ids
    first, last = features.offsets[0][features.start[0]], features.offsets[0][features.end[0]]
    assert features.start[0] != NO_ANSWER and (first[0], last[1]) == (0, 3)


def test_lengths_leaving_no_room_for_new_context_are_refused(tokenizers):
    tokenizer, _ = tokenizers
    added = pair_layout(tokenizer).added
    with pytest.raises(
        ValueError, match=r"^a window of \d+ tokens holds a question of 64 tokens, \d special tokens and a stride of 16"
    ):
        check_lengths(tokenizer, 64 + added + 16, 16, 64)
    check_lengths(tokenizer, 64 + added + 17, 16, 64)
    with pytest.raises(ValueError, match="must be positive"):
        check_lengths(tokenizer, 384, -1, 64)


def test_a_context_without_tokens_gives_one_window_without_an_answer(tokenizers):
    tokenizer, _ = tokenizers
    example = QAExample("empty", "Who?", "\u200b", (), 1)
    features = qa_features(tokenizer, [example], 32, 4, 8)
    assert len(features) == 1 and features.start.tolist() == features.end.tolist() == [NO_ANSWER]


@pytest.mark.parametrize("tokenizers", ["wordpiece"], indirect=True)
def test_a_one_megabyte_context_is_cut_into_a_bounded_number_of_windows_quickly(tokenizers):
    tokenizer, _ = tokenizers
    sentence = "The quick brown fox jumps over the lazy dog; naïve café 東京は日本の首都です。 "
    context = sentence * (1_000_000 // len(sentence)) + "The answer is zebra."
    answer = (("zebra", len(context) - 6),)
    stride = 128
    began = time.perf_counter()
    features = qa_features(tokenizer, [QAExample("big", "What is the answer?", context, answer, 1)], 384, stride)
    seconds = time.perf_counter() - began
    assert seconds < 20, f"{len(features)} windows of a 1-MB context took {seconds:.1f} s"
    inside = [spans[spans[:, 0] >= 0] for spans in features.spans]
    room = 384 - pair_layout(tokenizer).added - len(tokenizer.tokens("What is the answer?"))
    assert all(len(spans) == room for spans in inside[:-1]) and 0 < len(inside[-1]) <= room
    assert all((a[-stride:] == b[:stride]).all() for a, b in itertools.pairwise(inside))  # overlaps of `stride`
    assert inside[0][0, 0] == 0 and inside[-1][-1, 1] == len(context)
    assert len(features) < len(context) / (room - stride)  # a window for every `room - stride` tokens at most
    assert np.flatnonzero(features.start != NO_ANSWER).tolist() == [len(features) - 1]  # the last holds it
    last = features.spans[-1]
    assert context[last[features.start[-1], 0] : last[features.end[-1], 1]] == "zebra"
