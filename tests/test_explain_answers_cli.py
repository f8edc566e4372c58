"""`mlm-studio predict … --explain` for a question-answering run (TEXT is the context, --question the question)
and a classifier of pairs (--pair the second text), as a user runs it: each word under the text it is in, or
JSON saying which text each word is in and, for an answer, what is attributed and the window it came from."""

import json
import os
import subprocess
import sys

import pytest

from mlm_studio.cli import main
from mlm_studio.core.evaluation.explain.answer_attributions import AnswerExplainer
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.predict import fine_tuned_at
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config
from tests.core.qa_tasks import write_squad
from tests.core.test_finetune_export import write_pairs

QUESTION = "what is the port ?"
CONTEXT = "the list of a file is long . the port is red ."


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, small_corpus, small_tokenizer):
    """A short run fine-tuned to answer questions and to label pairs of texts."""
    root = tmp_path_factory.mktemp("explain-answers")
    run = start_run(root / "run", small_config(max_steps=4), small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    tasks = {
        "qa": ("qa", write_squad(root / "squad.json", contexts=10, facts=1), {"doc_stride": 16}),
        "pairs": ("classification", write_pairs(root / "pairs.csv", rows=20), {}),
    }
    for name, (task, path, more) in tasks.items():
        options = FinetuneOptions(task, path, epochs=1, batch_size=8, device="cpu", **more)
        list(prepare_finetuner(root / name, str(run.path), options).run())
    return root


def test_an_answer_explained_as_json_in_a_subprocess(tuned):
    done = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "predict", str(tuned / "qa"), CONTEXT, "--question", QUESTION,
         "--explain", "--json"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    expected = AnswerExplainer(fine_tuned_at(tuned / "qa")).explain_answer(QUESTION, CONTEXT)
    assert printed["answer"] == expected.answer
    assert printed["window"] == f"window 1 of 1 (context characters 0–{len(CONTEXT)})"
    assert printed["target"] == expected.target and "plus the end logit at its last" in printed["target"]
    assert [(w["word"], w["in"]) for w in printed["words"]] == [
        *((word, "question") for word in QUESTION.split()),
        *((word, "context") for word in CONTEXT.split()),
    ]
    assert [w["score"] for w in printed["words"]] == pytest.approx(expected.scores, abs=1e-6)
    assert printed["total"] == pytest.approx(printed["gap"], rel=0.01)


def test_a_pairs_label_explained_as_json_names_each_words_text(tuned, capsys):
    arguments = ["predict", str(tuned / "pairs"), "the value of a list", "--pair", "a error path", "--explain"]
    assert main([*arguments, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [w["in"] for w in printed["words"]] == ["text"] * 5 + ["text2"] * 3
    assert printed["text2"] == "a error path" and printed["target"] == "of the pair" and "answer" not in printed
    assert main(arguments) == 0
    lines = capsys.readouterr().out.splitlines()
    assert " of the pair: integrated gradients" in lines[0] and lines[3] == "text:" and lines[9] == "text2:"


def test_an_answer_is_printed_with_each_text_under_its_name(tuned, capsys):
    assert main(["predict", str(tuned / "qa"), CONTEXT, "--question", QUESTION, "--explain", "occlusion"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Why the answer '") and "window 1 of 1" in lines[0] and "probability units" in lines[0]
    assert lines[1].startswith("a full bar (20 characters) is ") and " in probability" in lines[1]
    assert lines[2] == "question:" and lines[8] == "context:" and len(lines) == 9 + len(CONTEXT.split())
    assert [line.split()[0] for line in lines[3:8]] == QUESTION.split()


@pytest.mark.parametrize(
    ("run", "options", "status", "message"),
    [
        ("qa", [CONTEXT, "--explain"], 2, "give the question with --question"),
        ("qa", [CONTEXT, "--question", QUESTION, "--explain", "--candidate", "red"], 2, "--candidate does not apply"),
        ("qa", [CONTEXT, "--question", QUESTION, "--pair", "x", "--explain"], 2, "--pair does not apply to qa"),
        ("qa", ["", "--question", QUESTION, "--explain"], 1, "give a question and the context its answer is in"),
        ("pairs", ["the value", "--pair", "", "--explain"], 2, "give the second with --pair (it is empty)"),
        ("pairs", ["the value", "--explain"], 2, "pairs was fine-tuned on pairs of texts: give the second"),
        ("pairs", ["the value", "--pair", "a path", "--question", "x", "--explain"], 2, "--question does not apply"),
        ("pairs", ["the value", "--pair", "a path", "--aggregation", "simple", "--explain"], 2, "--aggregation"),
        ("pairs", ["the value", "--pair", "a path", "--top-k", "2", "--explain"], 2, "best one (another label:"),
        ("pairs", ["the value", "--pair", "a path", "--mask", "1", "--explain"], 2, "--mask picks a [MASK]"),
        ("qa", [CONTEXT, "--question", QUESTION, "--top-k", "2", "--explain"], 2, "explains the best one"),
        ("qa", [CONTEXT, "--question", QUESTION, "--aggregation", "simple", "--explain"], 2, "--aggregation does"),
        ("qa", [CONTEXT, "--question", QUESTION, "--mask", "1", "--explain"], 2, "--mask picks a [MASK]"),
        ("qa", [CONTEXT, "--question", QUESTION, "--device", "cuda:99", "--explain"], 1, "device cuda:99"),
    ],
)
def test_what_cannot_be_explained_is_said_in_a_sentence(tuned, capsys, run, options, status, message):
    assert main(["predict", str(tuned / run), *options]) == status
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def test_a_long_context_names_the_window_explained(tuned, capsys):
    context = "the list of a file is long . " * 60 + "the port is blue ."
    assert main(["predict", str(tuned / "qa"), context, "--question", QUESTION, "--explain", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    windows = int(printed["window"].split(" of ")[1].split()[0])
    assert windows > 3 and printed["answer"] == fine_tuned_at(tuned / "qa").answer(QUESTION, context)[0]
    assert len([w for w in printed["words"] if w["in"] == "context"]) < len(context.split())


@pytest.mark.parametrize(
    ("run", "options"),
    [("qa", ["the port is בוב red .", "--question", QUESTION]), ("pairs", ["the value בוב", "--pair", "a path"])],
)
def test_a_word_read_as_the_unknown_piece_is_attributed_like_any_other(tuned, capsys, run, options):
    assert main(["predict", str(tuned / run), *options, "--explain", "ig", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    unknown = next(w for w in printed["words"] if w["word"] == "בוב")
    assert unknown["score"] != 0 and printed["total"] == pytest.approx(printed["gap"], rel=0.01)
