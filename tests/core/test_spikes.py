"""The spike rule: a loss above the trailing median by more than K scaled MADs, and every non-finite loss."""

import numpy as np
import pytest

from mlm_studio.core.storage.step_file import StepLosses, append_steps, read_steps, truncate_steps_after
from mlm_studio.core.training.spikes import LiveSpikes, SpikeWatch, spike_steps


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


def noisy_run(steps=400, seed=2):
    rng = np.random.default_rng(seed)
    loss = 6.0 - np.linspace(0, 2, steps) + rng.normal(0, 0.05, steps)
    loss[rng.choice(np.arange(12, steps), 12, replace=False)] += rng.uniform(0.5, 3.0, 12)
    loss[[30, 31, 200]] = [np.nan, np.inf, np.nan]
    return losses(loss)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_steps_judged_as_they_come_give_the_spikes_of_the_whole_run(seed):
    whole = noisy_run(seed=seed)
    cuts = np.sort(np.random.default_rng(seed).choice(np.arange(1, len(whole)), 40, replace=False))
    watch, found = SpikeWatch(), []
    for start, end in zip([0, *cuts], [*cuts, len(whole)], strict=True):
        part = StepLosses(whole.steps[start:end], whole.loss[start:end], whole.grad_norm[start:end])
        found += watch.add(part).tolist()
    assert found == spike_steps(whole).tolist() and len(found) >= 10


def test_a_runs_spikes_are_followed_as_its_steps_file_grows_and_found_again_after_a_resume(tmp_path):
    whole = noisy_run()
    entries = list(zip(whole.steps.tolist(), whole.loss.tolist(), whole.grad_norm.tolist(), strict=True))
    written = np.where(np.isfinite(whole.loss), whole.loss, np.nan)  # the file says "nan" for any loss not finite
    live, found = LiveSpikes(tmp_path, "run"), []
    for start in range(0, 300, 10):  # a log window's steps at a time
        append_steps(tmp_path, entries[start : start + 10])
        spikes, loss, again = live.update()
        assert not again
        found += spikes.tolist()
        assert np.array_equal(loss, written[spikes - 1], equal_nan=True)
    assert found == spike_steps(read_steps(tmp_path, "run")).tolist()
    truncate_steps_after(tmp_path, 150)  # a resume from step 150
    append_steps(tmp_path, entries[150:160])
    spikes, _, again = live.update()
    assert again and spikes.tolist() == [s for s in spike_steps(whole).tolist() if s <= 160]
