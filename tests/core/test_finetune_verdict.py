"""The comparison: its contenders, read from what a run started from, and its verdict:
pre-training helped only when your model's every seed beats every seed from scratch;
overlapping seeds are said as no clear difference, and a score below on every seed as not helping."""

import pytest

from mlm_studio.core.finetune.compare import SCRATCH_LABEL, STARTING, YOURS, Contender, Outcome, contenders, verdict
from mlm_studio.core.runs.run_folder import INITIAL


def outcome(label, scores):
    return Outcome(Contender(label, label), accuracy=list(scores), score=list(scores))


def test_above_on_every_seed_is_said_as_helping():
    said = verdict([outcome(YOURS, [0.80, 0.82, 0.84]), outcome(SCRATCH_LABEL, [0.60, 0.62, 0.79])], "macro-F1")
    assert said == (
        "Pre-training helped: your model's macro-F1 is above the same architecture from scratch's on every seed "
        "(82.0% against 67.0% on average)."
    )


def test_overlapping_seeds_are_said_as_not_helping_though_the_mean_is_higher():
    said = verdict([outcome(YOURS, [0.70, 0.90, 0.80]), outcome(SCRATCH_LABEL, [0.75, 0.76, 0.77])], "macro-F1")
    assert said.startswith("Pre-training did not help: ")
    assert "not clearly different" in said and "the seeds' scores overlap (80.0% against 76.0% on average)" in said


def test_below_on_every_seed_and_the_starting_model_is_compared_too():
    found = [
        outcome(YOURS, [0.50, 0.52, 0.51]),
        outcome(STARTING, [0.40, 0.41, 0.42]),
        outcome(SCRATCH_LABEL, [0.60, 0.61, 0.62]),
    ]
    said = verdict(found, "entity F1")
    assert said == (
        "Pre-training did not help: your model's entity F1 is below the same architecture from scratch's on every "
        "seed (51.0% against 61.0% on average), and is above its starting model's on every seed (51.0% against "
        "41.0% on average)."
    )


def test_without_a_score_from_scratch_there_is_no_verdict():
    said = verdict([outcome(YOURS, [0.9]), Outcome(Contender(SCRATCH_LABEL, "x"))], "macro-F1")
    assert said.startswith("No verdict yet")


@pytest.mark.parametrize(
    "record, starting",
    [
        ('{"kind": "hub", "source": "org/encoder"}', ["org/encoder"]),
        ('{"kind": "hub", "source": "org/enc', []),  # cut short
        ('["org/encoder"]', []),  # not an object
        (None, []),  # a run from scratch
    ],
)
def test_contenders_read_what_a_run_started_from_and_survive_a_damaged_record(tmp_path, record, starting):
    (tmp_path / "config.toml").write_text("")
    if record is not None:
        (tmp_path / INITIAL).mkdir()
        (tmp_path / INITIAL / "origin.json").write_text(record)
    found = contenders(str(tmp_path))
    assert [c.label for c in found] == [YOURS, *([STARTING] * len(starting)), SCRATCH_LABEL]
    assert [str(c.model) for c in found if c.label == STARTING] == starting
