import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from mlm_studio.core.config.sections import STRATEGIES, MaskingConfig
from mlm_studio.core.data.masking import IGNORE_INDEX, Masker, MaskKind

VOCAB = 40
SPECIAL = np.zeros(VOCAB, dtype=bool)
SPECIAL[:5] = True  # [PAD] [UNK] [CLS] [SEP] [MASK]
PAD, CLS, SEP, MASK = 0, 2, 3, 4


def random_batch(rng: np.random.Generator, rows: int, length: int, word_chance: float = 0.7):
    """Blocks like the dataset's: [CLS] tokens [SEP] padding, with word ids from random word starts."""
    ids = rng.integers(5, VOCAB, size=(rows, length))
    ids[rng.random((rows, length)) < 0.02] = 1  # a few [UNK]
    lengths = rng.integers(2, length + 1, size=rows)
    positions = np.arange(length)[None, :]
    ids[positions >= lengths[:, None]] = PAD
    ids[:, 0] = CLS
    ids[np.arange(rows), lengths - 1] = SEP
    starts = rng.random((rows, length)) < word_chance
    starts[:, 1] = True
    special = SPECIAL[ids]
    word_ids = np.where(special, -1, np.cumsum(starts & ~special, axis=1) - 1)
    return torch.from_numpy(ids), torch.from_numpy(word_ids)


def seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def check_invariants(batch, ids, word_ids, strategy):
    special = torch.from_numpy(SPECIAL)[ids]
    selected = batch.kinds != MaskKind.UNTOUCHED
    assert not (selected & special).any(), "a special token or padding was selected"
    assert torch.equal(batch.labels != IGNORE_INDEX, selected)
    assert torch.equal(batch.labels[selected], ids[selected])
    assert (batch.input_ids[batch.kinds == MaskKind.MASK] == MASK).all()
    replaced = batch.input_ids[batch.kinds == MaskKind.RANDOM]
    assert not torch.from_numpy(SPECIAL)[replaced].any(), "a random replacement was a special token"
    unchanged = (batch.kinds == MaskKind.KEPT) | (batch.kinds == MaskKind.UNTOUCHED)
    assert torch.equal(batch.input_ids[unchanged], ids[unchanged])
    if strategy != "token":
        for row in range(ids.shape[0]):
            for word in word_ids[row][word_ids[row] >= 0].unique():
                decisions = selected[row][word_ids[row] == word]
                assert decisions.all() or not decisions.any(), "a word was split"


@given(
    seed=st.integers(0, 2**31 - 1),
    rows=st.integers(1, 6),
    length=st.integers(2, 48),
    strategy=st.sampled_from(STRATEGIES),
    rate=st.floats(0.01, 0.99),
    split=st.sampled_from([(0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.5, 0.25, 0.25)]),
)
def test_masking_invariants(seed, rows, length, strategy, rate, split):
    ids, word_ids = random_batch(np.random.default_rng(seed), rows, length)
    config = MaskingConfig(
        rate=rate, mask_fraction=split[0], random_fraction=split[1], keep_fraction=split[2], strategy=strategy
    )
    batch = Masker(config, SPECIAL, MASK)(ids, word_ids, torch.Generator().manual_seed(seed))
    check_invariants(batch, ids, word_ids, strategy)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_same_seed_same_masking(strategy):
    ids, word_ids = random_batch(np.random.default_rng(1), 8, 64)
    masker = Masker(MaskingConfig(strategy=strategy), SPECIAL, MASK)
    a = masker(ids, word_ids, torch.Generator().manual_seed(7))
    b = masker(ids, word_ids, torch.Generator().manual_seed(7))
    c = masker(ids, word_ids, torch.Generator().manual_seed(8))
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.kinds, b.kinds)
    assert not torch.equal(a.kinds, c.kinds)


# Tolerances: about five standard errors of the measured proportion at these sample sizes. Whole words and
# spans select groups of tokens together, which widens the spread of the selection rate (about √5 for spans).
RATE_TOLERANCE = {"token": 0.004, "whole_word": 0.006, "span": 0.010}
SPLIT_TOLERANCE = 0.012


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("rate", [0.15, 0.4])
def test_achieved_rates_match_the_configuration(strategy, rate):
    ids, word_ids = random_batch(np.random.default_rng(3), 2000, 128)
    config = MaskingConfig(rate=rate, strategy=strategy)
    masker = Masker(config, SPECIAL, MASK)
    achieved = masker.achieved(ids, masker(ids, word_ids, seeded(11)))
    counts = {name: (hits.sum(), trials.sum()) for name, (hits, trials) in achieved.items()}
    hits, trials = counts["selected"]
    assert trials > 100_000
    assert hits / trials == pytest.approx(rate, abs=RATE_TOLERANCE[strategy])
    for name, expected in (("mask", 0.8), ("random", 0.1), ("keep", 0.1)):
        assert counts[name][0] / counts[name][1] == pytest.approx(expected, abs=SPLIT_TOLERANCE)


def test_random_replacements_cover_the_non_special_vocabulary_uniformly():
    ids, word_ids = random_batch(np.random.default_rng(4), 2000, 128)
    config = MaskingConfig(rate=0.5, mask_fraction=0.0, random_fraction=1.0, keep_fraction=0.0)
    batch = Masker(config, SPECIAL, MASK)(ids, word_ids, torch.Generator().manual_seed(5))
    counts = torch.bincount(batch.input_ids[batch.kinds == MaskKind.RANDOM], minlength=VOCAB)
    assert counts[:5].sum() == 0
    expected = counts[5:].sum().item() / (VOCAB - 5)
    chi2 = (((counts[5:] - expected) ** 2) / expected).sum().item()
    assert chi2 < 61.1  # chi-square, 34 degrees of freedom, p = 0.001


def chi_square(observed: np.ndarray, probabilities: np.ndarray) -> float:
    expected = observed.sum() * probabilities
    return float(((observed - expected) ** 2 / expected).sum())


def test_span_lengths_follow_the_truncated_geometric_law():
    """Goodness of fit at p = 0.001 (chi-square, 9 degrees of freedom: 27.88), and power against p = 0.3."""
    rng = np.random.default_rng(6)
    ids = torch.from_numpy(rng.integers(5, VOCAB, size=(600, 512)))
    word_ids = torch.arange(512).expand(600, 512).clone()
    config = MaskingConfig(strategy="span")
    batch = Masker(config, SPECIAL, MASK)(ids, word_ids, torch.Generator().manual_seed(9))
    spans = batch.spans.numpy()
    complete = spans[spans[:, 1] + spans[:, 2] < 512]  # spans cut at a row's end are shorter by construction
    assert len(complete) > 10_000
    observed = np.bincount(complete[:, 2], minlength=config.max_span + 1)[1:]
    assert chi_square(observed, config.span_length_probabilities()) < 27.88
    wrong = MaskingConfig(strategy="span", span_p=0.3).span_length_probabilities()
    assert chi_square(observed, wrong) > 27.88
    assert (batch.kinds != MaskKind.UNTOUCHED).sum().item() == spans[:, 2].sum()  # spans account for every token


def test_span_masking_covers_whole_words():
    ids, word_ids = random_batch(np.random.default_rng(8), 50, 128, word_chance=0.5)
    batch = Masker(MaskingConfig(strategy="span", rate=0.3), SPECIAL, MASK)(
        ids, word_ids, torch.Generator().manual_seed(1)
    )
    check_invariants(batch, ids, word_ids, "span")
    for row, first, length, _ in batch.spans.tolist()[:200]:
        words = word_ids[row]
        assert (batch.kinds[row][(words >= first) & (words < first + length)] != MaskKind.UNTOUCHED).all()


def test_without_word_ids_each_token_is_a_word():
    ids, _ = random_batch(np.random.default_rng(2), 4, 32)
    for strategy in ("whole_word", "span"):
        batch = Masker(MaskingConfig(strategy=strategy), SPECIAL, MASK)(ids, None, torch.Generator().manual_seed(0))
        check_invariants(batch, ids, torch.full_like(ids, -1), strategy)


def test_only_special_tokens_select_nothing():
    ids = torch.tensor([[CLS, SEP, PAD, PAD]])
    for strategy in STRATEGIES:
        batch = Masker(MaskingConfig(strategy=strategy, rate=0.99), SPECIAL, MASK)(ids, torch.full_like(ids, -1))
        assert (batch.kinds == MaskKind.UNTOUCHED).all() and (batch.labels == IGNORE_INDEX).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 0.0}, "masking.rate must be between 0 and 1"),
        ({"mask_fraction": 0.7}, "must sum to 1, not 0.9"),
        ({"keep_fraction": -0.1, "mask_fraction": 1.0}, "masking.keep_fraction must be between 0.0 and 1.0"),
        ({"strategy": "words"}, "masking.strategy must be one of token, whole_word, span"),
        ({"span_p": 0.0}, "masking.span_p must be in"),
        ({"max_span": 0}, "masking.max_span must be between"),
    ],
)
def test_config_is_validated_with_readable_messages(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MaskingConfig(**kwargs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_masking_on_cuda_matches_the_invariants():
    ids, word_ids = random_batch(np.random.default_rng(0), 64, 128)
    for strategy in STRATEGIES:
        masker = Masker(MaskingConfig(strategy=strategy), SPECIAL, MASK, device="cuda")
        batch = masker(ids.cuda(), word_ids.cuda(), torch.Generator(device="cuda").manual_seed(0))
        assert batch.input_ids.is_cuda
        check_invariants(
            type(batch)(*(t.cpu() for t in (batch.input_ids, batch.labels, batch.kinds, batch.spans))),
            ids,
            word_ids,
            strategy,
        )


def test_span_masking_treats_each_span_as_one_as_spanbert_does():
    config = MaskingConfig(strategy="span", rate=0.3)
    masker = Masker(config, np.zeros(1000, dtype=bool), mask_id=0)
    ids = torch.randint(1, 1000, (64, 128), generator=torch.Generator().manual_seed(0))
    words = torch.arange(128).expand(64, 128)  # each token a word
    out = masker(ids, words, torch.Generator().manual_seed(1))
    mixed = 0
    for row, start, length, kind in out.spans.tolist():
        mixed += set(out.kinds[row, start : start + length].tolist()) != {kind}
    assert len(out.spans) > 300 and mixed == 0  # [MASK], random or kept: the same for every token of a span
    masked = (out.kinds == MaskKind.MASK).sum().item()
    assert abs(masked / (out.kinds != MaskKind.UNTOUCHED).sum().item() - 0.8) < 0.05  # ~650 spans: within ~3 sd
    per_span = {name: (h.sum(), t.sum()) for name, (h, t) in masker.achieved(ids, out).items() if name != "selected"}
    assert sum(hits for hits, _ in per_span.values()) == len(out.spans) == per_span["mask"][1]
    for name, share in (("mask", 0.8), ("random", 0.1), ("keep", 0.1)):
        hits, spans = per_span[name]
        sd = (share * (1 - share) / spans) ** 0.5
        assert abs(hits / spans - share) < 4 * sd, name  # 4 sd: fails once in ~16,000 seeds


def packed_batch(rng: np.random.Generator, rows: int, length: int):
    """Blocks numbered as the dataset numbers packed ones: a [SEP] between documents takes a word number of
    its own, and [UNK] (special for the masker, not for the dataset) makes words of its own."""
    ids = rng.integers(5, VOCAB, size=(rows, length))
    ids[:, 0], ids[:, -1] = CLS, SEP
    ids[:, 1:-1][rng.random((rows, length - 2)) < 0.03] = SEP
    unknown = rng.random((rows, length)) < 0.04
    ids[:, 1:-1][unknown[:, 1:-1]] = 1
    starts = (rng.random((rows, length)) < 0.7) | (ids == SEP) | unknown | np.roll(unknown, 1, axis=1)
    starts[:, 1] = True
    word_ids = np.where((ids == CLS) | (ids == SEP), -1, np.cumsum(starts, axis=1) - 1)
    return torch.from_numpy(ids), torch.from_numpy(word_ids)


def test_spans_tile_only_words_that_can_be_masked():
    """Every selected span covers real words: each has selected tokens, all of its treatment, and the span
    lengths add up to the words masked, counting words in order among those with a selectable token."""
    ids, word_ids = packed_batch(np.random.default_rng(12), 64, 128)
    assert (torch.diff(word_ids.clamp(min=0), dim=1) > 1).any()  # the numbering has gaps, as the dataset's
    masker = Masker(MaskingConfig(strategy="span", rate=0.3), SPECIAL, MASK)
    out = masker(ids, word_ids, seeded(3))
    selectable = ~torch.from_numpy(SPECIAL)[ids] & (word_ids >= 0)
    assert len(out.spans) > 400
    for row, first, length, kind in out.spans.tolist():
        maskable = word_ids[row][selectable[row]].unique()  # sorted: the n-th is maskable word n
        covered = torch.isin(word_ids[row], maskable[first : first + length]) & selectable[row]
        assert covered.any() and set(out.kinds[row][covered].tolist()) == {kind}
    masked_words = sum(len(word_ids[r][out.kinds[r] != MaskKind.UNTOUCHED].unique()) for r in range(len(ids)))
    assert masked_words == out.spans[:, 2].sum().item()
    hits = [masker.achieved(ids, out)[name][0].sum() for name in ("mask", "random", "keep")]
    assert sum(hits) == len(out.spans)
