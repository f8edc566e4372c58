"""A task of many classes keeps its scores small: past `MATRIX_LABELS` labels no dense confusion matrix is kept
(5,000 classes made a 75 MB line in metrics.jsonl), but the most frequent mistakes, counted exactly."""

import json
from collections import Counter
from dataclasses import replace

import numpy as np

from mlm_studio.core.finetune.scores import MATRIX_LABELS, TOP_CONFUSIONS, class_scores, per_class_rows
from mlm_studio.core.runs.records import TestRecord


def test_five_thousand_classes_keep_their_top_confusions_not_a_matrix():
    rng = np.random.default_rng(0)
    labels = [f"class {i}" for i in range(5_000)]
    true = rng.integers(0, 5_000, 40_000)
    predicted = np.where(rng.random(40_000) < 0.6, true, rng.integers(0, 50, 40_000))  # mistakes onto 50 classes
    scores = class_scores(true, predicted, labels)
    assert scores.confusion == () and len(scores.confusions) == TOP_CONFUSIONS
    counted = Counter((int(t), int(p)) for t, p in zip(true, predicted, strict=True) if t != p)
    expected = sorted(counted.items(), key=lambda item: (-item[1], item[0]))[:TOP_CONFUSIONS]  # ties: labels' order
    assert list(scores.confusions) == [(labels[t], labels[p], n) for (t, p), n in expected]
    record = TestRecord(1, tokens_seen=0, elapsed=0.0, epoch=1.0, loss=0.5, accuracy=scores.accuracy,
                        macro_f1=scores.macro_f1, best_step=1, labels=tuple(labels), per_class=(),
                        confusion=scores.confusion, confusions=scores.confusions)  # fmt: skip
    assert len(json.dumps(record.to_dict())) < 300_000  # was 75 MB with the matrix


def test_a_few_classes_keep_their_matrix():
    labels = [f"c{i}" for i in range(MATRIX_LABELS)]
    true = np.arange(200) % MATRIX_LABELS
    scores = class_scores(true, (true + 1) % MATRIX_LABELS, labels)
    assert len(scores.confusion) == MATRIX_LABELS and scores.confusions == ()
    assert sum(map(sum, scores.confusion)) == 200


def _record(scores, labels):
    per_class = tuple((c.label, c.precision, c.recall, c.f1, c.support) for c in scores.per_class)
    return TestRecord(1, tokens_seen=0, elapsed=0.0, epoch=1.0, loss=0.5, accuracy=scores.accuracy,
                      macro_f1=scores.macro_f1, best_step=1, labels=tuple(labels), per_class=per_class,
                      confusion=scores.confusion, confusions=scores.confusions)  # fmt: skip


def test_an_inside_tag_the_test_words_lack_is_shown_absent_not_as_a_failure():
    """A tagger trained on B- tags only: the I- tag added for later pieces has no test word (support 0)."""
    from mlm_studio.commands.finetune import _per_class_table

    labels = ["O", "B-PER", "I-PER"]
    true = np.array([0, 1, 0, 1, 0])
    never = _record(class_scores(true, np.array([0, 1, 0, 0, 0]), labels), labels)
    assert per_class_rows(never)[2] == ("I-PER", "—", "—", "—", "0 (absent)")
    assert _per_class_table(never).splitlines()[3].split() == ["I-PER", "—", "—", "—", "0", "(absent)"]
    guessed = _record(class_scores(true, np.array([0, 1, 2, 1, 0]), labels), labels)  # predicted once, wrongly
    assert per_class_rows(guessed)[2] == ("I-PER", "0.0%", "—", "—", "0 (absent)")
    many = [f"c{i}" for i in range(MATRIX_LABELS + 1)]  # no matrix: the top confusions tell what was predicted
    wide = _record(class_scores(np.array([0, 1]), np.array([0, MATRIX_LABELS]), many), many)
    assert per_class_rows(wide)[MATRIX_LABELS][1] == "0.0%" and per_class_rows(wide)[2][1] == "—"
    assert per_class_rows(wide)[0] == ("c0", "100.0%", "100.0%", "100.0%", "1")


def test_a_label_the_test_data_lacks_has_no_recall_or_f1_in_the_json_either():
    labels = ["neg", "mid", "pos"]
    true = np.array([0, 2, 0, 2])
    never = _record(class_scores(true, np.array([0, 2, 2, 2]), labels), labels)
    guessed = _record(class_scores(true, np.array([0, 1, 0, 2]), labels), labels)
    assert json.loads(json.dumps(never.to_dict()))["per_class"][1] == ["mid", None, None, None, 0]
    assert json.loads(json.dumps(guessed.to_dict()))["per_class"][1] == ["mid", 0.0, None, None, 0]
    assert never.per_class[0] == ("neg", 1.0, 0.5, 2 / 3, 2)  # a label present: its scores as before
    older = (("neg", 1.0, 0.5, 2 / 3, 2), ("mid", 0.0, 0.0, 0.0, 0), ("pos", 2 / 3, 1.0, 0.8, 2))
    written_before = replace(never, per_class=older)
    assert per_class_rows(written_before)[1] == ("mid", "—", "—", "—", "0 (absent)")  # a record of an older run
