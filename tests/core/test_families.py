"""Every model family against `transformers` itself, both ways: tiny random models it made and saved (each with a
tokenizer of its family's kind) give the same logits and the same fill-mask top-k here; a run continued from
them exports to a folder `transformers` loads as the family's class, key for key, computing what ours does."""

import json
import shutil
from itertools import islice

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.models.build import build_model
from mlm_studio.core.models.hf_folder import InteropError, import_model
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.family_folders import CASES, make_folder
from tests.core.helpers import ANY_JSON, imports_or_refuses, small_config
from tests.core.hub_layout import add_folder, point_main_at, use_cache

transformers = pytest.importorskip("transformers")

TEXTS = [
    "Return the [MASK] of the list.",
    "The [MASK] argument is [MASK] by default.",
    "Raise ValueError if the [MASK] is empty, naïve café 中文.",
]
FAMILY_OF_CASE = {"xlm-roberta": "roberta"}


@pytest.fixture(scope="module", params=list(CASES))
def case(request, small_corpus, tmp_path_factory):
    documents = list(islice(small_corpus.iter_documents(), 400))
    folder = make_folder(request.param, documents, tmp_path_factory.mktemp(request.param))
    return request.param, folder


def _pipeline_text(text: str, tokenizer) -> str:
    return text.replace("[MASK]", tokenizer.mask_token)


def test_imported_models_give_transformers_logits_with_padding(case):
    name, folder = case
    imported = import_model(folder)
    assert imported.config.family == FAMILY_OF_CASE.get(name, name)
    assert not imported.fresh_head and imported.unused == ()
    ours = imported.build_model().eval()
    theirs = transformers.AutoModelForMaskedLM.from_pretrained(folder).eval()
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    batch = hf_tokenizer([_pipeline_text(t, hf_tokenizer) for t in TEXTS], padding=True, return_tensors="pt")
    assert batch["attention_mask"].min() == 0  # rows of different lengths: padding is exercised
    with torch.no_grad():
        expected = theirs(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        got = ours(batch["input_ids"], batch["attention_mask"]).logits
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(got[real], expected[real], atol=1e-5, rtol=0)


def test_fill_mask_matches_the_transformers_pipeline(case):
    _, folder = case
    predictor = FillMask.from_path(folder)
    pipe = transformers.pipeline("fill-mask", model=str(folder), top_k=5)
    assert predictor.tokenizer.specials.mask == pipe.tokenizer.mask_token
    for text in TEXTS:
        theirs = pipe(_pipeline_text(text, pipe.tokenizer))
        theirs = [theirs] if isinstance(theirs[0], dict) else theirs
        ours = predictor.predict(text, top_k=5)  # a typed [MASK] is the model's own mask token
        assert len(ours) == len(theirs) == text.count("[MASK]")
        for mine, reference in zip(ours, theirs):
            assert [c.token_id for c in mine] == [r["token"] for r in reference]
            assert [c.score for c in mine] == pytest.approx([r["score"] for r in reference], abs=1e-5)
        rows = predictor.as_pipeline(_pipeline_text(text, pipe.tokenizer))
        rows = [rows] if isinstance(rows[0], dict) else rows
        for mine, reference in zip(rows, theirs):
            assert [(r["token"], r["token_str"], r["sequence"]) for r in mine] == [
                (r["token"], r["token_str"], r["sequence"]) for r in reference
            ]


def test_a_continued_run_exports_as_its_family_and_transformers_agrees(case, small_corpus, tmp_path):
    _, folder = case
    imported = import_model(folder)
    run = start_run(tmp_path / "run", small_config(max_steps=3), small_corpus, imported.tokenizer, imported)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    out = export_model(run.path, tmp_path / "export")

    family = FAMILIES[imported.config.family]
    theirs, info = transformers.AutoModelForMaskedLM.from_pretrained(out, output_loading_info=True)
    assert [type(theirs).__name__] == family.to_hf(imported.config)["architectures"]
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    ours = FillMask.from_path(run.path)
    pipe = transformers.pipeline("fill-mask", model=str(out), top_k=5)
    for text in TEXTS[:2]:
        reference = pipe(_pipeline_text(text, pipe.tokenizer))
        reference = [reference] if isinstance(reference[0], dict) else reference
        for mine, row in zip(ours.predict(text, top_k=5), reference):
            assert [c.token_id for c in mine] == [r["token"] for r in row]
            assert [c.score for c in mine] == pytest.approx([r["score"] for r in row], abs=1e-5)
    assert import_model(out).config == imported.config  # the export reads back as it went out


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_trains_from_scratch_under_transformers_names(family):
    config = ModelConfig(
        family=family, vocab_size=120, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
        intermediate_size=40, max_position_embeddings=66,
    )  # fmt: skip
    ours = build_model(config)
    hf_config = FAMILIES[family].to_hf(config)
    config_class = transformers.AutoConfig.for_model(hf_config.pop("model_type"), **hf_config)
    theirs = transformers.AutoModelForMaskedLM.from_config(config_class)
    assert set(ours.state_dict()) == set(theirs.state_dict())
    unique = {id(p): p.numel() for p in ours.parameters()}
    assert sum(unique.values()) == config.parameter_count()
    assert FAMILIES[family].from_hf(json.loads(json.dumps(FAMILIES[family].to_hf(config)))) == config


@pytest.mark.parametrize("kind", ["gpt2", "t5", None])
def test_other_model_types_are_refused_naming_the_families(tmp_path, kind):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": kind} if kind else {}))
    with pytest.raises(InteropError, match=r"MLM Studio reads BERT, RoBERTa, DistilBERT, ModernBERT"):
        import_model(tmp_path)


def test_a_hub_name_is_read_from_the_local_cache_and_never_downloaded(case, tmp_path, monkeypatch):
    name, folder = case
    use_cache(monkeypatch, tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InteropError, match=r"not-here/model is neither a folder nor a model in the local Hugging Face"):
        import_model("not-here/model")
    point_main_at(add_folder(tmp_path, f"tiny/{name}", folder, "main"))
    assert import_model(f"tiny/{name}").config == import_model(folder).config
    assert FillMask.from_path(f"tiny/{name}").predict("The [MASK] is here.")


def test_the_configuration_knows_exactly_the_registered_families():
    with pytest.raises(Exception, match=r"model.family must be one of bert, roberta, distilbert, modernbert"):
        ModelConfig(family="gpt2")
    with pytest.raises(Exception, match=r"model.local_attention applies to modernbert models only"):
        ModelConfig(family="bert", local_attention=64)


# The fields families read specially; every other field of the folder's own config.json is changed too.
READ_FIELDS = [
    "model_type",
    "architectures",
    "position_embedding_type",
    "sinusoidal_pos_embds",
    "embedding_size",
    "embedding_dropout",
    "layer_types",
    "rope_parameters",
    "pad_token_id",
]
ROPE = st.dictionaries(
    st.sampled_from(["full_attention", "sliding_attention"]),
    ANY_JSON | st.dictionaries(st.sampled_from(["rope_type", "rope_theta"]), ANY_JSON | st.just("default")),
)


def test_any_json_as_config_json_is_imported_or_refused_clearly(case, tmp_path_factory):
    name, folder = case
    target = shutil.copytree(folder, tmp_path_factory.mktemp("fuzzed") / name)
    real = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    field = st.sampled_from(READ_FIELDS) | st.sampled_from(sorted(real))
    value = ANY_JSON | st.sampled_from([f.model_type for f in FAMILIES.values()]) | st.just({}) | ROPE
    changed = st.dictionaries(field, value, min_size=1, max_size=3).map(lambda c: {**real, **c})

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ANY_JSON | changed)
    def check(config):
        (target / "config.json").write_text(json.dumps(config), encoding="utf-8")
        imports_or_refuses(target)

    check()


@pytest.fixture(scope="module")
def modernbert(small_corpus, tmp_path_factory):
    documents = list(islice(small_corpus.iter_documents(), 400))
    return make_folder("modernbert", documents, tmp_path_factory.mktemp("modernbert"))


@pytest.mark.parametrize(
    ("rope", "words"),
    [
        (["full_attention"], r"has rope_parameters \['full_attention'\]; an object by layer kind was expected"),
        ({"full_attention": 160000}, r"has rope_parameters.full_attention 160000; an object was expected"),
        ({"full_attention": {"rope_theta": "high"}}, r"global_rope_theta must be float, not 'high'"),
        ({"sliding_attention": {"rope_type": ["yarn"]}}, r"scales its rotary positions \(\['yarn'\]\)"),
    ],
)
def test_malformed_modernbert_rope_parameters_are_refused_naming_them(modernbert, tmp_path, rope, words):
    folder = shutil.copytree(modernbert, tmp_path / "modernbert")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, "rope_parameters": rope}), encoding="utf-8")
    with pytest.raises(InteropError, match=words):
        import_model(folder)
