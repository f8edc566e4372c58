"""Attributions that can be trusted: integrated gradients complete, maps that change when the model's weights are
re-initialised (Adebayo et al. 2018), occlusion agreeing with integrated gradients, and the hostile cases."""

import shutil
from dataclasses import replace
from itertools import islice
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.evaluation.explain.attributions import Explainer, ExplainError
from mlm_studio.core.evaluation.explain.choices import DEFAULT_STEPS
from mlm_studio.core.evaluation.explain.forming import attributions_over_checkpoints
from mlm_studio.core.evaluation.explain.methods import PATH_BATCH, gradient_x_input
from mlm_studio.core.evaluation.explain.sanity import cascading_randomisation, occlusion_agreement, rank_correlation
from mlm_studio.core.evaluation.explain.words import words_of, words_of_pieces
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.models.build import build_model, build_trained, masked_lm_of
from mlm_studio.core.progress import Cancelled
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import write_safetensors
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config

MASKS = 10  # masks of the held-out set each check reads


@pytest.fixture(scope="module")
def explainer(trained_run):
    return Explainer.of(FillMask.from_path(trained_run.path))


@pytest.fixture(scope="module")
def held_out(builtin_corpus):
    """Texts the trained run never read (the small corpus is the built-in one's first 400 documents), one word
    of each masked, seeded."""
    rng = np.random.default_rng(0)
    texts = []
    for document in islice(builtin_corpus.iter_documents(), 400, 600):
        words = document.split()[:14]
        if len(words) >= 8:
            words[int(rng.integers(1, len(words) - 1))] = "[MASK]"
            texts.append(" ".join(words))
    return texts[:MASKS]


def test_integrated_gradients_are_complete_at_the_default_steps(explainer, held_out):
    for text in held_out:
        explained = explainer.explain(text, method="ig")
        assert explained.steps == DEFAULT_STEPS
        assert sum(explained.scores) == pytest.approx(explained.total, abs=1e-9)  # words sum their pieces
        # 1%, or float32's resolution of a logit where the gap itself is that small
        assert abs(explained.total - explained.gap) <= 0.01 * abs(explained.gap) + 1e-4, text


def test_occlusion_agrees_with_integrated_gradients_on_most_masks(explainer, held_out):
    assert occlusion_agreement(explainer, held_out, top=3) >= 0.6


@pytest.mark.parametrize("method", ["ig", "gradxinput"])
def test_randomised_weights_change_the_attributions(trained_run, held_out, method):
    predictor = FillMask.from_path(trained_run.path)
    trained = Explainer.of(predictor)
    copy = masked_lm_of(build_trained(trained_run.config)).eval()
    copy.load_state_dict(predictor.model.state_dict())
    texts = held_out[:5]
    before = [trained.explain(text, method=method, steps=16) for text in texts]
    correlations = {}
    for part in cascading_randomisation(copy):
        randomised = Explainer(copy, trained.tokenizer)
        after = [randomised.explain(t, b.candidate_id, 0, method, steps=16) for t, b in zip(texts, before)]
        correlations[part] = np.mean([rank_correlation(b.scores, a.scores) for b, a in zip(before, after)])
    assert list(correlations) == ["head", "layer 1", "embeddings"]
    assert correlations["embeddings"] < 0.5, correlations


def test_rank_correlation_is_spearmans():
    assert rank_correlation([0.1, 0.5, 0.3], [1, 3, 2]) == pytest.approx(1.0)
    assert rank_correlation([0.1, 0.5, 0.3], [3, 1, 2]) == pytest.approx(-1.0)
    assert rank_correlation([1, 1, 1], [1, 2, 3]) == 0.0


def test_each_mask_of_a_text_is_explained_apart(explainer):
    text = "Return the [MASK] of the list, or [MASK] when it is empty."
    first, second = (explainer.explain(text, mask=number, method="gradxinput") for number in (0, 1))
    assert (first.mask, second.mask) == (0, 1)
    assert first.scores != second.scores
    with pytest.raises(ExplainError, match="2 \\[MASK\\]s; there is no mask number 3"):
        explainer.explain(text, mask=2)


def test_a_word_read_as_the_unknown_piece_is_attributed_like_any_other(explainer):
    text = "Return the [MASK] of the ☃ list."
    words = explainer.read(text)
    assert explainer.tokenizer.unk_id in words.ids
    for baseline in ("mask", "pad"):
        explained = explainer.explain(text, method="ig", baseline=baseline)
        assert explained.scores[explained.words.index("☃")] != 0.0
        assert abs(explained.total - explained.gap) <= 0.01 * abs(explained.gap) + 1e-4


def test_integrated_gradients_stop_between_batches_when_no_longer_wanted(trained_run):
    explainer = Explainer.of(FillMask.from_path(trained_run.path))
    checked = []

    def check():
        checked.append(len(checked))
        if len(checked) == 2:
            raise Cancelled("superseded")

    explainer.check = check
    with pytest.raises(Cancelled):
        explainer.explain("Return the [MASK] of the list.", steps=4 * PATH_BATCH)
    assert checked == [0, 1]  # the second of four batches never ran


def test_a_text_without_a_mask_is_refused_with_what_to_write(explainer):
    with pytest.raises(ExplainError, match="no \\[MASK\\]"):
        explainer.explain("Return the value of the list.")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"method": "lime"}, "unknown method 'lime'; choose one of ig, gradxinput, occlusion"),
        ({"steps": 0}, "1 to 1024 steps, not 0"),
        ({"baseline": "zero"}, "unknown baseline 'zero'"),
        ({"candidate": "x" * 300}, "is not a piece of this model's vocabulary"),
        ({"candidate": 10**9}, "is not a piece's id"),
    ],
)
def test_wrong_choices_are_refused_in_a_sentence(explainer, options, message):
    with pytest.raises(ExplainError, match=message.replace("(", "\\(").replace("[", "\\[")) as raised:
        explainer.explain("Return the [MASK] of the list.", **options)
    assert len(str(raised.value)) < 200


def test_a_512_piece_text_is_explained_and_a_longer_one_refused(small_tokenizer):
    config = ModelConfig(
        vocab_size=small_tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=512,
    )  # fmt: skip
    torch.manual_seed(0)
    explainer = Explainer(build_model(config).eval(), small_tokenizer)
    pieces_per_word = len(words_of(small_tokenizer, "the [MASK] ").ids) - 2
    text = "the [MASK] " + "the " * (510 - pieces_per_word)
    words = words_of(small_tokenizer, text)
    assert len(words.ids) == 512
    for method in ("ig", "occlusion"):
        explained = explainer.explain(text, method=method, steps=8)
        assert len(explained.scores) == len(words.texts) and all(np.isfinite(explained.scores))
    with pytest.raises(ExplainError, match="513 tokens long; this model reads at most 512"):
        explainer.explain(text + "the")


def test_weights_that_are_not_finite_are_refused(trained_run):
    model = masked_lm_of(build_trained(trained_run.config))
    with torch.no_grad():
        next(model.parameters())[0, 0] = float("nan")
    with pytest.raises(ExplainError, match="not finite numbers"):
        Explainer(model, trained_run.tokenizer, "broken")


def test_an_electra_run_explains_its_generator(small_tokenizer, trained_run):
    config = replace(trained_run.config.with_objective("electra"), model=replace(trained_run.config.model,
                     family="electra"))  # fmt: skip
    trained = build_trained(config)
    predictor = FillMask(masked_lm_of(trained), small_tokenizer, "an electra run", detector=trained.discriminator)
    explained = Explainer.of(predictor).explain("Return the [MASK] of the list.")
    assert explained.source == "an electra run, its generator"
    assert explained.total == pytest.approx(explained.gap, rel=0.01, abs=1e-4)


def test_gradient_x_input_is_refused_for_modernbert_where_it_is_zero(small_tokenizer):
    config = ModelConfig(
        family="modernbert", vocab_size=small_tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    explainer = Explainer(build_model(config).eval(), small_tokenizer)
    words = words_of(small_tokenizer, "Return the [MASK] of the list.")
    where = words.ids.index(small_tokenizer.mask_id)
    raw = gradient_x_input(explainer.model, explainer._outputs, words.tensor, where, 5)
    assert np.abs(raw).max() < 1e-5 * np.abs(raw).sum() + 1e-6
    with pytest.raises(ExplainError, match="zero for every word of a ModernBERT model"):
        explainer.explain("Return the [MASK] of the list.", method="gradxinput")
    assert explainer.explain("Return the [MASK] of the list.", method="occlusion").scores


def test_scores_are_per_word_and_shown_as_shares_of_their_scale(explainer):
    explained = explainer.explain("The naïveté of [MASK] returns.", method="gradxinput")
    assert explained.words == tuple(words_of(explainer.tokenizer, "The naïveté of [MASK] returns.").texts)
    shown = explained.shares()
    assert shown == pytest.approx([score / explained.scale() for score in explained.scores])
    assert np.sign(shown).tolist() == np.sign(explained.scores).tolist()
    as_json = explained.as_json()
    assert as_json["method"] == "gradxinput" and as_json["unit"] == "logit"
    assert [w["word"] for w in as_json["words"]] == list(explained.words)
    text = explained.text
    assert [text[w["start"] : w["end"]].strip() for w in as_json["words"]] == list(explained.words)


def test_a_blocks_pieces_are_explained_at_any_position_in_words_they_make(explainer):
    tokenizer = explainer.tokenizer
    text = "the interpreter of [MASK] returns."  # lowercase: the words the pieces spell are the text's
    ids = list(words_of(tokenizer, text).ids)
    block = words_of_pieces(tokenizer, ids)
    assert block.texts == words_of(tokenizer, text).texts  # WordPiece's continuations join their word
    assert block.word_of[0] == block.word_of[-1] == -1
    padded = ids + [tokenizer.pad_id] * 5
    where = ids.index(tokenizer.mask_id)
    from_text = explainer.explain(text, method="gradxinput")
    from_block = explainer.explain_pieces(padded, where, method="gradxinput")
    assert from_block.scores == pytest.approx(from_text.scores, abs=1e-9)
    assert from_block.candidate_id == from_text.candidate_id
    kept = explainer.explain_pieces(padded, 1, method="occlusion")  # a word that was not masked: its prediction
    assert kept.scores[0] == 0.0 and len(kept.scores) == len(block.texts)
    with pytest.raises(ExplainError, match="no piece 40 to explain"):
        explainer.explain_pieces(padded, 40)


def test_an_answer_is_explained_at_every_checkpoint_as_it_formed(trained_run, tmp_path):
    text = "Return the [MASK] of the list."
    final = Explainer.of(FillMask.from_path(trained_run.path)).explain(text, method="occlusion")
    formed = attributions_over_checkpoints(trained_run.path, text, final.candidate_id, method="occlusion")
    assert [f.step for f in formed] == [int(c.name.split("-")[1]) for c in trained_run.checkpoints()]
    assert all(f.attribution.candidate_id == final.candidate_id for f in formed)
    assert formed[-1].attribution.scores == pytest.approx(final.scores, abs=1e-9)
    assert formed[0].attribution.scores != formed[-1].attribution.scores  # it changed as the model learned
    assert formed[0].attribution.source.endswith(trained_run.checkpoints()[0].name)


def test_a_checkpoint_cut_short_is_told_apart_from_one_not_finite(trained_run, tmp_path):
    run = Path(shutil.copytree(trained_run.path, tmp_path / "run"))
    first, second, *_ = RunDir(run).checkpoints()
    weights = first / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # being written, or damaged
    tensors = load_file(str(second / "model.safetensors"))
    write_safetensors(
        {name: torch.full_like(t, float("nan")) for name, t in tensors.items()}, second / "model.safetensors"
    )
    formed = attributions_over_checkpoints(run, "Return the [MASK] of the list.", 5, method="occlusion")
    assert (
        formed[0].attribution is None
        and formed[0].problem == "its weights file cannot be read (being written, or damaged)"
    )
    assert formed[1].attribution is None and formed[1].problem == "its weights are not finite numbers"
    assert all(f.attribution is not None for f in formed[2:])


def test_a_checkpoint_whose_finite_weights_overflow_is_said_and_the_others_explained(trained_run, tmp_path):
    run = Path(shutil.copytree(trained_run.path, tmp_path / "run"))
    first, *_, last = RunDir(run).checkpoints()
    tensors = load_file(str(first / "model.safetensors"))
    overflowing = {name: torch.full_like(t, 3e38) if name.endswith("transform.LayerNorm.weight") else t
                   for name, t in tensors.items()}  # fmt: skip
    write_safetensors(overflowing, first / "model.safetensors")
    formed = attributions_over_checkpoints(run, "Return the [MASK] of the list.", 5, method="occlusion")
    assert formed[0].attribution is None and formed[0].problem == "its output is not a finite number"
    assert formed[-1].step == int(last.name.split("-")[1]) and formed[-1].attribution is not None


def test_an_electra_run_forms_its_generators_answer(small_corpus, small_tokenizer, tmp_path):
    config = small_config(max_steps=2, eval_interval=2, checkpoint_interval=2).with_objective("electra")
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    formed = attributions_over_checkpoints(run.path, "Return the [MASK] of the list.", 5, method="occlusion")
    assert formed and all(f.attribution.source.endswith("step-0000002, its generator") for f in formed)
