"""A fine-tuned model's labels, tags and answers explained: the word that decides a label carries it; a question's
answer and a pair's label attributed over both texts, each word in its own text, integrated gradients'
completeness holding for what is attributed (the answer's start and end logits, the pair's label), a long
context's window named, "no answer" said; what cannot be explained refused in a sentence."""

import json
from itertools import islice

import pytest
import torch

from mlm_studio.core.evaluation.explain.answer_attributions import AnswerExplainer
from mlm_studio.core.evaluation.explain.attributions import ExplainError
from mlm_studio.core.evaluation.explain.task_attributions import TaskExplainer
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.predict import fine_tuned_at
from mlm_studio.core.finetune.setup import prepare_finetuner
from tests.core.family_folders import make_folder
from tests.core.qa_tasks import write_squad
from tests.core.test_finetune import CLASS_WORDS, write_task
from tests.core.test_finetune_export import write_pairs
from tests.core.test_finetune_tokens import write_piece_tagging, write_tagging

QUESTION = "what is the port ?"
CONTEXT = "the list of a file is long . the port is red . a value to return ."


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, trained_run):
    """The trained run fine-tuned as a classifier (a label is decided by one word), a tagger, a classifier of
    pairs and a question-answering model."""
    root = tmp_path_factory.mktemp("tuned")
    tasks = {
        "texts": ("classification", write_task(root / "task.csv", rows=150), 4),
        "tags": ("tokens", write_tagging(root / "tags.jsonl", sentences=40), 1),
        "pairs": ("classification", write_pairs(root / "pairs.csv"), 1),
        "qa": ("qa", write_squad(root / "squad.json", contexts=30, facts=1), 2),
    }
    for name, (task, path, epochs) in tasks.items():
        stride = {"doc_stride": 16} if task == "qa" else {}
        options = FinetuneOptions(task, path, learning_rate=5e-3, epochs=epochs, batch_size=8, device="cpu", **stride)
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


def test_a_label_not_of_the_run_is_refused(tuned):
    with pytest.raises(ExplainError, match="is not a label of"):
        TaskExplainer(fine_tuned_at(tuned / "texts")).explain("a text", candidate="nothing")


@pytest.mark.parametrize("method", ["ig", "gradxinput", "occlusion"])
def test_an_answer_is_explained_over_the_question_and_the_context(tuned, method):
    model = fine_tuned_at(tuned / "qa")
    expected = model.answer(QUESTION, CONTEXT)[0]
    explained = AnswerExplainer(model).explain_answer(QUESTION, CONTEXT, method=method)
    assert explained.answer == expected and explained.candidate == expected["answer"]
    assert explained.probability == pytest.approx(expected["score"])
    question = [w for w, part in zip(explained.words, explained.parts) if part == 0]
    context = [w for w, part in zip(explained.words, explained.parts) if part == 1]
    assert question == ["what", "is", "the", "port", "?"] and context == CONTEXT.split()
    for word, part, (start, end) in zip(explained.words, explained.parts, explained.spans):
        assert (QUESTION, CONTEXT)[part][start:end] == word
    assert explained.window == f"window 1 of 1 (context characters 0–{len(CONTEXT)})"
    if method == "occlusion":
        assert "its score (start probability × end probability)" in explained.target
    else:
        assert "the start logit at its first token" in explained.target and "plus the end logit" in explained.target
    as_json = json.loads(json.dumps(explained.as_json()))
    assert [w["in"] for w in as_json["words"]] == ["question"] * 5 + ["context"] * len(context)
    assert as_json["text"] == QUESTION and as_json["text2"] == CONTEXT and as_json["answer"] == expected


def test_integrated_gradients_sum_to_the_answers_change_of_logits(tuned):
    explainer = AnswerExplainer(fine_tuned_at(tuned / "qa"))
    explained = explainer.explain_answer(QUESTION, CONTEXT)
    assert abs(explained.gap) > 0.1
    assert explained.total == pytest.approx(explained.gap, rel=0.01)
    assert sum(explained.scores) == pytest.approx(explained.total, rel=1e-6)


def test_a_long_context_is_explained_in_the_window_its_answer_came_from(tuned):
    model = fine_tuned_at(tuned / "qa")
    filler = "the list of a file is long . " * 80  # about 560 tokens: several windows
    context = filler + "the port is blue . " + filler
    expected = model.answer(QUESTION, context)[0]
    explained = AnswerExplainer(model).explain_answer(QUESTION, context)
    assert explained.answer == expected
    number, windows = (int(n) for n in explained.window.split(" (")[0].removeprefix("window ").split(" of "))
    assert windows > 4 and 1 <= number <= windows
    low, high = (int(n) for n in explained.window.split("characters ")[1].rstrip(")").split("–"))
    assert low <= expected["start"] and expected["end"] <= high
    spans = [span for span, part in zip(explained.spans, explained.parts) if part == 1]
    assert spans[0][0] >= low and spans[-1][1] <= high and len(spans) < len(context.split())
    assert explained.total == pytest.approx(explained.gap, rel=0.01)


def test_no_answer_is_explained_at_the_first_token(tuned, monkeypatch):
    """A run that learned unanswerable questions may answer none: what is explained is said."""
    model = fine_tuned_at(tuned / "qa")
    real = model.answer_text

    def no_answer(*args, **kwargs):
        answered = real(*args, **kwargs)
        answered.answers[0] = {"score": 0.25, "start": 0, "end": 0, "answer": ""}
        return answered

    monkeypatch.setattr(model, "answer_text", no_answer)
    explained = AnswerExplainer(model).explain_answer(QUESTION, CONTEXT)
    assert explained.candidate == "" and explained.target.startswith("no answer: the start and end logits at the first")
    assert explained.total == pytest.approx(explained.gap, rel=0.01)


def test_a_pairs_label_is_explained_over_both_texts(tuned):
    explainer = TaskExplainer(fine_tuned_at(tuned / "pairs"))
    first, second = "the value of a list", "a error path of the file"
    label, probability = fine_tuned_at(tuned / "pairs").classify([(first, second)])[0]
    explained = explainer.explain_pair(first, second)
    assert explained.candidate == label and explained.target == "of the pair"
    assert explained.probability == pytest.approx(probability, abs=1e-6)  # read with its segments, as it was trained
    assert [w for w, p in zip(explained.words, explained.parts) if p == 0] == first.split()
    assert [w for w, p in zip(explained.words, explained.parts) if p == 1] == second.split()
    assert explained.total == pytest.approx(explained.gap, rel=0.01)
    by_text = [w["in"] for w in explained.as_json()["words"]]
    assert by_text == ["text"] * 5 + ["text2"] * 6
    occluded = explainer.explain_pair(first, second, candidate="second", method="occlusion")
    assert occluded.candidate == "second" and occluded.unit == "probability" and len(occluded.scores) == 11


def test_what_cannot_be_explained_is_said(tuned):
    pairs = TaskExplainer(fine_tuned_at(tuned / "pairs"))
    with pytest.raises(ExplainError, match="text2 '' is empty; a classifier of pairs reads two texts"):
        pairs.explain_pair("the value", "")
    with pytest.raises(ExplainError, match=r"The pair is \d+ tokens long; this model reads at most \d+"):
        pairs.explain_pair("the value " * 300, "a list")  # no window: a label reads the pair whole, or not at all
    with pytest.raises(ExplainError, match="reads pairs of texts; give the second text"):
        pairs.explain("the value")
    with pytest.raises(ExplainError, match="fine-tuned on single texts"):
        TaskExplainer(fine_tuned_at(tuned / "texts")).explain_pair("the value", "a list")
    with pytest.raises(ExplainError, match="answers questions: explain an answer with its question"):
        TaskExplainer(fine_tuned_at(tuned / "qa"))
    with pytest.raises(ExplainError, match="does not answer questions"):
        AnswerExplainer(fine_tuned_at(tuned / "pairs"))
    model = fine_tuned_at(tuned / "qa")
    with torch.no_grad():
        next(model.model.parameters())[0, 0] = float("nan")
    with pytest.raises(ExplainError, match="not finite numbers"):
        AnswerExplainer(model)


@pytest.mark.slow  # a ModernBERT folder made and fine-tuned
def test_a_byte_level_taggers_word_is_explained_on_the_piece_it_is_tagged_on(tmp_path, small_corpus):
    """A ModernBERT tokenizer cuts a lone space piece before some words (" zxyzx" → Ġ, z, …); training leaves it out
    of the word, so the tag explained is the word's own (its first piece past the space), the one predict shows."""
    folder = make_folder("modernbert", list(islice(small_corpus.iter_documents(), 200)), tmp_path / "hf")
    task = write_piece_tagging(tmp_path / "tags.jsonl", sentences=40)
    options = FinetuneOptions("tokens", task, learning_rate=5e-3, epochs=1, batch_size=8, device="cpu")
    list(prepare_finetuner(tmp_path / "ft", str(folder), options).run())
    tagger = fine_tuned_at(tmp_path / "ft")
    text = "list zxyzx wxxyz list kjqqj qqjkq"
    encoding = tagger.tokenizer.backend.encode(text, add_special_tokens=False)
    assert "Ġ" in encoding.tokens  # the case at hand: a piece of white space alone
    tagged, explainer = tagger.tag_text(text).words, TaskExplainer(tagger)
    explained = [explainer.explain(text, mask=number, method="occlusion") for number in range(len(tagged))]
    assert [(e.candidate, e.probability) for e in explained] == [
        (word["entity"], pytest.approx(word["score"], abs=1e-5)) for word in tagged
    ]
