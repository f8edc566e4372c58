"""A fine-tuned model's labels and tags explained: the word that decides a label carries it, and what cannot be
explained yet (question answering, pairs) is said in a sentence."""

import pytest

from mlm_studio.core.evaluation.explain.attributions import ExplainError
from mlm_studio.core.evaluation.explain.task_attributions import TaskExplainer
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.predict import fine_tuned_at
from mlm_studio.core.finetune.setup import prepare_finetuner
from tests.core.test_finetune import CLASS_WORDS, write_task
from tests.core.test_finetune_export import write_pairs
from tests.core.test_finetune_tokens import write_tagging


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, trained_run):
    """The trained run fine-tuned as a classifier (a label is decided by one word), a tagger and a classifier of
    pairs."""
    root = tmp_path_factory.mktemp("tuned")
    tasks = {
        "texts": ("classification", write_task(root / "task.csv", rows=150), 4),
        "tags": ("tokens", write_tagging(root / "tags.jsonl", sentences=40), 1),
        "pairs": ("classification", write_pairs(root / "pairs.csv"), 1),
    }
    for name, (task, path, epochs) in tasks.items():
        options = FinetuneOptions(task, path, learning_rate=5e-3, epochs=epochs, batch_size=8, device="cpu")
        list(prepare_finetuner(root / name, str(trained_run.path), options).run())
    return root


def test_the_word_that_decides_a_label_carries_it(tuned):
    explainer = TaskExplainer(fine_tuned_at(tuned / "texts"))
    for text, decisive in (("raise of the list", "raise"), ("to error and the list", "error")):
        for method in ("ig", "occlusion"):
            explained = explainer.explain(text, method=method)
            assert explained.candidate == "errors", (text, explained.candidate)  # the label this run learned best
            first, second = (explained.scores[n] for n in explained.ranked()[:2])
            assert explained.words[explained.ranked()[0]] == decisive and first > 10 * abs(second), explained.scores
    explained = explainer.explain("the list of the file is a list", candidate="files")
    assert explained.candidate == "files" and explained.total == pytest.approx(explained.gap, rel=0.01, abs=1e-4)
    assert set(CLASS_WORDS) == set(explainer.labels)


def test_a_tag_is_explained_at_its_word(tuned):
    explainer = TaskExplainer(fine_tuned_at(tuned / "tags"))
    text = "the error value of the file"
    expected = fine_tuned_at(tuned / "tags").tag(text.split())
    explained = explainer.explain(text, mask=4, method="occlusion")
    assert explained.mask == 4 and explained.candidate == expected[4]
    assert explained.scores[4] == 0.0 and len(explained.scores) == 6  # a word is not removed to explain itself
    with pytest.raises(ExplainError, match="6 words; there is no word number 7"):
        explainer.explain(text, mask=6)


def test_what_is_not_explained_yet_is_said(tuned):
    with pytest.raises(ExplainError, match="reads pairs of texts"):
        TaskExplainer(fine_tuned_at(tuned / "pairs")).explain("a text")
    with pytest.raises(ExplainError, match="is not a label of"):
        TaskExplainer(fine_tuned_at(tuned / "texts")).explain("a text", candidate="nothing")
