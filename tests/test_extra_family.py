"""A family is described in one place: registered here, and nowhere else, a new family is accepted by `--set`,
offered and edited in the Configuration form, counted by the parameter estimate, trained, exported and imported."""

import json

import pytest
import torch

from mlm_studio.cli import main
from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ConfigError, ModelConfig
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.models.build import build_model
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.runs.run_folder import RunDir
from tests.core.helpers import config_file
from tests.extra_family import SCALED_BERT


@pytest.fixture
def scaled_bert(monkeypatch):
    monkeypatch.setitem(FAMILIES, SCALED_BERT.model_type, SCALED_BERT)
    return SCALED_BERT


def test_the_family_is_configured_and_counted(scaled_bert):
    config = ModelConfig(family="scaled-bert", hidden_size=32, num_attention_heads=2, intermediate_size=64,
                         type_vocab_size=3, logit_scale=2.5)  # fmt: skip
    assert (config.logit_scale, config.type_vocab_size, config.uses("local_attention")) == (2.5, 3, False)
    model = build_model(config)
    unique = {id(p): p.numel() for p in model.parameters()}
    assert config.parameter_count() == sum(unique.values())
    with pytest.raises(ConfigError, match=r"model.logit_scale must be between 0.01 and 100.0, not 0.0"):
        ModelConfig(family="scaled-bert", logit_scale=0.0)
    with pytest.raises(ConfigError, match=r"model.logit_scale applies to scaled-bert models only"):
        ModelConfig(family="bert", logit_scale=3.0)
    assert RunConfig.from_toml(RunConfig(model=config).to_toml()).model == config


def test_set_trains_the_family_and_the_export_imports_with_the_same_logits(scaled_bert, tmp_path, corpus_file, capsys):
    run, exported = tmp_path / "run", tmp_path / "exported"
    args = ["train", "--config", str(config_file(tmp_path)), "--corpus", str(corpus_file), "--out", str(run)]
    code = main([*args, "--max-steps", "4", "--set", "model.family=scaled-bert", "--set", "model.logit_scale=2.0"])
    assert code == 0, capsys.readouterr().err
    trained = RunDir(run).config.model
    assert (trained.family, trained.logit_scale) == ("scaled-bert", 2.0)

    export_model(run, exported)
    written = json.loads((exported / "config.json").read_text())
    assert (written["model_type"], written["architectures"], written["logit_scale"]) == (
        "scaled-bert", ["ScaledBertForMaskedLM"], 2.0,
    )  # fmt: skip
    imported = import_model(exported)
    assert imported.config == trained
    ids = torch.tensor([[2, 10, 11, 12, 3]])
    model = imported.build_model().eval()
    unscaled = model.cls.predictions(model.hidden(ids))
    torch.testing.assert_close(model(ids).logits, 2.0 * unscaled)


def test_the_form_offers_the_family_and_its_own_field(scaled_bert, qtbot):
    from mlm_studio.ui.panels.config.panel import ConfigPanel
    from mlm_studio.ui.workspace import Workspace

    panel = ConfigPanel(Workspace())
    qtbot.addWidget(panel)
    panel.show()
    family = panel.editors[("model", "family")]
    assert family.itemText(family.findData("scaled-bert")) == "Scaled BERT"
    assert "Scaled BERT (BERT with its logits scaled)" in family.toolTip()
    family.setCurrentIndex(family.findData("scaled-bert"))
    scale = panel.editors[("model", "logit_scale")]
    assert scale.isVisible() and not panel.editors[("model", "local_attention")].isVisible()
    scale.clear()
    qtbot.keyClicks(scale, "3.5")
    assert panel.error == ""
    assert (panel.workspace.config.model.family, panel.workspace.config.model.logit_scale) == ("scaled-bert", 3.5)
