"""The model-family registry: one place that says which encoders MLM Studio trains, imports and exports."""

import json

import pytest

from mlm_studio.core.families import BERT, FAMILIES, build_model, family_of
from mlm_studio.core.hf import InteropError, import_model
from mlm_studio.core.settings import ModelConfig, TrainConfig

SMALL = ModelConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def test_bert_is_registered_and_builds_transformers_parameter_names():
    transformers = pytest.importorskip("transformers")
    assert FAMILIES == {"bert": BERT} and family_of(SMALL) is BERT
    ours = set(build_model(SMALL).state_dict())
    theirs = transformers.BertForMaskedLM(transformers.BertConfig(**BERT.to_hf(SMALL))).state_dict()
    assert ours == set(theirs)


def test_a_configuration_survives_config_json_and_a_foreign_one_is_refused(tmp_path):
    assert BERT.from_hf(json.loads(json.dumps(BERT.to_hf(SMALL)))) == SMALL
    with pytest.raises(TypeError, match="no model family takes a TrainConfig"):
        family_of(TrainConfig())
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5"}))
    with pytest.raises(InteropError, match=r"holds a t5 model; MLM Studio reads BERT"):
        import_model(tmp_path)
