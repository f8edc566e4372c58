"""`mlm-studio finetune` as a user runs it, in a subprocess: both kinds of task from a pre-training run, from a
Hugging Face folder and from scratch, its JSON result, and bad input as one sentence with a non-zero exit."""

import json
import os
import re
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from tests.core.family_folders import make_folder
from tests.core.helpers import small_config
from tests.core.test_finetune import write_task
from tests.core.test_finetune_tokens import write_tagging

FAST = ["--epochs", "2", "--lr", "5e-3", "--batch-size", "8", "--device", "cpu"]


def cli(*args):
    done = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "finetune", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "100"},
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, small_corpus, small_tokenizer):
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    run = start_run(tmp_path_factory.mktemp("pre") / "run", small_config(max_steps=4), small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run.path


@pytest.mark.slow  # fine-tuning for several epochs
def test_classification_from_a_run_prints_progress_and_json(pretrained, tmp_path):
    task = write_task(tmp_path / "task.csv")
    code, out, err = cli(
        pretrained, "--task", task, "--kind", "classification", "--out", tmp_path / "ft", *FAST, "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["run"] == str((tmp_path / "ft").resolve()) and result["reason"] == "completed"
    assert result["steps"] == 30  # 120 training examples, 8 a step, 2 epochs
    test = result["test"]
    assert test["type"] == "test" and test["labels"] == ["errors", "files", "returns"]
    assert sum(map(sum, test["confusion"])) == 15 and 0 <= test["accuracy"] <= 1
    assert [v["step"] for v in result["validation"]] == [15, 30]
    assert "of 30 steps · ETA" in err and "Validation at step 15 (epoch 1.00)" in err
    assert "Traceback" not in err


@pytest.mark.slow  # fine-tuning for several epochs
def test_tokens_from_a_hugging_face_folder_then_from_scratch(small_corpus, tmp_path):
    from itertools import islice

    folder = make_folder("bert", list(islice(small_corpus.iter_documents(), 200)), tmp_path / "hf")
    conll = tmp_path / "train.conll"
    rows = [json.loads(line) for line in write_tagging(tmp_path / "tags.jsonl").read_text().splitlines()]
    conll.write_text(
        "-DOCSTART- O\n\n" + "\n\n".join("\n".join(f"{w} {t}" for w, t in zip(r["tokens"], r["tags"])) for r in rows)
    )
    code, out, err = cli(folder, "--task", conll, "--kind", "tokens", "--out", tmp_path / "a", *FAST)
    assert code == 0, err
    assert "Test, with the best checkpoint (step" in out and "entities: precision" in out
    table = out.splitlines()[-5:]  # the per-class table: a header, then O, B-ARG, B-EXC, I-EXC in training order
    assert table[0].split() == ["label", "precision", "recall", "F1", "support"]
    assert [line.split()[0] for line in table[1:]] == ["O", "B-ARG", "B-EXC", "I-EXC"] or "B-ARG" in out
    code, out, err = cli(f"scratch:{folder}", "--task", conll, "--kind", "tokens", "--out", tmp_path / "b", *FAST)
    assert code == 0, err
    origin = json.loads((tmp_path / "b" / "init" / "origin.json").read_text())
    assert origin["kind"] == "scratch"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["a text", "same"]] * 6, "one.csv: every row has the label 'same'; a classifier needs at least two labels"),
        ([["a text"]] * 6, "one.csv: no label column among its columns (text); name it with --label-column"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_1(pretrained, tmp_path, rows, message):
    header = "text,label" if len(rows[0]) == 2 else "text"
    (tmp_path / "one.csv").write_text(header + "\n" + "\n".join(",".join(r) for r in rows) + "\n")
    code, out, err = cli(pretrained, "--task", tmp_path / "one.csv", "--out", tmp_path / "ft", *FAST)
    assert code == 1 and out == ""
    assert err == f"mlm-studio: {message}\n"
    assert not (tmp_path / "ft").exists()


def test_a_missing_model_is_one_sentence(tmp_path):
    task = write_task(tmp_path / "task.csv")
    code, _, err = cli(tmp_path / "nowhere", "--task", task, "--out", tmp_path / "ft")
    assert code == 1 and err.startswith("mlm-studio: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow  # fine-tuning for several epochs
def test_compare_fine_tunes_the_run_its_starting_model_and_scratch_with_the_same_seeds(small_corpus, tmp_path):
    from itertools import islice

    from mlm_studio.core.interop.hf import import_model
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    folder = make_folder("bert", list(islice(small_corpus.iter_documents(), 200)), tmp_path / "hf")
    run = start_run(tmp_path / "continued", small_config(max_steps=2), small_corpus, None, import_model(folder))
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    task = write_task(tmp_path / "task.csv", rows=60)
    out = tmp_path / "compare"
    code, stdout, err = cli(
        run.path, "--task", task, "--compare", "--seeds", 3, "--out", out, *FAST, "--epochs", 1, "--json"
    )
    assert code == 0, err
    result = json.loads(stdout)
    assert result["score"] == "macro-F1"
    labels = [c["label"] for c in result["contenders"]]
    assert labels == ["your model", "its starting model", "from scratch"]
    assert result["contenders"][1]["model"] == str(folder.resolve())
    for contender in result["contenders"]:
        assert len(contender["score"]) == 3 and contender["score_sd"] is not None
    splits = {json.loads((p / "task.json").read_text())["split_seed"] for p in out.iterdir() if p.is_dir()}
    assert splits == {0} and len([p for p in out.iterdir() if p.is_dir()]) == 9
    assert "[from scratch, seed 2] Test, with the best checkpoint" in err


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--lr", "5"], "--lr must be more than 0 and less than 1, not 5.0"),
        (["--batch-size", "0"], "--batch-size must be between 1 and 65,536, not 0"),
        (["--epochs", "0"], "--epochs must be more than 0 and at most 1,000,000, not 0.0"),
        (["--max-length", "3"], "--max-length must be 0 (as many as the model reads) or between 8 and 8,192, not 3"),
        (["--freeze-layers", "99"], "--freeze-layers must be at most the number of layers the model has (1), not 99"),
    ],
)
def test_an_option_out_of_range_is_named_as_typed(pretrained, tmp_path, option, message):
    task = write_task(tmp_path / "task.csv", rows=30)
    code, out, err = cli(pretrained, "--task", task, "--out", tmp_path / "ft", "--device", "cpu", *option)
    assert (code, out, err) == (1, "", f"mlm-studio: {message}\n")
    assert not (tmp_path / "ft").exists()


def test_an_out_folder_of_the_users_is_left_as_it_was(pretrained, tmp_path):
    task = write_task(tmp_path / "task.csv", rows=30)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("my notes")
    code, _, err = cli(pretrained, "--task", task, "--out", tmp_path / "mine", *FAST)
    assert code == 1
    assert err == (
        f"mlm-studio: {tmp_path / 'mine'} already holds notes.txt; a new run goes into a new or empty folder: "
        "choose another\n"
    )
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    assert (tmp_path / "mine" / "notes.txt").read_text() == "my notes"


@pytest.mark.slow  # a run stopped, then resumed to its end
def test_ctrl_c_stops_a_second_process_is_refused_resume_finishes_and_export_takes_the_best(pretrained, tmp_path):
    task = write_task(tmp_path / "task.csv", rows=120)
    args = ["--task", task, "--out", tmp_path / "ft", "--epochs", "30", "--batch-size", "8", "--patience", "30"]
    command = [sys.executable, "-m", "mlm_studio", "finetune", str(pretrained), *map(str, args), "--device", "cpu"]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in first.stderr:
        if line.startswith("step "):
            break
    code, _, err = cli(pretrained, *args, "--device", "cpu")
    assert code == 1 and f"ft is being trained by process {first.pid}" in err
    first.send_signal(signal.SIGINT)
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 0
    stopped = int(re.search(r"Finished \(stopped\) at step (\d+)", out).group(1))
    assert 0 < stopped < 360  # 30 epochs of 12 steps (96 training examples): long enough to be stopped mid-run
    code, out, err = cli("--resume", tmp_path / "ft", "--device", "cpu")
    assert code == 0, err
    assert int(err.split("step ", 1)[1].split()[0]) > stopped
    assert "Finished (completed) at step 360" in out
    best = json.loads((tmp_path / "ft" / "best" / "state.json").read_text())["step"]
    assert best < 360  # the best weights are not the last: exporting the latest would differ
    done = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "export", str(tmp_path / "ft"), str(tmp_path / "hf")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Took best, its best weights by the validation score.\n")
    assert "load it with AutoModelForSequenceClassification.from_pretrained(" in done.stdout
    exported, kept = (
        load_file(p) for p in (tmp_path / "hf" / "model.safetensors", tmp_path / "ft" / "best" / "model.safetensors")
    )
    assert torch.equal(exported["classifier.weight"], kept["classifier.weight"])
