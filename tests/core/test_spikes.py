"""The spike rule: a loss above the trailing median by more than K scaled MADs, and every non-finite loss."""

import numpy as np

from mlm_studio.core.storage.step_file import StepLosses
from mlm_studio.core.training.spikes import spike_steps


def losses(values):
    values = np.asarray(values, dtype=float)
    return StepLosses(np.arange(1, len(values) + 1), values, np.ones(len(values)))


def test_a_jump_over_noise_is_a_spike_and_the_noise_is_not():
    noise = np.random.default_rng(0).normal(0, 0.05, 300)
    loss = 6.0 - np.linspace(0, 2, 300) + noise
    loss[[120, 121, 250]] += [2.0, 1.5, 1.0]  # a span of two steps and one alone
    loss[200] = np.nan
    assert spike_steps(losses(loss)).tolist() == [121, 122, 201, 251]


def test_the_rule_is_median_plus_k_mads_of_the_window_before():
    base = 3.0 + np.random.default_rng(1).uniform(-0.1, 0.1, 80)
    before = base[-50:]
    median = np.median(before)
    bar = median + 5 * 1.4826 * np.median(np.abs(before - median))
    assert spike_steps(losses(base)).tolist() == []
    assert spike_steps(losses([*base, bar - 1e-6])).tolist() == []
    assert spike_steps(losses([*base, bar + 1e-6])).tolist() == [81]
    halfway = losses([*base, (bar + median) / 2])  # 2.5 spreads above the median
    assert 81 not in spike_steps(halfway) and 81 in spike_steps(halfway, k=2.0)


def test_a_flat_stretch_is_judged_against_one_percent_of_its_level():
    assert spike_steps(losses([2.0] * 20 + [2.09])).tolist() == []
    assert spike_steps(losses([2.0] * 20 + [2.11])).tolist() == [21]


def test_the_first_steps_are_never_spikes():
    assert spike_steps(losses([5.0, 1.0, 1.0, 9.0, 1.0])).tolist() == []
    assert spike_steps(losses([])).tolist() == []
