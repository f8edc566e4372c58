"""The learning-rate schedule as a table of values, by steps and by the clock."""

import pytest

from mlm_studio.core.config.schedule import learning_rate
from mlm_studio.core.config.sections import TrainConfig

STEPS = TrainConfig(learning_rate=1e-3, warmup_steps=10, max_steps=110, schedule="linear")


@pytest.mark.parametrize(
    ("step", "expected"),
    [(0, 1e-4), (4, 5e-4), (9, 1e-3), (10, 1e-3), (60, 5e-4), (109, 1e-5), (110, 0.0), (200, 0.0)],
)
def test_linear_schedule_over_steps(step, expected):
    assert learning_rate(STEPS, step, 110, elapsed=123.0, warmup_ended_at=0.0) == pytest.approx(expected)


@pytest.mark.parametrize(("step", "expected"), [(10, 1e-3), (60, 5e-4), (110, 0.0)])
def test_cosine_schedule_over_steps(step, expected):
    cosine = TrainConfig(learning_rate=1e-3, warmup_steps=10, max_steps=110, schedule="cosine")
    assert learning_rate(cosine, step, 110, 0.0, 0.0) == pytest.approx(expected, abs=1e-12)


BUDGET = TrainConfig(learning_rate=2e-3, warmup_steps=100, time_budget=15.0, schedule="linear")


@pytest.mark.parametrize(
    ("step", "elapsed", "expected"),
    [
        (99, 4.9, 2e-3),  # the last warm-up step reaches the peak
        (100, 5.0, 2e-3),  # decay starts at the peak where warm-up ended (5 s), not at t = 0
        (150, 10.0, 1e-3),  # half of the 10 s left
        (200, 15.0, 0.0),
        (210, 16.0, 0.0),
    ],
)
def test_with_a_time_budget_the_decay_follows_the_clock_from_the_end_of_warm_up(step, elapsed, expected):
    assert learning_rate(BUDGET, step, 10**9, elapsed, warmup_ended_at=5.0) == pytest.approx(expected)


def test_no_drop_at_the_end_of_warm_up_with_a_time_budget():
    before = learning_rate(BUDGET, 99, 10**9, 4.95, 5.0)
    after = learning_rate(BUDGET, 100, 10**9, 5.0, 5.0)
    assert after == pytest.approx(before)
