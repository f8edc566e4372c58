"""An explanation's colours are on the scale of what it explains (the logit's change, the candidate's probability),
not of its own largest score: a model that learned nothing is drawn pale and says no word carried its prediction;
a trained one is not."""

import pytest
import torch

from mlm_studio.core.evaluation.explain.attributions import FAINT, SMALLEST_SCALE, Explainer, ExplainError
from mlm_studio.core.evaluation.explain.choices import METHODS
from mlm_studio.core.evaluation.explain.task_attributions import TaskExplainer
from mlm_studio.core.models.build import build_model

TEXT = "Return the [MASK] of the list."
NAMES = "the zyxxy wyzzy of a list"  # word 2 (zyxxy) is a name the tagger learned: B-PER, told by the word alone


@pytest.fixture(scope="module")
def untrained(trained_run):
    torch.manual_seed(0)
    return Explainer(build_model(trained_run.config.model).eval(), trained_run.tokenizer, "untrained")


@pytest.mark.parametrize("method", list(METHODS))
def test_an_untrained_models_explanation_is_pale_and_says_no_word_carried_it(untrained, method):
    explained = untrained.explain(TEXT, method=method)
    assert explained.largest() > 0  # noise, not nothing: scaled to itself it would be drawn at full colour
    assert explained.scale() == SMALLEST_SCALE[explained.unit]  # what it explains is smaller than the least scale
    assert max(abs(share) for share in explained.shares()) < FAINT
    assert not explained.carried()
    assert explained.uncarried().startswith("no word moved this prediction by more than ")
    printed = explained.as_json()
    assert printed["carried"] is False and printed["scale"] == explained.scale()
    assert [w["share"] for w in printed["words"]] == pytest.approx([s / explained.scale() for s in explained.scores])


@pytest.mark.parametrize("method", ["ig", "gradxinput"])
def test_a_trained_taggers_explanation_of_a_name_is_carried_by_the_name(exported_tagger, method):
    explained = TaskExplainer(exported_tagger[0]).explain(NAMES, mask=1, method=method)
    assert explained.candidate == "B-PER"
    assert explained.carried()
    assert explained.uncarried() == ""
    shares = explained.shares()
    assert max(range(len(shares)), key=lambda word: shares[word]) == 1  # the name itself, drawn strongest
    assert shares[1] >= 0.3
    if method == "ig":  # full colour is the logit's whole change: the name carries most of it
        assert explained.scale() == pytest.approx(abs(explained.gap)) and explained.scale() > 1


def test_occlusion_of_a_trained_tagger_says_the_other_words_did_not_move_its_tag(exported_tagger):
    """The tagger reads each name alone; hiding another word leaves its tag where it was, and it says so."""
    explained = TaskExplainer(exported_tagger[0]).explain(NAMES, mask=1, method="occlusion")
    assert explained.scale() == pytest.approx(explained.probability)
    assert explained.largest() < FAINT * explained.scale() and not explained.carried()


@pytest.fixture(scope="module")
def overflowing(trained_run):
    """A model whose weights are finite numbers but whose output is not: its head's normalisation scales every
    value past float32's largest."""
    model = build_model(trained_run.config.model).eval()
    with torch.no_grad():
        next(p for name, p in model.named_parameters() if name.endswith("transform.LayerNorm.weight")).fill_(3e38)
    return Explainer(model, trained_run.tokenizer, "overflowing")


@pytest.mark.parametrize("method", list(METHODS))
def test_a_prediction_that_is_not_a_finite_number_is_refused_never_drawn_as_carried(overflowing, method):
    with pytest.raises(ExplainError, match=r"^overflowing: its output at this position is not a finite number"):
        overflowing.explain(TEXT, method=method)
