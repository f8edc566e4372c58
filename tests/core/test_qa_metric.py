"""SQuAD's metric: exact match and F1 equal an independent restatement of the official v2.0 evaluation script on
random answers (articles, punctuation, case, spaces, unanswerable questions), hand-computed cases hold, and a
file's figures split into questions with an answer and without, in percent."""

import collections
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlm_studio.core.finetune.qa.data import QAExample
from mlm_studio.core.finetune.qa.metric import exact_match, f1, normalize_answer, squad_scores


def official_normalize(s):
    """The official script's normalisation, step by step as it is written there."""

    def remove_articles(text):
        return re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_tokens(s):
    return official_normalize(s).split() if s else []


def official_exact(gold, prediction):
    return int(official_normalize(gold) == official_normalize(prediction))


def official_f1(gold, prediction):
    gold_tokens, predicted_tokens = official_tokens(gold), official_tokens(prediction)
    common = collections.Counter(gold_tokens) & collections.Counter(predicted_tokens)
    same = sum(common.values())
    if len(gold_tokens) == 0 or len(predicted_tokens) == 0:
        return int(gold_tokens == predicted_tokens)
    if same == 0:
        return 0
    precision, recall = same / len(predicted_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def official_scores(golds, prediction):
    """(exact, f1) of one question as the official script's `get_raw_scores` takes them over its gold answers."""
    golds = [g for g in golds if official_normalize(g)] or [""]
    return max(official_exact(g, prediction) for g in golds), max(official_f1(g, prediction) for g in golds)


PIECES = ["The", "the", "a", "An", "an", "cat", "Cat", "sat", "mat", "théâtre", "1999", "U.S.", "don't", ",", ".",
          "!", "-", "東京", "(x)", "anthem", "theatre", "a.", "the-end"]  # fmt: skip
ANSWER = st.lists(st.sampled_from(PIECES), max_size=6).flatmap(
    lambda words: st.lists(st.sampled_from([" ", "  ", "\t", ""]), min_size=len(words), max_size=len(words)).map(
        lambda gaps: "".join(w + g for w, g in zip(words, gaps))
    )
)


@settings(max_examples=150, deadline=None)
@given(prediction=ANSWER, golds=st.lists(ANSWER, max_size=4))
def test_scores_equal_the_official_script(prediction, golds):
    assert normalize_answer(prediction) == official_normalize(prediction)
    expected_exact, expected_f1 = official_scores(golds, prediction)
    assert exact_match(prediction, golds) == expected_exact
    assert f1(prediction, golds) == pytest.approx(expected_f1, abs=1e-12)


def test_hand_computed_cases():
    assert normalize_answer("  The Cat, sat on  a MAT! ") == "cat sat on mat"
    assert normalize_answer("an anthem at the theatre") == "anthem at theatre"  # whole words only
    assert exact_match("the cat", ["Cat", "dog"]) == 1.0
    assert exact_match("a cat sat", ["cat"]) == 0.0
    # "cat sat on mat" against "cat on mat": 3 common, precision 3/4, recall 3/3 -> F1 6/7
    assert f1("The cat sat on the mat", ["cat on mat"]) == pytest.approx(6 / 7)
    assert f1("cat cat", ["cat"]) == pytest.approx(2 / 3)  # precision 1/2, recall 1
    assert f1("dog", ["cat", "a dog"]) == 1.0  # the best over the gold answers
    assert (exact_match("", []), f1("", [])) == (1.0, 1.0)  # unanswerable, and said so
    assert (exact_match("cat", []), f1("cat", [])) == (0.0, 0.0)  # unanswerable, but answered
    assert (exact_match("", ["cat"]), f1("", ["cat"])) == (0.0, 0.0)
    assert (exact_match("", ["the"]), f1("the", ["a"])) == (1.0, 1.0)  # gold answers of articles alone count as ""


def example(answers):
    return QAExample("q", "Which?", "the cat sat", tuple((text, 0) for text in answers), 1)


def test_a_file_scores_in_percent_with_answered_and_unanswerable_questions_apart():
    examples = [example(["the cat"]), example(["the cat sat"]), example([]), example([])]
    scores = squad_scores(examples, ["cat", "cat", "", "cat"])
    # exact: 1, 0, 1, 0; F1: 1, 2 * (1 * 1/2) / (1 + 1/2) = 2/3, 1, 0
    assert scores.exact == pytest.approx(50.0) and scores.f1 == pytest.approx(100 * (1 + 2 / 3 + 1) / 4)
    assert (scores.has_answer_exact, scores.has_answer_f1, scores.has_answer_total) == (
        pytest.approx(50.0), pytest.approx(100 * (1 + 2 / 3) / 2), 2
    )  # fmt: skip
    assert (scores.no_answer_exact, scores.no_answer_f1, scores.no_answer_total) == (50.0, 50.0, 2)
    assert scores.total == 4
    only_answered = squad_scores(examples[:2], ["cat", "the cat sat"])
    assert (only_answered.exact, only_answered.no_answer_exact, only_answered.no_answer_total) == (100.0, None, 0)
    with pytest.raises(ValueError, match="4 questions but 1 predictions"):
        squad_scores(examples, ["cat"])
