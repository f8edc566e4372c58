"""Hugging Face interchange, checked against `transformers` itself: export, import, refusals."""

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.interop.export import WRITTEN_FILES, export_model
from mlm_studio.core.models.hf_folder import GENERATOR_FOLDER, InteropError, import_model, is_hf_folder
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.owned import MANIFEST
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.command import mlm_studio
from tests.core.helpers import ANY_JSON, imports_or_refuses, small_config, with_training

transformers = pytest.importorskip("transformers")

TEXTS = [
    "Return the [MASK] of the list.",
    "The [MASK] argument is [MASK] by default.",
    "Raise ValueError if the [MASK] is empty, naïve café Ünïcödé 中文 ☃.",
]


def _hf_tokenizer(tokenizer, folder: Path):
    """A `transformers` BERT tokenizer built from a vocabulary file alone (no code of ours in between)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text(tokenizer.vocab_txt(), encoding="utf-8")
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(folder, do_lower_case=False, tokenizer_type="bert")
    assert len(hf_tokenizer) == tokenizer.vocab_size
    return hf_tokenizer


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory, small_tokenizer):
    """A small random `BertForMaskedLM` made and saved by `transformers`, with logits spread wide enough that
    top-k orders are not decided by rounding."""
    folder = tmp_path_factory.mktemp("hf") / "bert-small"
    torch.manual_seed(1)
    config = transformers.BertConfig(
        vocab_size=small_tokenizer.vocab_size,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=64,
        initializer_range=0.3,
    )
    model = transformers.BertForMaskedLM(config).eval()
    model.save_pretrained(folder)
    _hf_tokenizer(small_tokenizer, folder).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory):
    return export_model(trained_run.path, tmp_path_factory.mktemp("export") / "model")


def _ids(tokenizer, text: str) -> torch.Tensor:
    return torch.tensor([tokenizer.backend.encode(text).ids])


# --- import ---------------------------------------------------------------------------------------------
def test_an_imported_transformers_model_gives_the_same_logits(hf_folder):
    imported = import_model(hf_folder)
    assert not imported.fresh_head and imported.unused == ()
    ours = imported.build_model().eval()
    theirs = transformers.AutoModelForMaskedLM.from_pretrained(hf_folder).eval()
    for text in TEXTS:
        ids = _ids(imported.tokenizer, text)
        with torch.no_grad():
            expected = theirs(input_ids=ids).logits
            got = ours(ids).logits
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


def test_predict_on_an_imported_folder_matches_the_fill_mask_pipeline(hf_folder):
    predictor = FillMask.from_path(hf_folder)
    assert "Hugging Face" in predictor.source
    pipe = transformers.pipeline("fill-mask", model=str(hf_folder), top_k=5)
    for text in TEXTS:
        theirs = pipe(text)
        theirs = [theirs] if isinstance(theirs[0], dict) else theirs
        ours = predictor.predict(text, top_k=5)
        assert len(ours) == len(theirs)
        for mine, reference in zip(ours, theirs):
            assert [c.token_id for c in mine] == [r["token"] for r in reference]
            assert [c.score for c in mine] == pytest.approx([r["score"] for r in reference], abs=1e-5)


def test_an_encoder_without_head_in_old_names_imports_with_a_fresh_head(tmp_path, small_tokenizer):
    """A pickled `BertModel` state dict (no `bert.` prefix, `gamma`/`beta` LayerNorm names, a pooler)."""
    torch.manual_seed(2)
    config = transformers.BertConfig(
        vocab_size=small_tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    encoder = transformers.BertModel(config).eval()
    state = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in encoder.state_dict().items()
    }
    folder = tmp_path / "encoder"
    folder.mkdir()
    torch.save(state, folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps({**config.to_dict(), "architectures": ["BertModel"]}))
    _hf_tokenizer(small_tokenizer, folder).save_pretrained(folder)

    imported = import_model(folder)
    assert imported.fresh_head
    assert set(imported.unused) == {"pooler.dense.weight", "pooler.dense.bias"}
    assert "random weights" in imported.summary() and "pooler" in imported.summary()
    ids = _ids(imported.tokenizer, TEXTS[0].replace("[MASK]", "value"))
    with torch.no_grad():
        torch.testing.assert_close(
            imported.build_model().eval().bert(ids), encoder(input_ids=ids).last_hidden_state, atol=1e-5, rtol=0
        )
    again = import_model(folder)
    assert all(torch.equal(again.weights[n], t) for n, t in imported.weights.items())  # the fresh head is seeded
    predictor = FillMask.from_path(folder)  # the Playground titles its predictions with the source
    assert (
        predictor.untrained_head
        and predictor.source == "encoder (Hugging Face) (untrained head: its predictions are random)"
    )


def test_sharded_safetensors_import(tmp_path, hf_folder):
    model = transformers.AutoModelForMaskedLM.from_pretrained(hf_folder)
    folder = tmp_path / "sharded"
    model.save_pretrained(folder, max_shard_size="100KB")
    assert (folder / "model.safetensors.index.json").is_file()
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        (folder / name).write_bytes((hf_folder / name).read_bytes())
    whole, sharded = import_model(hf_folder), import_model(folder)
    assert all(torch.equal(sharded.weights[n], t) for n, t in whole.weights.items())


@pytest.fixture(scope="module")
def sharded(hf_folder, tmp_path_factory):
    """The small BERT saved by `transformers` in shards, with an index naming them."""
    folder = tmp_path_factory.mktemp("sharded") / "bert-sharded"
    transformers.AutoModelForMaskedLM.from_pretrained(hf_folder).save_pretrained(folder, max_shard_size="100KB")
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        (folder / name).write_bytes((hf_folder / name).read_bytes())
    return folder


@pytest.mark.parametrize(
    ("shard", "words"),
    [
        (7, "names 7 as a shard"),
        (None, "names None as a shard"),
        (["model-00001-of-00002.safetensors"], "names \\['model-00001"),
        ("../model.safetensors", "names '../model.safetensors' as a shard"),
        ("sub/model.safetensors", "names 'sub/model.safetensors' as a shard"),
        ("", "names '' as a shard"),
        ("missing.safetensors", "missing.safetensors in bert-sharded cannot be read"),
    ],
)
def test_an_index_naming_a_shard_that_is_not_a_file_beside_it_is_refused(tmp_path, sharded, shard, words):
    folder = _copy(sharded, tmp_path / "bert-sharded")
    (tmp_path / "model.safetensors").write_bytes(b"outside the folder: never read")
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    first = next(iter(index["weight_map"]))
    index["weight_map"][first] = shard
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(InteropError, match=words):
        import_model(folder)


def test_any_json_as_the_shard_index_is_imported_or_refused_clearly(tmp_path_factory, sharded):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    folder = _copy(sharded, tmp_path_factory.mktemp("fuzzed") / "bert-sharded")
    real = json.loads((sharded / "model.safetensors.index.json").read_text())
    names = st.sampled_from(sorted(set(real["weight_map"].values())))
    weight_map = st.dictionaries(st.sampled_from(sorted(real["weight_map"])) | st.text(max_size=8), ANY_JSON | names)
    index = ANY_JSON | st.fixed_dictionaries({"weight_map": ANY_JSON | weight_map}, optional={"metadata": ANY_JSON})

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(index)
    def check(content):
        (folder / "model.safetensors.index.json").write_text(json.dumps(content))
        imports_or_refuses(folder)

    check()


def test_weights_of_another_family_are_named_as_such(tmp_path, hf_folder, small_tokenizer):
    other = tmp_path / "distilbert"
    shape = {"dim": 48, "n_layers": 2, "n_heads": 4, "hidden_dim": 96, "max_position_embeddings": 64}
    config = transformers.DistilBertConfig(vocab_size=small_tokenizer.vocab_size, **shape)
    transformers.DistilBertForMaskedLM(config).save_pretrained(other)
    folder = _copy(hf_folder, tmp_path / "mixed")
    (folder / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes())
    with pytest.raises(InteropError, match=r"belong to another family than config.json's BERT") as refused:
        import_model(folder)
    assert "distilbert.embeddings" in str(refused.value) and "num_hidden_layers" not in str(refused.value)


# --- continued pre-training ----------------------------------------------------------------------------
def test_continued_pretraining_starts_from_the_imported_weights(tmp_path, hf_folder, small_corpus, small_tokenizer):
    imported = import_model(hf_folder)
    config = with_training(small_config(max_steps=20, checkpoint_interval=10), learning_rate=1e-3)
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer, initial=imported)
    assert run.config.model == imported.config
    assert run.tokenizer.fingerprint() == imported.tokenizer.fingerprint()
    assert json.loads((run.initial_weights / "origin.json").read_text())["source"] == str(hf_folder)
    trainer = Trainer(run, *training_blocks(run, small_corpus))
    assert all(torch.equal(trainer.model.state_dict()[n], t) for n, t in imported.weights.items())
    list(trainer.run())
    embeddings = imported.weights["bert.embeddings.word_embeddings.weight"]
    assert trainer.step == 20 and not torch.equal(trainer.model.bert.embeddings.word_embeddings.weight, embeddings)
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    resumed = Trainer(run, *training_blocks(run, small_corpus))  # resumes from its checkpoint, not the import
    assert resumed.step == 20
    assert torch.equal(
        resumed.model.bert.embeddings.word_embeddings.weight, trainer.model.bert.embeddings.word_embeddings.weight
    )


def test_continued_pretraining_refuses_a_sequence_longer_than_the_model_reads(
    tmp_path, hf_folder, small_corpus, small_tokenizer
):
    config = small_config()
    config = replace(
        config, data=replace(config.data, max_seq_len=128), model=replace(config.model, max_position_embeddings=512)
    )
    with pytest.raises(ConfigError, match=r"the 64 tokens this model reads"):
        start_run(tmp_path / "run", config, small_corpus, small_tokenizer, initial=import_model(hf_folder))
    assert not (tmp_path / "run").exists()


# --- export ---------------------------------------------------------------------------------------------
def test_an_export_loads_in_transformers_with_every_weight(exported):
    assert is_hf_folder(exported)
    for name in ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "tokenizer_config.json"):
        assert (exported / name).is_file()
    assert json.loads((exported / "special_tokens_map.json").read_text())["mask_token"] == "[MASK]"
    config = json.loads((exported / "config.json").read_text())
    assert config["model_type"] == "bert" and config["architectures"] == ["BertForMaskedLM"]
    _model, info = transformers.AutoModelForMaskedLM.from_pretrained(exported, output_loading_info=True)
    assert info["missing_keys"] == set() or not info["missing_keys"]
    assert not info["unexpected_keys"] and not info.get("mismatched_keys")


def test_an_export_gives_the_same_logits_and_predictions_in_transformers(trained_run, exported):
    ours = FillMask.from_path(trained_run.path)
    theirs = transformers.AutoModelForMaskedLM.from_pretrained(exported).eval()
    for text in TEXTS:
        ids = _ids(ours.tokenizer, text)
        with torch.no_grad():
            torch.testing.assert_close(ours.model(ids).logits, theirs(input_ids=ids).logits, atol=1e-5, rtol=0)
    pipe = transformers.pipeline("fill-mask", model=str(exported), top_k=5)
    for text in TEXTS:
        reference = pipe(text)
        reference = [reference] if isinstance(reference[0], dict) else reference
        for mine, expected in zip(ours.predict(text, top_k=5), reference):
            assert [c.token_id for c in mine] == [r["token"] for r in expected]
            assert [c.score for c in mine] == pytest.approx([r["score"] for r in expected], abs=1e-4)


def test_the_exported_tokenizer_gives_the_same_ids(trained_run, exported, builtin_corpus):
    theirs = transformers.AutoTokenizer.from_pretrained(exported)
    ours = trained_run.tokenizer
    samples = [*TEXTS, "  Tabs\tand\nnewlines  ", "UPPER lower MiXeD", "émigré résumé", "x" * 300]
    samples += [doc for _, doc in zip(range(50), builtin_corpus.iter_documents())]
    for text in samples:
        assert theirs(text)["input_ids"] == ours.backend.encode(text).ids


def test_the_model_card_reports_the_run(trained_run, exported):
    card = (exported / "README.md").read_text(encoding="utf-8")
    last = [r for r in trained_run.read_metrics() if r["type"] == "eval"][-1]
    assert f"{last['accuracy']:.2%}" in card and "step-0000030" in card and "small.txt" in card
    assert "pipeline_tag: fill-mask" in card


def test_an_imported_export_is_the_same_model(trained_run, exported):
    imported = import_model(exported)
    assert imported.config == trained_run.config.model and not imported.fresh_head
    ids = _ids(imported.tokenizer, TEXTS[1])
    with torch.no_grad():
        torch.testing.assert_close(
            imported.build_model().eval()(ids).logits, FillMask.from_path(trained_run.path).model(ids).logits
        )


@pytest.mark.parametrize(
    ("change", "words"),
    [({"pre_layer_norm": True}, "pre-LayerNorm"), ({"position_embedding_type": "sinusoidal"}, "sinusoidal")],
)
def test_variants_bert_cannot_represent_are_refused(tmp_path, small_corpus, small_tokenizer, change, words):
    config = small_config(max_steps=1, checkpoint_interval=1, eval_interval=1)
    config = replace(config, model=replace(config.model, **change))
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    with pytest.raises(InteropError, match=words):
        export_model(run.path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_never_overwrites_other_files(trained_run, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    with pytest.raises(InteropError, match=r"not part of an export \(mine.txt\); nothing was changed"):
        export_model(trained_run.path, tmp_path / "notes")
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    first = export_model(trained_run.path, tmp_path / "out")
    with pytest.raises(InteropError, match=r"allow overwriting"):
        export_model(trained_run.path, first)
    assert export_model(trained_run.path, first, best=True, overwrite=True) == first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_overwriting_an_export_beside_a_users_own_files_touches_nothing(trained_run, tmp_path):
    out = export_model(trained_run.path, tmp_path / "model")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "notes.md").write_text("my notes")
    with pytest.raises(InteropError, match=r"\.git, notes.md"):
        export_model(trained_run.path, out, overwrite=True)
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n" and (out / "notes.md").exists()
    assert all((out / name).read_bytes() == data for name, data in before.items())


def test_overwriting_an_export_replaces_it_whole(trained_run, tmp_path):
    out = export_model(trained_run.path, tmp_path / "model")
    export_model(trained_run.path, out, best=True, overwrite=True)
    names = sorted(set(WRITTEN_FILES) - {GENERATOR_FOLDER})
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, MANIFEST])
    assert sorted(json.loads((out / MANIFEST).read_text())["files"]) == names


def test_an_edited_model_card_is_kept_and_the_export_not_replaced(trained_run, tmp_path):
    out = export_model(trained_run.path, tmp_path / "model")
    card = out / "README.md"
    card.write_text(card.read_text() + "\n## My notes\nFine-tuned later on legal text.\n")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(InteropError, match=rf"{card} changed since MLM Studio wrote it: nothing was changed"):
        export_model(trained_run.path, out, overwrite=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.fixture(scope="module")
def electra_run(tmp_path_factory, small_corpus, small_tokenizer):
    config = small_config(max_steps=1, checkpoint_interval=1, eval_interval=1).with_objective("electra")
    run = start_run(tmp_path_factory.mktemp("electra") / "run", config, small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run


def test_files_of_the_users_inside_an_electra_exports_generator_are_kept(electra_run, tmp_path):
    out = export_model(electra_run.path, tmp_path / "model")
    notes = out / GENERATOR_FOLDER / "notes" / "eval.txt"
    notes.parent.mkdir()
    notes.write_text("my evaluation")
    done = mlm_studio("export", electra_run.path, out, "--overwrite")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr == (
        f"mlm-studio: {out} holds files that are not part of an export (generator/notes); nothing was changed. "
        "Choose a new or empty folder\n"
    )
    assert notes.read_text() == "my evaluation" and (out / GENERATOR_FOLDER / "model.safetensors").is_file()
    notes.unlink()
    notes.parent.rmdir()
    export_model(electra_run.path, out, overwrite=True)
    assert "generator/model.safetensors" in json.loads((out / MANIFEST).read_text())["files"]


def test_links_inside_or_at_an_export_are_refused_and_left_alone(trained_run, tmp_path):
    out = export_model(trained_run.path, tmp_path / "model")
    users = tmp_path / "my-weights.safetensors"
    users.write_bytes((out / "model.safetensors").read_bytes())  # the same bytes: a link is refused anyway
    (out / "model.safetensors").unlink()
    (out / "model.safetensors").symlink_to(users)
    with pytest.raises(InteropError, match=rf"{out / 'model.safetensors'} is a symbolic link: nothing was changed"):
        export_model(trained_run.path, out, overwrite=True)
    assert (out / "model.safetensors").is_symlink() and users.read_bytes() == (out / "model.safetensors").read_bytes()
    link = tmp_path / "link"
    link.symlink_to(out, target_is_directory=True)
    with pytest.raises(InteropError, match="is a symbolic link; export into the folder it points to"):
        export_model(trained_run.path, link, overwrite=True)
    assert link.is_symlink() and (out / "model.safetensors").is_symlink()


def test_an_export_made_before_exports_kept_a_record(trained_run, tmp_path, hf_folder):
    """No record: exactly an export's names beside MLM Studio's model card, not edited since, are replaced;
    a Hugging Face folder made by anyone else, or an export whose card is newer than its weights, is refused."""
    out = export_model(trained_run.path, tmp_path / "model")
    (out / MANIFEST).unlink()
    export_model(trained_run.path, out, overwrite=True)  # as the previous version wrote it: replaced
    assert (out / MANIFEST).is_file()
    (out / MANIFEST).unlink()
    card = out / "README.md"
    card.write_text(card.read_text() + "my edit\n")
    later = (out / "config.json").stat().st_mtime + 3600
    os.utime(card, (later, later))
    with pytest.raises(InteropError, match=rf"{card} was edited after the export; nothing was changed"):
        export_model(trained_run.path, out, overwrite=True)
    assert card.read_text().endswith("my edit\n") and not (out / MANIFEST).exists()
    theirs = shutil.copytree(hf_folder, tmp_path / "theirs")
    before = {p.name: p.read_bytes() for p in theirs.iterdir()}
    with pytest.raises(InteropError, match="holds a model that MLM Studio did not export"):
        export_model(trained_run.path, theirs, overwrite=True)
    assert {p.name: p.read_bytes() for p in theirs.iterdir()} == before


def test_a_run_without_checkpoint_cannot_be_exported(tmp_path, small_corpus, small_tokenizer):
    run = start_run(tmp_path / "run", small_config(), small_corpus, small_tokenizer)
    with pytest.raises(CheckpointError, match=r"no checkpoint"):
        export_model(run.path, tmp_path / "out")


# --- refusals -------------------------------------------------------------------------------------------
class _Payload:
    """Unpickling this creates a file: the side effect a hostile checkpoint would have."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_pickle_that_would_run_code_is_refused_without_running_it(tmp_path, hf_folder):
    folder = tmp_path / "hostile"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        (folder / name).write_bytes((hf_folder / name).read_bytes())
    marker = tmp_path / "payload-ran"
    weights = dict(import_model(hf_folder).weights)
    weights["bert.embeddings.word_embeddings.weight"] = _Payload(marker)
    torch.save(weights, folder / "pytorch_model.bin")
    with pytest.raises(InteropError, match=r"could run code"):
        import_model(folder)
    with pytest.raises(InteropError):
        FillMask.from_path(folder)
    assert not marker.exists()


def _copy(source: Path, target: Path) -> Path:
    target.mkdir()
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    return target


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda c: {**c, "hidden_size": 64, "num_attention_heads": 4}, "shapes differ"),
        (lambda c: {**c, "num_hidden_layers": 3}, "missing: bert.encoder.layer.2"),
        (lambda c: {**c, "model_type": "gpt2"}, "gpt2"),
        (lambda c: {**c, "position_embedding_type": "relative_key"}, "relative_key"),
        (lambda c: {**c, "vocab_size": 100}, "tokenizer has"),
        (lambda c: {**c, "hidden_act": "relu"}, "hidden_act"),
        (lambda c: {**c, "num_hidden_layers": 1}, "declares 1 layers but the weights also hold layer"),
        (lambda c: {**c, "hidden_size": 32.0}, "hidden_size must be int, not 32.0"),
        (lambda c: {**c, "intermediate_size": 10**9}, "intermediate_size must be between 1 and 65,536"),
        (lambda c: {**c, "layer_norm_eps": "tiny"}, "layer_norm_eps must be float"),
        (lambda c: {**c, "model_type": ["bert"]}, r"names no model type \(its model_type is \['bert'\]"),
        (lambda c: {**c, "pad_token_id": 10**400}, "pad_token_id is too large: a number of 401 digits"),
        (lambda c: {**c, "max_position_embeddings": float("inf")}, "must be int, not inf"),
        (
            lambda c: {**c, "hidden_size": 4096, "num_attention_heads": 8, "num_hidden_layers": 48},
            r"describes a model of [\d,]+ parameters but the weights hold",
        ),
    ],
)
def test_a_config_that_does_not_fit_the_weights_is_refused_with_the_differences(tmp_path, hf_folder, edit, words):
    folder = _copy(hf_folder, tmp_path / "edited")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(edit(config)))
    with pytest.raises(InteropError, match=words):
        import_model(folder)


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("config.json", b"{not json", "config.json"),
        ("config.json", b"[1, 2]", "not a JSON object"),
        ("model.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{}", "model.safetensors"),
        ("model.safetensors", b"\xff" * 8 + b"{}", "model.safetensors"),
        ("vocab.txt", b"\xff\xfe\x00garbage", None),
    ],
)
def test_damaged_files_are_named_in_the_error(tmp_path, hf_folder, name, content, words):
    folder = _copy(hf_folder, tmp_path / "damaged")
    (folder / name).write_bytes(content)
    if name == "vocab.txt":  # tokenizer.json wins over vocab.txt; remove it to read the damaged one
        (folder / "tokenizer.json").unlink()
        words = "vocab.txt"
    with pytest.raises(InteropError, match=words):
        import_model(folder)


def test_an_untied_output_layer_is_refused(tmp_path, hf_folder):
    from safetensors.torch import load_file, save_file

    folder = _copy(hf_folder, tmp_path / "untied")
    tensors = load_file(str(folder / "model.safetensors"))
    tensors["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"] + 1
    save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(InteropError, match=r"not tied"):
        import_model(folder)


def test_a_folder_without_weights_or_config_says_so(tmp_path, hf_folder):
    with pytest.raises(InteropError, match=r"no config.json"):
        import_model(tmp_path)
    folder = _copy(hf_folder, tmp_path / "no-weights")
    (folder / "model.safetensors").unlink()
    with pytest.raises(InteropError, match=r"has no weights"):
        import_model(folder)


def test_a_run_folder_is_not_taken_for_a_hugging_face_folder(trained_run):
    assert not is_hf_folder(trained_run.path) and isinstance(RunDir(trained_run.path), RunDir)


def test_predict_json_has_the_shape_and_values_of_the_fill_mask_pipeline(exported):
    pipe = transformers.pipeline("fill-mask", model=str(exported), top_k=3)
    for text in ("Return the [MASK] of the list.", "The [MASK] argument is [MASK] by default."):
        done = mlm_studio("predict", exported, text, "--json", "--top-k", "3")
        assert done.returncode == 0, done.stderr
        ours, theirs = json.loads(done.stdout), pipe(text)
        assert type(ours[0]) is type(theirs[0])  # a list of dicts for one mask, a list of lists for several
        rows = [ours] if isinstance(ours[0], dict) else ours
        expected_rows = [theirs] if isinstance(theirs[0], dict) else theirs
        for row, expected_row in zip(rows, expected_rows, strict=True):
            for mine, expected in zip(row, expected_row, strict=True):
                assert set(mine) == set(expected) == {"score", "token", "token_str", "sequence"}
                assert (mine["token"], mine["token_str"], mine["sequence"]) == (
                    expected["token"],
                    expected["token_str"],
                    expected["sequence"],
                )
                assert mine["score"] == pytest.approx(expected["score"], abs=1e-5)


def test_a_folder_with_weights_that_are_not_finite_is_refused_by_every_command(exported, tmp_path, corpus_file, capsys):
    from safetensors.torch import load_file, save_file

    from mlm_studio.cli import main
    from tests.core.test_diagnostics import _labelled

    folder = Path(shutil.copytree(exported, tmp_path / "nan-model"))
    tensors = load_file(str(folder / "model.safetensors"))
    name = next(n for n in tensors if n.endswith("encoder.layer.0.attention.self.query.weight"))
    tensors[name][0, 0] = float("nan")
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(
        InteropError, match=rf"nan-model: the weights hold values that are not finite numbers \(in {name}\)"
    ):
        import_model(folder)
    task = str(_labelled(tmp_path / "topics.csv", count=40))
    for args in (
        ["search", str(folder), "--query", "a list", "--corpus", str(corpus_file)],
        ["search", str(folder), "--task", task],
        ["evaluate", str(folder), "--task", task, "--corpus", str(corpus_file)],
        ["predict", str(folder), "the [MASK] is"],
    ):
        assert main(args) == 1, args
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("mlm-studio: nan-model: the weights hold values that are not finite"), args
        assert "Traceback" not in err and "scikit" not in err and "nan" not in err.replace("nan-model", "")


def test_an_electra_folder_whose_generator_is_another_family_names_the_generator(electra_run, exported, tmp_path):
    out = export_model(electra_run.path, tmp_path / "model")
    shutil.rmtree(out / GENERATOR_FOLDER)
    (out / GENERATOR_FOLDER).symlink_to(exported, target_is_directory=True)  # a BERT folder in its place
    with pytest.raises(InteropError) as refused:
        import_model(out)
    assert str(refused.value) == (
        f"model: its generator ({GENERATOR_FOLDER}/config.json) describes a BERT model, not an ELECTRA generator; "
        "import the two folders apart"
    )


def test_train_init_from_an_electra_export_whose_generator_links_to_a_bert_folder_names_the_generator(
    electra_run, exported, tmp_path, corpus_file
):
    out = export_model(electra_run.path, tmp_path / "model")
    shutil.rmtree(out / GENERATOR_FOLDER)
    (out / GENERATOR_FOLDER).symlink_to(exported, target_is_directory=True)
    further = tmp_path / "further"
    args = ["train", "--init-from", str(out), "--corpus", str(corpus_file), "--out", str(further), "--max-steps", "1"]
    done = mlm_studio(*args)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"mlm-studio: model: its generator ({GENERATOR_FOLDER}/config.json) describes a BERT model, not an ELECTRA "
        "generator; import the two folders apart\n"
    )
    assert not further.exists()
