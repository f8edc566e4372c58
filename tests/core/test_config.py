import re

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from mlm_studio.core.config.presets import PRESETS, preset
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import SECTIONS, ConfigError, DataConfig, ModelConfig, TrainConfig
from mlm_studio.core.models.bert import BertForMaskedLM

SECTION_FIELDS = {name: list(kind.field_defaults()) for name, kind in SECTIONS.items()}


@pytest.mark.parametrize(
    ("name", "layers", "hidden"),
    [("tiny", 2, 128), ("mini", 4, 256), ("small", 4, 512), ("medium", 8, 512), ("base", 12, 768)],
)
def test_presets_have_bert_shapes(name, layers, hidden):
    model = preset(name).model
    assert (model.num_hidden_layers, model.hidden_size) == (layers, hidden)
    assert model.num_attention_heads == hidden // 64 and model.intermediate_size == 4 * hidden
    assert preset(name).preset == name


def test_quickstart_exists_and_unknown_presets_are_named():
    assert "quickstart" in PRESETS
    with pytest.raises(ConfigError, match=r"unknown preset 'huge'; choose one of modern, quickstart, electra, tiny"):
        preset("huge")


@pytest.mark.parametrize(
    "model",
    [
        ModelConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96),
        ModelConfig(vocab_size=500, hidden_size=64, num_attention_heads=2, position_embedding_type="sinusoidal"),
        ModelConfig(vocab_size=500, hidden_size=64, num_attention_heads=2, pre_layer_norm=True),
    ],
)
def test_parameter_count_matches_the_model(model):
    counted = sum(p.numel() for p in BertForMaskedLM(model).parameters())
    assert model.parameter_count() == counted


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: ModelConfig(hidden_size=100, num_attention_heads=3),
            r"model.hidden_size \(100\) must be a multiple of model.num_attention_heads",
        ),
        (lambda: ModelConfig(hidden_dropout_prob=1.0), "hidden_dropout_prob must be in"),
        (lambda: ModelConfig(position_embedding_type="rotary"), "position_embedding_type must be one of"),
        (lambda: TrainConfig(learning_rate=0), "training.learning_rate must be between 0 and 1"),
        (lambda: TrainConfig(batch_size=0), "training.batch_size must be between 1 and 65,536, not 0"),
        (lambda: TrainConfig(device="gpu"), "device must be auto, cpu, cuda, cuda:N or mps"),
        (lambda: TrainConfig(precision="fp8"), "precision must be one of auto, fp32, bf16, fp16"),
        (lambda: TrainConfig(schedule="step"), "schedule must be one of linear, cosine, constant"),
        (
            lambda: RunConfig(model=ModelConfig(max_position_embeddings=64), data=DataConfig(max_seq_len=128)),
            r"data.max_seq_len \(128\) must not exceed model.max_position_embeddings \(64\)",
        ),
    ],
)
def test_invalid_values_fail_at_construction_with_readable_messages(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_toml_round_trip(tmp_path):
    config = RunConfig(
        model=ModelConfig(hidden_size=64, num_attention_heads=2, pre_layer_norm=True),
        training=TrainConfig(learning_rate=3e-4, device="cuda:1", precision="bf16", epochs=1.5),
        preset="custom",
    )
    path = config.save(tmp_path / "config.toml")
    assert RunConfig.load(path) == config
    text = path.read_text()
    assert "[model]" in text and "hidden_size = 64" in text and 'device = "cuda:1"' in text


@given(st.text(max_size=80))
@example('line one\nline "two"')
@example('C:\\runs\\new\t"quoted" \\" \'\'\' """ é 日本 \U0001f600')
@example("\r\x00\x1f\x7f\u2028")
def test_any_preset_survives_the_toml_round_trip(preset):
    config = RunConfig(preset=preset)
    assert RunConfig.from_toml(config.to_toml(), complete=True) == config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[model\n", "not valid TOML"),
        ("[model]\nhidden = 3\n", r"unknown field\(s\) in \[model\]: hidden"),
        ("[optimizer]\n", r"unknown section\(s\) optimizer"),
        ('[model]\nhidden_size = "big"\n', "model.hidden_size must be int, not str"),
        ("[training]\nlearning_rate = 2\n", r"training.learning_rate must be between 0 and 1"),
    ],
)
def test_bad_toml_is_refused_clearly(text, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig.from_toml(text, "my.toml")


def test_integers_are_accepted_where_floats_are_expected():
    assert RunConfig.from_toml("[training]\nweight_decay = 0\n").training.weight_decay == 0.0


def test_epochs_decide_the_step_count():
    config = RunConfig(training=TrainConfig(batch_size=4, grad_accumulation=2, epochs=2))
    assert config.steps_for(100) == 25
    assert RunConfig(training=TrainConfig(max_steps=7)).steps_for(100) == 7


def test_tied_decoder_is_counted_once():
    model = BertForMaskedLM(ModelConfig(vocab_size=100, hidden_size=16, num_attention_heads=1))
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    assert torch.equal(model.cls.predictions.bias, model.cls.predictions.decoder.bias)


@pytest.mark.parametrize(("preset", "words"), [(None, "not NoneType"), (5, "not int (5)"), ({"a": 1}, "not dict"),
                                               ("a\ud800b", "a character that is not text")])  # fmt: skip
def test_a_preset_that_is_not_text_is_refused_naming_the_file(preset, words):
    with pytest.raises(ConfigError, match=rf"^run\.json: preset .*{re.escape(words)}"):
        RunConfig.from_dict({"preset": preset}, "run.json")


DEPTH = 100_000


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("deep.json", "[" * DEPTH + "]" * DEPTH, r"^deep\.json nests lists or tables too deeply"),
        ("deep.json", '{"training": ' + '{"a": ' * DEPTH + "1" + "}" * DEPTH + "}", "nests lists or tables too deeply"),
        ("deep.toml", "a = " + "[" * DEPTH + "]" * DEPTH, r"^deep\.toml nests lists or tables too deeply"),
        ("twice.json", '{"training": {"max_steps": 5, "max_steps": 7}}', r"^twice\.json: 'max_steps' appears twice"),
        ("twice.json", '{"preset": "a", "data": {}, "preset": "b"}', r"'preset' appears twice"),
        ("long.json", '{\n"training": {"max_steps": ' + "9" * 5000 + "}}", r"^long\.json, line 2: a number of 5,000 d"),
        ("long.toml", "[training]\nseed = 1\nmax_steps = " + "9" * 5000, r"^long\.toml, line 3: a number of 5,000 d"),
        ("big.json", '{"training": {"seed": 1' + "0" * 30 + "}}", r"training\.seed is too large: a number of 31 dig"),
        ("nan.json", '{"training": {"learning_rate": NaN}}', "training.learning_rate must be a finite number, not nan"),
        ("inf.json", '{"training": {"max_steps": Infinity}}', r"training\.max_steps must be int, not float \(inf\)"),
        ("list.json", '{"model": {"family": ["bert"]}}', r"model\.family must be str, not list \(\['bert'\]\)"),
        ("table.json", '{"data": {"packing": {"a": 1}}}', r"data\.packing must be bool, not dict \(\{'a': 1\}\)"),
        ("none.json", '{"masking": {"rate": null}}', r"masking\.rate must be float, not NoneType \(None\)"),
        ("own.json", '{"model": {"family": "electra", "embedding_size": "x"}}', "model.embedding_size must be int"),
        ("section.json", '{"training": [1, 2]}', r"\[training\] must be a table"),
        ("odd.json", '{"training": {"\\ud800": 1}}', r"unknown field\(s\) in \[training\]: \\ud800$"),
    ],
)
def test_a_hostile_config_file_is_one_config_error_naming_the_file_and_field(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    with pytest.raises(ConfigError, match=message) as caught:
        RunConfig.load(path)
    str(caught.value).encode("utf-8")  # printable as it is


def test_a_generator_too_small_for_a_model_names_the_generator_size():
    words = (r"^--set: training\.generator_size \(0\.001\) makes the generator too small \(its hidden_size must be "
             r"between 8 and 16,384, not 1\); raise training\.generator_size$")  # fmt: skip
    with pytest.raises(ConfigError, match=words):
        preset("electra").with_values({"training.generator_size": 0.001})
    assert preset("electra").with_values({"training.generator_size": 0.1}).training.generator_size == 0.1


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**17, max_value=10**4000)  # within what hypothesis prints
    | st.floats()  # nan and infinities included
    | st.text(max_size=20)
)


def json_values(leaves):
    def nested(inner):
        return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)

    return st.recursive(JSON_SCALARS, nested, max_leaves=leaves)


def section_values(section):
    """A section's table: its own fields (and now and then another name) holding any JSON value."""
    names = st.sampled_from(SECTION_FIELDS[section]) | st.text(max_size=8)
    return st.dictionaries(names, json_values(3), max_size=5) | json_values(3)


CONFIGS = st.fixed_dictionaries(
    {},
    optional={"preset": json_values(3), "extra": json_values(2)}
    | {section: section_values(section) for section in SECTION_FIELDS},
)


def config_or_config_error(read):
    try:
        assert isinstance(read(), RunConfig)
    except ConfigError as exc:
        str(exc).encode("utf-8")


@given(CONFIGS | json_values(8))
@example({"training": {"learning_rate": 10**400, "max_steps": 10**400}})
@example(None)
def test_any_json_value_gives_a_config_or_a_config_error(raw):
    config_or_config_error(lambda: RunConfig.from_dict(raw, "run.json"))


@given(CONFIGS)
def test_any_json_or_toml_file_gives_a_config_or_a_config_error(tmp_path_factory, raw):
    import json

    import tomli_w

    folder = tmp_path_factory.mktemp("files")
    (folder / "run.json").write_text(json.dumps(raw), encoding="utf-8")
    config_or_config_error(lambda: RunConfig.load(folder / "run.json"))
    try:
        toml = tomli_w.dumps(raw)
    except (TypeError, ValueError):  # None and some nestings have no TOML spelling
        return
    (folder / "run.toml").write_text(toml, encoding="utf-8")
    config_or_config_error(lambda: RunConfig.load(folder / "run.toml"))


SETTINGS = [f"{section}.{name}" for section, names in SECTION_FIELDS.items() for name in names]


@given(st.dictionaries(st.sampled_from(SETTINGS) | st.text(max_size=12), st.text(max_size=30), max_size=4))
@example({"training.max_steps": "9" * 5000, "training.learning_rate": "1" + "0" * 400})
@example({"model.hidden_size": "[" * 5000 + "]" * 5000, "training.seed": "-1"})
def test_any_set_values_give_a_config_or_a_config_error(typed):
    from mlm_studio.core.config.run_config import value_from_text

    values = {key: value_from_text(text) for key, text in typed.items()}
    config_or_config_error(lambda: RunConfig().with_values(values))


def test_a_file_naming_a_preset_starts_from_it_and_its_own_values_win(tmp_path):
    from mlm_studio.core.config.presets import PRESETS, preset

    (tmp_path / "a.json").write_text('{"preset": "tiny", "training": {"learning_rate": 0.01}}', encoding="utf-8")
    loaded = RunConfig.load(tmp_path / "a.json", presets=preset)
    assert loaded.model == PRESETS["tiny"].model and loaded.training.learning_rate == 0.01
    assert loaded.preset == "tiny"
    (tmp_path / "b.toml").write_text('preset = "modern"\n[model]\nfamily = "bert"\n', encoding="utf-8")
    bert = RunConfig.load(tmp_path / "b.toml", presets=preset)
    assert (bert.model.family, bert.model.hidden_size) == ("bert", PRESETS["modern"].model.hidden_size)
    for name, config in PRESETS.items():  # a saved configuration reads back as it was
        config.save(tmp_path / f"{name}.toml")
        assert RunConfig.load(tmp_path / f"{name}.toml", presets=preset) == config, name
    (tmp_path / "c.json").write_text('{"preset": "x/../../y"}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"c.json: unknown preset 'x/../../y'; choose one of modern"):
        RunConfig.load(tmp_path / "c.json", presets=preset)
