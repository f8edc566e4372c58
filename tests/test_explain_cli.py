"""`mlm-studio predict … --explain`, as a user runs it: each word's attribution as signed bars, or as JSON with
the method and the scores the engine gives, for a fine-tuned classifier's label too; options that do not go with
it refused with exit status 2."""

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from mlm_studio.cli import main
from mlm_studio.commands.explain import table
from mlm_studio.core.evaluation.explain.attributions import Attribution, Explainer
from mlm_studio.core.evaluation.explain.task_attributions import TaskExplainer
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.predict import fine_tuned_at
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config
from tests.core.test_finetune import write_task

TEXT = "Return the [MASK] of the [MASK]."


@pytest.fixture(scope="module")
def run(tmp_path_factory, small_corpus, small_tokenizer):
    folder = start_run(tmp_path_factory.mktemp("explain") / "run", small_config(max_steps=4), small_corpus,
                       small_tokenizer)  # fmt: skip
    list(Trainer(folder, *training_blocks(folder, small_corpus)).run())
    return folder.path


def test_explain_as_json_in_a_subprocess_gives_the_engines_scores(run):
    done = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "predict", str(run), TEXT, "--explain", "occlusion", "--mask", "2",
         "--json"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    expected = Explainer.of(FillMask.from_path(run)).explain(TEXT, mask=1, method="occlusion")
    assert (printed["method"], printed["unit"], printed["mask"]) == ("occlusion", "probability", 2)  # as --mask
    assert printed["candidate_id"] == expected.candidate_id
    assert [w["word"] for w in printed["words"]] == list(expected.words)
    assert [w["score"] for w in printed["words"]] == pytest.approx(expected.scores, abs=1e-6)


def test_explain_prints_each_word_with_a_signed_bar(run, capsys):
    assert main(["predict", str(run), TEXT, "--explain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Why ") and "at [MASK] 1: integrated gradients, in logit units" in lines[0]
    assert "32 steps from a mask baseline; the words sum to" in lines[1]
    explained = Explainer.of(FillMask.from_path(run)).explain(TEXT)
    # four steps of training: the logit barely changed, the bars' scale is the least one and it says so
    assert lines[2] == (
        f"a full bar (20 characters) is 1 logit; no word moved this prediction by more than "
        f"{explained.largest():.3g} logits"
    )
    assert [line.split()[0] for line in lines[3:]] == list(explained.words)
    assert all("|" in line for line in lines[3:])
    assert "█" not in "".join(lines[3:])  # nothing carried it: no bar reaches a character


def test_integrated_gradients_that_miss_completeness_say_so_and_suggest_more_steps(run, capsys):
    assert main(["predict", str(run), TEXT, "--explain", "ig", "--steps", "1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    missed = abs(sum(w["score"] for w in printed["words"]) - printed["gap"]) / max(abs(printed["gap"]), 1e-2)
    assert printed["completeness_error"] == pytest.approx(missed, rel=1e-6)
    assert main(["predict", str(run), TEXT, "--explain", "occlusion", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["completeness_error"] is None
    words = ("Return", "the", "[MASK]")
    close = Attribution("ig", "logit", "Return the [MASK]", words, ((0, 6), (7, 10), (11, 17)), (0.5, 0.49, 0.0), 0,
                        "value", 7, 0.5, steps=32, baseline="pad", total=0.995, gap=1.0)  # fmt: skip
    assert "misses" not in table(close, "at [MASK] 1")
    missing = table(replace(close, total=0.978), "at [MASK] 1").splitlines()[2]
    assert (
        missing
        == "the sum misses the logit's change by 2.2% (more than 1%): more steps (--steps 128) bring them together"
    )


@pytest.mark.parametrize(
    ("options", "status", "message"),
    [
        (["--explain", "--fill"], 2, "leave out --fill"),
        (["--explain", "--mask", "0"], 2, "from 1, not 0"),
        (["--explain", "--mask", "3"], 1, "there is no mask number 3"),
        (["--explain", "--candidate", "zzzz-not-a-piece"], 1, "is not a piece of this model's vocabulary"),
        (["--explain", "--steps", "0"], 1, "1 to 1024 steps, not 0"),
        (["--explain", "occlusion", "--steps", "0"], 2, "occlusion takes none"),
        (["--explain", "gradxinput", "--steps", "64"], 2, "--steps sets integrated gradients' steps"),
    ],
)
def test_explain_refuses_in_a_sentence(run, capsys, options, status, message):
    assert main(["predict", str(run), TEXT, *options]) == status
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def test_a_text_without_a_mask_is_refused(run, capsys):
    assert main(["predict", str(run), "Return the value.", "--explain", "gradxinput"]) == 1
    assert "no [MASK]" in capsys.readouterr().err


def test_a_fine_tuned_classifiers_label_is_explained(tmp_path, run, capsys):
    options = FinetuneOptions("classification", write_task(tmp_path / "task.csv", rows=40), epochs=1, device="cpu")
    list(prepare_finetuner(tmp_path / "tuned", str(run), options).run())
    assert main(["predict", str(tmp_path / "tuned"), "raise the error", "--explain", "occlusion", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = TaskExplainer(fine_tuned_at(tmp_path / "tuned")).explain("raise the error", method="occlusion")
    assert printed["candidate"] == expected.candidate and printed["unit"] == "probability"
    assert [w["score"] for w in printed["words"]] == pytest.approx(expected.scores, abs=1e-9)
    assert main(["predict", str(tmp_path / "tuned"), "raise the error", "--explain"]) == 0
    assert capsys.readouterr().out.startswith(f"Why {expected.candidate} (")
    assert printed["mask"] is None  # a label of the whole text, at no mask
    assert main(["predict", str(tmp_path / "tuned"), "raise the error", "--explain", "--mask", "2"]) == 2
    assert "answer is of the whole text" in capsys.readouterr().err


def test_explain_refuses_texts_read_one_a_line(run, tmp_path, capsys):
    lines = tmp_path / "texts.txt"
    lines.write_text("Return the [MASK].\n", encoding="utf-8")
    assert main(["predict", str(run), "--text-file", str(lines), "--explain"]) == 2
    assert "not texts read one a line" in capsys.readouterr().err
    assert main(["predict", str(run), "-", "--explain"]) == 2
    assert "not texts read one a line" in capsys.readouterr().err
