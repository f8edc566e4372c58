import pytest
import torch

from mlm_studio.core.evaluation.predict import FillMask, PredictError
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.training.runs import start_run
from tests.command import mlm_studio
from tests.core.helpers import small_config


def test_top_k_for_each_mask_sorted_with_probabilities(trained_run):
    predictor = FillMask.from_path(trained_run.path)
    results = predictor.predict("Return the [MASK] of the [MASK] .", top_k=4)
    assert len(results) == 2
    for candidates in results:
        scores = [c.score for c in candidates]
        assert len(candidates) == 4 and scores == sorted(scores, reverse=True)
        assert 0 < sum(scores) <= 1 + 1e-6
        assert all(predictor.tokenizer.id_to_token(c.token_id) == c.token for c in candidates)


def test_scores_match_a_dense_forward_pass(trained_run):
    predictor = FillMask.from_path(trained_run.path)
    ids = predictor.encode("the [MASK] is")
    with torch.no_grad():
        dense = predictor.model(ids).logits[0].softmax(-1)
    position = int((ids[0] == predictor.tokenizer.mask_id).nonzero())
    best = predictor.predict("the [MASK] is", top_k=1)[0][0]
    assert best.token_id == int(dense[position].argmax())
    assert best.score == pytest.approx(float(dense[position].max()), abs=1e-6)


def test_iterative_fill_replaces_every_mask(trained_run):
    predictor = FillMask.from_path(trained_run.path)
    filled = predictor.fill("the [MASK] of the [MASK] [MASK]", top_k=3)
    assert "[MASK]" not in filled.text and sorted(filled.order) == [0, 1, 2]
    assert len(filled.candidates) == 3 and all(len(c) == 3 for c in filled.candidates)


def test_a_checkpoint_folder_loads_too_and_models_are_cached(trained_run):
    from_run = FillMask.from_path(trained_run.path)
    assert FillMask.from_path(trained_run.path) is from_run
    checkpoint = FillMask.from_path(trained_run.latest_checkpoint())
    assert checkpoint.source.endswith("step-0000030")
    text = "the [MASK] is"
    assert checkpoint.predict(text) == from_run.predict(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [("no masks here", "has no \\[MASK\\]"), ("[MASK] " + "word " * 100, "this model reads at most 64")],
)
def test_unusable_texts_are_refused_clearly(trained_run, text, message):
    with pytest.raises(PredictError, match=message):
        FillMask.from_path(trained_run.path).predict(text)


def test_a_run_without_checkpoints_or_a_wrong_folder_is_refused(tmp_path, small_corpus, small_tokenizer):
    run = start_run(tmp_path / "fresh", small_config(), small_corpus, small_tokenizer)
    with pytest.raises(CheckpointError, match=r"has no checkpoint yet"):
        FillMask.from_path(run.path)
    with pytest.raises(CheckpointError, match=r"is not a run folder"):
        FillMask.from_path(tmp_path)


def test_fill_keeps_the_words_it_did_not_predict(trained_run):
    predictor = FillMask.from_path(trained_run.path)
    text = "Zyxqwv 中文 ☃ says: the [MASK] is [MASK]!"
    assert predictor.tokenizer.unk_id in predictor.tokenizer.backend.encode(text).ids  # words it cannot spell
    filled = predictor.fill(text)
    words = [candidates[0].token.removeprefix("##") for candidates in filled.candidates]
    assert filled.text.startswith("Zyxqwv 中文 ☃ says: the ") and filled.text.endswith("!")
    assert "[MASK]" not in filled.text and all(word in filled.text for word in words)


@pytest.mark.parametrize("top_k", [0, -3])
def test_a_top_k_below_one_is_refused(trained_run, top_k):
    predictor = FillMask.from_path(trained_run.path)
    for call in (predictor.predict, predictor.fill, predictor.as_pipeline):
        with pytest.raises(PredictError, match=f"top-k must be at least 1, not {top_k}"):
            call("the [MASK] is", top_k=top_k)


def test_a_model_with_non_finite_weights_is_refused_not_printed_as_nan(trained_run, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    run = shutil.copytree(trained_run.path, tmp_path / "run")
    latest = sorted((run / "checkpoints").iterdir())[-1] / "model.safetensors"
    tensors = load_file(str(latest))
    tensors["bert.embeddings.LayerNorm.weight"][0] = float("nan")
    save_file(tensors, str(latest))
    done = mlm_studio("predict", run, "the [MASK] is", "--json")
    assert done.returncode == 1 and done.stdout == ""
    assert "not finite numbers (in bert.embeddings.LayerNorm.weight)" in done.stderr


def test_a_tokenizer_larger_than_the_models_vocabulary_is_refused(trained_run, small_corpus, tmp_path):
    """A run folder whose tokenizer.json was replaced by one with more pieces than the model has embeddings."""
    import shutil

    from mlm_studio.core.config.sections import TokenizerConfig
    from mlm_studio.core.data.tokenizer import train_tokenizer

    run = shutil.copytree(trained_run.path, tmp_path / "run")
    bigger = train_tokenizer(small_corpus.iter_documents(), TokenizerConfig(vocab_size=800), small_corpus.documents)
    assert bigger.vocab_size > trained_run.config.model.vocab_size
    bigger.save(run / "tokenizer.json")
    words = rf"run / step-0000030: the tokenizer has {bigger.vocab_size:,} pieces but the model only 400; this"
    with pytest.raises(PredictError, match=words):
        FillMask.from_path(run)
