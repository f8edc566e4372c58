"""The attention maps are the probabilities each layer used: equal to `transformers`' `output_attentions` for
every family (ModernBERT's local layers too), and recording them changes nothing the model computes."""

from itertools import islice

import numpy as np
import pytest
import torch

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.evaluation.explain.attention import AttentionMaps, attention_maps
from mlm_studio.core.evaluation.explain.words import words_of
from mlm_studio.core.models.build import build_model
from mlm_studio.core.models.encoder import recorded_attention
from mlm_studio.core.models.hf_folder import import_model
from tests.core.family_folders import CASES, make_folder

transformers = pytest.importorskip("transformers")

TEXT = "Raise ValueError if the [MASK] is empty, naïve café 中文, and return the list of its items."


@pytest.fixture(scope="module", params=list(CASES))
def folder(request, small_corpus, tmp_path_factory):
    documents = list(islice(small_corpus.iter_documents(), 400))
    return make_folder(request.param, documents, tmp_path_factory.mktemp(request.param))


def test_maps_equal_transformers_output_attentions(folder):
    imported = import_model(folder)
    ours = imported.build_model().eval()
    words = words_of(imported.tokenizer, TEXT)
    theirs = transformers.AutoModelForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        expected = theirs(input_ids=words.tensor, output_attentions=True).attentions
    maps = attention_maps(ours, imported.tokenizer, words)
    assert maps.maps.shape == (len(expected), *expected[0].shape[1:])
    for layer, reference in enumerate(expected):
        np.testing.assert_allclose(maps.maps[layer], reference[0].numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(maps.maps.sum(-1), 1.0, atol=1e-5)


def test_modernbert_local_layers_attend_within_their_window(small_corpus, tmp_path):
    documents = list(islice(small_corpus.iter_documents(), 400))
    imported = import_model(make_folder("modernbert", documents, tmp_path))
    maps = attention_maps(imported.build_model().eval(), imported.tokenizer, words_of(imported.tokenizer, TEXT))
    half = imported.config.local_attention // 2
    offsets = np.arange(maps.maps.shape[-1])
    outside = np.abs(offsets[:, None] - offsets[None, :]) > half
    assert outside.any()
    for layer in range(maps.layers):
        local = layer % imported.config.global_attn_every_n_layers != 0
        assert (maps.maps[layer][:, outside] == 0).all() == local


def test_recording_changes_no_output_and_stops_when_closed(folder):
    imported = import_model(folder)
    model = imported.build_model().eval()
    ids = words_of(imported.tokenizer, TEXT).tensor
    with torch.no_grad():
        plain = model(ids).logits
        with recorded_attention() as recorded:
            recording = model(ids).logits
        after = model(ids).logits
    assert len(recorded) == imported.config.num_hidden_layers
    torch.testing.assert_close(recording, plain, atol=1e-4, rtol=0)  # eager against SDPA: rounding only
    torch.testing.assert_close(after, plain, atol=0, rtol=0)


def test_rollout_is_a_row_stochastic_product_of_layers():
    rng = np.random.default_rng(0)
    raw = rng.random((3, 2, 5, 5)).astype(np.float32)
    maps = AttentionMaps(tuple("abcde"), raw / raw.sum(-1, keepdims=True))
    rolled = maps.rollout()
    np.testing.assert_allclose(rolled.sum(-1), 1.0, atol=1e-9)
    expected = np.eye(5)
    for layer in maps.maps:
        mixed = (layer.mean(0) + np.eye(5)) / 2
        expected = mixed / mixed.sum(-1, keepdims=True) @ expected
    np.testing.assert_allclose(rolled, expected, atol=1e-9)
    uniform = AttentionMaps(tuple("ab"), np.full((1, 1, 2, 2), 0.5, dtype=np.float32))
    np.testing.assert_allclose(uniform.rollout(), [[0.75, 0.25], [0.25, 0.75]])


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_built_here_records_what_transformers_computes(family):
    window = {"local_attention": 8, "global_attn_every_n_layers": 2} if family == "modernbert" else {}
    config = ModelConfig(
        family=family, vocab_size=120, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
        intermediate_size=40, max_position_embeddings=66, **window,
    )  # fmt: skip
    torch.manual_seed(0)
    ours = build_model(config).eval()
    hf_config = FAMILIES[family].to_hf(config)
    config_class = transformers.AutoConfig.for_model(hf_config.pop("model_type"), **hf_config)
    theirs = transformers.AutoModelForMaskedLM.from_config(config_class, attn_implementation="eager").eval()
    theirs.load_state_dict(ours.state_dict())
    ids = torch.randint(5, 120, (1, 30))
    with torch.no_grad(), recorded_attention() as recorded:
        ours.hidden(ids)
        expected = theirs(input_ids=ids, output_attentions=True).attentions
    assert len(recorded) == len(expected) == 3
    for mine, reference in zip(recorded, expected):
        torch.testing.assert_close(mine, reference, atol=1e-5, rtol=0)
