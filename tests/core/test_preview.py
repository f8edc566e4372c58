import numpy as np
import pytest

from mlm_studio.core.config.sections import DataConfig, MaskingConfig
from mlm_studio.core.data.dataset import split_blocks, tokenize_corpus
from mlm_studio.core.data.masking import Masker, MaskKind
from mlm_studio.core.data.masking_preview import masking_preview


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
    hits, trials = preview.counts["selected"]
    assert trials > 50_000 and hits / trials == pytest.approx(0.15, abs=0.01)
    per_span = strategy == "span"
    assert preview.counts["mask"][1] == (preview.span_lengths.sum() if per_span else hits)  # the split's unit
    assert (preview.span_lengths.sum() > 0) == (strategy == "span")


def test_preview_is_reproducible_by_seed(blocks, tokenizer):
    masker = Masker.for_tokenizer(MaskingConfig(), tokenizer)
    a = masking_preview(blocks, tokenizer, masker, seed=1, measure=100)
    b = masking_preview(blocks, tokenizer, masker, seed=1, measure=100)
    c = masking_preview(blocks, tokenizer, masker, seed=2, measure=100)
    assert a.samples == b.samples and a.counts == b.counts
    assert a.samples != c.samples
    assert np.array_equal(a.span_lengths, b.span_lengths)
