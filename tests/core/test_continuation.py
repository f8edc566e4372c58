"""Continuing an imported model starts from the continuation recipe; a new model keeps its preset's; what the
user sets (a --set value, a configuration file's field, the form) wins."""

from dataclasses import replace
from itertools import islice

import pytest

from mlm_studio.core.config.continuation import FIELDS, continuation_recipe, continued, from_scratch
from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import RunConfig, written_fields
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.training.runs import NewRun, continuing, prepare_trainer
from tests.core.family_folders import make_folder


@pytest.fixture(scope="module")
def imported(small_corpus, tmp_path_factory):
    folder = make_folder("bert", list(islice(small_corpus.iter_documents(), 300)), tmp_path_factory.mktemp("bert"))
    return import_model(folder)


def short(config: RunConfig) -> RunConfig:
    return replace(config, data=replace(config.data, max_seq_len=32))


@pytest.mark.parametrize(("width", "rate"), [(48, 3e-5), (384, 3e-5), (768, 3e-5), (1024, 2.25e-5), (1536, 1.5e-5)])
def test_the_rate_is_the_middle_of_the_guides_fine_tuning_range_and_falls_with_the_width(width, rate):
    recipe = continuation_recipe(ModelConfig(hidden_size=width, num_attention_heads=4, intermediate_size=4 * width))
    assert recipe.learning_rate == pytest.approx(rate) and recipe.warmup_steps == 100
    assert f"learning rate {rate:.2g}" in recipe.describe() and f"width {width}" in recipe.describe()


def test_an_imported_start_takes_the_recipe_and_a_new_model_its_preset(imported, small_corpus, tmp_path):
    start = short(preset(DEFAULT_PRESET))
    assert start.training.learning_rate == 2e-3  # the from-scratch recipe the issue found destroying a model
    config, said = continuing(start, imported)
    assert config.model == imported.config
    assert (config.training.learning_rate, config.training.warmup_steps) == (3e-5, 100)
    assert said == f"Continuing an imported model: {continuation_recipe(imported.config).describe()}."
    untouched = {n: v for n, v in config.training.values().items() if n not in FIELDS}
    assert untouched == {n: v for n, v in start.training.values().items() if n not in FIELDS}

    new_run = NewRun(config, small_corpus, imported.tokenizer, imported)
    continued_run = prepare_trainer(tmp_path / "continued", begin=lambda: new_run)
    assert continued_run.optimizer.defaults["lr"] == 3e-5
    assert RunConfig.load(tmp_path / "continued" / "config.toml").training.learning_rate == 3e-5
    new = prepare_trainer(tmp_path / "new", begin=lambda: NewRun(start, small_corpus, imported.tokenizer))
    assert new.config.training.learning_rate == 2e-3 and new.optimizer.defaults["lr"] == 2e-3


def test_what_the_user_set_wins(imported):
    start = short(preset(DEFAULT_PRESET)).with_values({"training.learning_rate": 3e-4})
    config, said = continuing(start, imported, {"training.learning_rate"})
    assert (config.training.learning_rate, config.training.warmup_steps) == (3e-4, 100)
    assert said.startswith("Continuing an imported model: 100 warm-up steps, the continuation recipe for a")
    assert said.endswith("; used as set: training.learning_rate 0.0003 (yours).") and "learning rate 3e-05" not in said
    start = start.with_values({"training.warmup_steps": 7})
    config, said = continuing(start, imported, {"training.learning_rate", "training.warmup_steps"})
    assert (config.training.learning_rate, config.training.warmup_steps, said) == (3e-4, 7, "")


def test_a_configuration_file_wins_for_the_fields_it_writes(tmp_path):
    file = tmp_path / "mine.toml"
    file.write_text('preset = "modern"\n[training]\nlearning_rate = 5e-4\nmax_steps = 60\n[data]\nmax_seq_len = 64\n')
    assert written_fields(file) == {"training.learning_rate", "training.max_steps", "data.max_seq_len"}
    json_file = tmp_path / "mine.json"
    json_file.write_text('{"training": {"warmup_steps": 5}}')
    assert written_fields(json_file) == {"training.warmup_steps"}


def test_training_from_scratch_again_restores_the_rate_the_recipe_replaced():
    scratch = preset(DEFAULT_PRESET)
    wide = replace(scratch, model=replace(scratch.model, hidden_size=384, num_attention_heads=6))
    recipe, _ = continued(wide)
    assert recipe.training.learning_rate == 3e-5
    assert from_scratch(recipe, scratch.training).training.learning_rate == 2e-3
    edited = recipe.with_values({"training.learning_rate": 4e-4})
    assert from_scratch(edited, scratch.training).training.learning_rate == 4e-4  # the user's own value stays


@pytest.mark.parametrize(("length", "warmup"), [({"training.max_steps": 10}, 1), ({"training.max_steps": 350}, 35),
                                                ({"training.max_steps": 5000}, 100),
                                                ({"training.epochs": 1.0, "training.max_steps": 10}, 100)])  # fmt: skip
def test_a_run_of_few_steps_warms_up_over_a_tenth_of_them_and_says_so(length, warmup):
    """`train --init-from F --max-steps 10` reaches its peak rate; a run in epochs (of a corpus not read yet) keeps
    the recipe's 100 steps."""
    config, said = continued(preset(DEFAULT_PRESET).with_values(length))
    assert config.training.warmup_steps == warmup
    capped = f"with {warmup} warm-up steps (capped at 10% of the run's {length['training.max_steps']:,} steps"
    assert (capped in said) == (warmup < 100)
    assert from_scratch(config, preset(DEFAULT_PRESET).training).training.warmup_steps == 100
