import numpy as np
import pytest

from mlm_studio.core.config.sections import DataConfig, MaskingConfig
from mlm_studio.core.data.dataset import split_blocks, tokenize_corpus
from mlm_studio.core.data.masking import Masker, MaskKind
from mlm_studio.core.data.masking_preview import masking_preview, measured_rate


@pytest.fixture(scope="module")
def blocks(builtin_corpus, tokenizer, tmp_path_factory):
    data = tokenize_corpus(builtin_corpus, tokenizer, root=tmp_path_factory.mktemp("datasets"))
    return split_blocks(data, DataConfig(), tokenizer)[0]


@pytest.mark.parametrize("strategy", ["token", "whole_word", "span"])
def test_preview_shows_real_blocks_and_measures_rates(blocks, tokenizer, strategy):
    masker = Masker.for_tokenizer(MaskingConfig(strategy=strategy), tokenizer)
    preview = masking_preview(blocks, tokenizer, masker, seed=3, samples=4, measure=500)
    assert len(preview.samples) == 4 and preview.blocks_measured == 500
    for sample in preview.samples:
        assert sample[0].original == "[CLS]" and sample[0].special and sample[-1].original == "[SEP]"
        for token in sample:
            if token.kind == MaskKind.MASK:
                assert token.shown == "[MASK]"
            elif token.kind in (MaskKind.UNTOUCHED, MaskKind.KEPT):
                assert token.shown == token.original
            assert not (token.special and token.kind != MaskKind.UNTOUCHED)
    selected = preview.rates["selected"]
    assert selected.trials > 50_000 and selected.share == pytest.approx(0.15, abs=0.01)
    per_span = strategy == "span"
    assert preview.rates["mask"].trials == (preview.span_lengths.sum() if per_span else selected.hits)  # the unit
    assert (preview.span_lengths.sum() > 0) == (strategy == "span")


def test_preview_is_reproducible_by_seed(blocks, tokenizer):
    masker = Masker.for_tokenizer(MaskingConfig(), tokenizer)
    a = masking_preview(blocks, tokenizer, masker, seed=1, measure=100)
    b = masking_preview(blocks, tokenizer, masker, seed=1, measure=100)
    c = masking_preview(blocks, tokenizer, masker, seed=2, measure=100)
    assert a.samples == b.samples and a.rates == b.rates
    assert a.samples != c.samples
    assert np.array_equal(a.span_lengths, b.span_lengths)


SEEDS = range(20)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["token", "whole_word", "span"])
@pytest.mark.parametrize("rate", [0.15, 0.30])
def test_measured_rates_hold_the_configured_ones_within_their_95_percent_intervals(blocks, tokenizer, strategy, rate):
    """Over 20 seeds, each 95% interval holds the configured value about 95% of the time (at least 15 of 20:
    a correct masker fails this once in ~3,000 cases, one off by 4% as the span split was, every time), and its
    width matches the spread of the estimates from seed to seed (a binomial interval over tokens would be
    about three times too narrow for spans). The split counts every span."""
    config = MaskingConfig(strategy=strategy, rate=rate)
    masker = Masker.for_tokenizer(config, tokenizer)
    configured = {"selected": rate, "mask": 0.8, "random": 0.1, "keep": 0.1}
    previews = [masking_preview(blocks, tokenizer, masker, seed, samples=1, measure=256) for seed in SEEDS]
    for name, expected in configured.items():
        rates = [preview.rates[name] for preview in previews]
        covered = sum(rate.low <= expected <= rate.high for rate in rates)
        assert covered >= 15, (name, covered, [round(rate.share, 4) for rate in rates])
        spread = np.std([rate.share for rate in rates], ddof=1)
        standard_error = np.mean([(rate.high - rate.low) / (2 * 1.96) for rate in rates])
        assert 0.6 < spread / standard_error < 1.6, (name, spread, standard_error)
    for preview in previews:
        split = [preview.rates[name] for name in ("mask", "random", "keep")]
        counted = preview.span_lengths.sum() if strategy == "span" else preview.rates["selected"].hits
        assert sum(rate.hits for rate in split) == counted and {rate.trials for rate in split} == {counted}


def test_the_interval_is_binomial_for_independent_tokens_and_wider_for_groups():
    rng = np.random.default_rng(0)
    trials = np.full(2000, 100)
    alone = measured_rate(rng.binomial(trials, 0.15), trials)
    binomial_half = 1.96 * np.sqrt(0.15 * 0.85 / trials.sum())
    assert (alone.high - alone.low) / 2 == pytest.approx(binomial_half, rel=0.05)
    grouped = measured_rate(5 * rng.binomial(trials // 5, 0.15), trials)  # groups of five tokens together
    assert (grouped.high - grouped.low) / 2 == pytest.approx(np.sqrt(5) * binomial_half, rel=0.05)
    assert measured_rate(np.array([0]), np.array([0])) == type(alone)(0, 0, 0.0, 1.0)
