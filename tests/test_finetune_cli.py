"""`mlm-studio finetune` as a user runs it: every kind of task from a pre-training run, from a Hugging Face folder and
from scratch, its JSON result, and bad input as one sentence with a non-zero exit; what a command says in this
process (tests/command.py), Ctrl-C and a second process in subprocesses."""

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.cli import main
from mlm_studio.core.storage.lock import LOCK_FILE, RunLock
from tests.command import mlm_studio
from tests.core.family_folders import make_folder
from tests.core.helpers import small_config
from tests.core.qa_tasks import write_squad
from tests.core.test_finetune import write_task
from tests.core.test_finetune_tokens import write_tagging

FAST = ["--epochs", "2", "--lr", "5e-3", "--batch-size", "8", "--device", "cpu"]


def cli(*args):
    done = mlm_studio("finetune", *args, env={"COLUMNS": "100"})
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, small_corpus, small_tokenizer):
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    run = start_run(tmp_path_factory.mktemp("pre") / "run", small_config(max_steps=4), small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run.path


@pytest.fixture(scope="module")
def finetuned(pretrained, tmp_path_factory):
    """A classification fine-tuned from the run by the command line: its exit status, output and folder. Tests
    that resume it work on a copy (`copied`)."""
    folder = tmp_path_factory.mktemp("finetuned")
    task = write_task(folder / "task.csv")
    code, out, err = cli(  # patience for three evaluations: a third epoch added on resuming always completes
        pretrained, "--task", task, "--kind", "classification", "--out", folder / "ft", *FAST, "--patience", 3, "--json"
    )
    return code, out, err, folder / "ft"


def copied(run, tmp_path):
    return Path(shutil.copytree(run, tmp_path / run.name))


def test_classification_from_a_run_prints_progress_and_json(finetuned):
    code, out, err, folder = finetuned
    assert code == 0, err
    result = json.loads(out)
    assert result["run"] == str(folder.resolve()) and result["reason"] == "completed"
    assert result["steps"] == 30  # 120 training examples, 8 a step, 2 epochs
    test = result["test"]
    assert test["type"] == "test" and test["labels"] == ["errors", "files", "returns"]
    assert sum(map(sum, test["confusion"])) == 15 and 0 <= test["accuracy"] <= 1
    assert [v["step"] for v in result["validation"]] == [15, 30]
    assert "of 30 steps · ETA" in err and "Validation at step 15 (epoch 1.00)" in err
    chosen = "fp32"  # the default auto on a CPU, resolved once and kept in config.toml
    assert f"on cpu in {chosen}: 1 layers × 32" in err
    assert f'precision = "{chosen}"' in (folder / "config.toml").read_text()
    assert "Traceback" not in err


def test_resume_with_more_epochs_trains_on_and_says_so(finetuned, tmp_path):
    run = copied(finetuned[3], tmp_path)
    code, out, err = cli("--resume", run, "--epochs", "3", "--device", "cpu", "--json")
    assert code == 0, err
    assert f"{run.name}: resumed with training.epochs: 2.0 → 3.0; it trains to step 45, its learning rate" in err
    result = json.loads(out)
    assert (result["reason"], result["steps"]) == ("completed", 45)  # 15 steps an epoch
    assert [v["step"] for v in result["validation"]] == [45]  # this session's: the third epoch's
    assert "epochs = 3.0" in (run / "config.toml").read_text()
    assert json.loads((run / "best" / "state.json").read_text())["step"] in (15, 30, 45)


def snapshot(folder):
    """Every file of a run folder with its bytes; not the lock file, where each process that takes the lock (even to
    be refused) writes its PID."""
    return {
        p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != LOCK_FILE
    }


def test_resume_refuses_a_new_learning_rate_and_writes_nothing(finetuned, tmp_path):
    run = copied(finetuned[3], tmp_path)
    before = snapshot(run)
    code, out, err = cli("--resume", run, "--lr", "1e-4", "--device", "cpu")
    assert (code, out) == (2, "")
    assert err == (
        f"mlm-studio: --lr cannot change when resuming: the run's recipe is fixed in {run}/config.toml; "
        "start a new run\n"
    )
    assert snapshot(run) == before


@pytest.mark.parametrize(
    "removed",
    [["state.json"], ["state.json", "model.safetensors", "optimizer.safetensors"]],
    ids=["state.json", "every file"],
)
def test_resume_refuses_a_checkpoint_without_its_state_and_writes_nothing(finetuned, tmp_path, capsys, removed):
    """A checkpoint folder whose state.json is gone, or every file, is damaged, as one cut short: its only one, it is
    refused (start a new run), not taken for no checkpoint and the run restarted from its starting weights over its
    records and its best weights."""
    run = copied(finetuned[3], tmp_path)
    [latest] = (run / "checkpoints").iterdir()
    for name in removed:
        (latest / name).unlink()
    before = snapshot(run)
    assert main(["finetune", "--resume", str(run), "--epochs", "3", "--device", "cpu"]) == 1
    problem = "state.json is missing" if len(removed) == 1 else "the folder is empty, its files removed"
    assert capsys.readouterr().err == (
        f"mlm-studio: {latest}: {problem}; no complete checkpoint comes before it, so its run cannot continue: start "
        "a new run with the same settings (its config.toml); moved aside, it would leave a resume to begin again at "
        "step 0\n"
    )
    assert snapshot(run) == before


@pytest.mark.parametrize("damage", ["state.json deleted", "weights cut short"])
def test_export_of_damaged_best_weights_names_them_and_the_checkpoint_to_give_instead(
    finetuned, tmp_path, capsys, damage
):
    """Export advice, not a resume's: the run's best/ cannot be read, its latest checkpoint can."""
    run = copied(finetuned[3], tmp_path)
    [latest] = (run / "checkpoints").iterdir()
    if damage == "state.json deleted":
        (run / "best" / "state.json").unlink()
        problem = "state.json is missing"
    else:
        with open(run / "best" / "model.safetensors", "r+b") as f:
            f.truncate(1000)
        problem = "model.safetensors cannot be read (Error while deserializing header: invalid header length)"
    assert main(["export", str(run), str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"mlm-studio: {run / 'best'}: {problem}; give {latest}, the newest whole checkpoint of its run, instead"
    )
    assert main(["export", str(latest), str(tmp_path / "out")]) == 0


FIXED = "cannot change when resuming: the run's"


def test_resume_refuses_a_run_whose_tokenizer_was_replaced_and_writes_nothing(finetuned, tmp_path, capsys):
    """Another tokenizer read the task into other ids: refused before config.toml, metrics.jsonl or the TensorBoard
    events are touched, not an IndexError after them."""
    from mlm_studio.core.config.sections import TokenizerConfig
    from mlm_studio.core.data.tokenizer import train_tokenizer

    run = copied(finetuned[3], tmp_path)
    texts = [f"{word} {word[::-1]} zq{n}" for n, word in enumerate(("alpha", "bravo", "charlie", "delta") * 50)]
    train_tokenizer(iter(texts), TokenizerConfig(vocab_size=300), len(texts)).save(run / "tokenizer.json")
    before = snapshot(run)
    assert main(["finetune", "--resume", str(run), "--epochs", "3", "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mlm-studio: run {run.name}: {run / 'tokenizer.json'} is not the one the run started with")
    assert err.endswith("put the run's own back, or start a new run\n") and err.count("\n") == 1
    assert snapshot(run) == before


@pytest.mark.parametrize("damaged", ["model.safetensors", "state.json"])
def test_resume_refuses_a_run_whose_best_weights_cannot_be_read_and_writes_nothing(
    finetuned, tmp_path, capsys, damaged
):
    """The best weights are what a run's end tests and exports: cut short, a resume is refused before it trains,
    prunes a checkpoint or writes a line."""
    run = copied(finetuned[3], tmp_path)
    [latest] = (run / "checkpoints").iterdir()
    best_step = json.loads((latest / "state.json").read_text())["best_step"]
    best = run / "best" / damaged
    best.write_bytes(best.read_bytes()[:20])
    before = snapshot(run)
    assert main(["finetune", "--resume", str(run), "--epochs", "3", "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mlm-studio: {run / 'best'}: {damaged} ") and err.count("\n") == 1
    assert err.endswith(
        f"the best weights of {run.name} (step {best_step:,}) are lost, so its resume could not test or export them: "
        "start a new fine-tuning with the same options\n"
    )
    assert snapshot(run) == before


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--kind", "tokens"], f"--kind {FIXED} task is fixed in {{run}}/task.json; start a new run"),
        (["--text-column", "body"], f"the columns {FIXED} task is fixed in {{run}}/task.json; start a new run"),
        (["scratch:MODEL"], f"MODEL {FIXED} starting model is fixed in {{run}}/init; start a new run"),
        (["--epochs", "1"], "--epochs 1 would end the run at step 15, but it is at step 30 already; give more epochs"),
        (["--out", "elsewhere"], "--out names a new run's folder; the resumed run stays in {run}"),
    ],
)
def test_resume_refuses_each_option_it_cannot_take(finetuned, pretrained, tmp_path, capsys, option, message):
    """In this process (the command line's own entry point): each refusal, named as typed, exit 2, nothing written."""
    run = copied(finetuned[3], tmp_path)
    before = snapshot(run)
    given = [o.replace("MODEL", str(pretrained)) for o in option]
    assert main(["finetune", *given, "--resume", str(run), "--device", "cpu"]) == 2
    assert capsys.readouterr() == ("", f"mlm-studio: {message.format(run=run)}\n")
    assert snapshot(run) == before and not (tmp_path / "elsewhere").exists()


def test_resume_takes_the_runs_own_values_as_no_change(finetuned, pretrained, tmp_path, capsys):
    """The command that made the run, given again with --resume: every value is the run's own, nothing changes."""
    run = copied(finetuned[3], tmp_path)
    before = snapshot(run)
    task = finetuned[3].parent / "task.csv"
    again = [str(pretrained), "--task", str(task), "--kind", "classification", *FAST, "--patience", "3", "--seed", "0"]
    found = ["--text-column", "sentence", "--label-column", "category"]  # the columns the run found by their names
    assert main(["finetune", *again, *found, "--lr", "0.005", "--resume", str(run)]) == 0
    out, err = capsys.readouterr()
    assert "cannot change" not in err and "resumed with" not in err
    assert "this run has finished already" in out + err and "Test, with the best checkpoint" in out
    assert snapshot(run) == before  # the settings, the records and the TensorBoard events too: nothing written


@pytest.fixture(scope="module")
def hf_folder(small_corpus, tmp_path_factory):
    """A BERT Hugging Face folder with its own tokenizer (read, never changed, by the tests that use it)."""
    from itertools import islice

    return make_folder("bert", list(islice(small_corpus.iter_documents(), 200)), tmp_path_factory.mktemp("hf") / "hf")


@pytest.mark.slow  # two fine-tuning runs
def test_tokens_from_a_hugging_face_folder_then_from_scratch(hf_folder, tmp_path):
    folder = hf_folder
    conll = tmp_path / "train.conll"
    rows = [json.loads(line) for line in write_tagging(tmp_path / "tags.jsonl", 60).read_text().splitlines()]
    conll.write_text(
        "-DOCSTART- O\n\n" + "\n\n".join("\n".join(f"{w} {t}" for w, t in zip(r["tokens"], r["tags"])) for r in rows)
    )
    code, out, err = cli(folder, "--task", conll, "--kind", "tokens", "--out", tmp_path / "a", *FAST, "--epochs", 1)
    assert code == 0, err
    assert "Test, with the best checkpoint (step" in out and "entities: precision" in out
    table = out.splitlines()[-6:]  # the per-class table: a header, then the tags in training order, I-ARG added
    assert table[0].split() == ["label", "precision", "recall", "F1", "support"]
    assert [line.split()[0] for line in table[1:]] == ["O", "B-ARG", "B-EXC", "I-EXC", "I-ARG"]
    scratch = f"scratch:{folder}"
    code, out, err = cli(scratch, "--task", conll, "--kind", "tokens", "--out", tmp_path / "b", *FAST, "--epochs", 1)
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
def test_compare_fine_tunes_the_run_its_starting_model_and_scratch_with_the_same_seeds(
    small_corpus, hf_folder, tmp_path
):
    from mlm_studio.core.models.hf_folder import import_model
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    folder = hf_folder
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
    """A learning rate too small to change a prediction: every validation scores as the first, which stays the
    best, so the best weights are not the last and exporting the latest would differ."""
    task = write_task(tmp_path / "task.csv", rows=120)
    args = ["--task", task, "--out", tmp_path / "ft", "--epochs", "30", "--batch-size", "8", "--patience", "30"]
    args += ["--lr", "1e-7"]
    command = [sys.executable, "-m", "mlm_studio", "finetune", str(pretrained), *map(str, args), "--device", "cpu"]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in first.stderr:
        if line.startswith("step "):
            break
    code, _, err = cli(pretrained, *args, "--device", "cpu")
    assert code == 1 and f"ft is being trained by process {first.pid}" in err
    first.send_signal(signal.SIGINT)
    out, _ = first.communicate(timeout=120)
    assert first.returncode == 130  # stopped by the user: `finetune … && export …` goes no further
    stopped = int(re.search(r"Finished \(stopped\) at step (\d+)", out).group(1))
    assert 0 < stopped < 360  # 30 epochs of 12 steps (96 training examples): long enough to be stopped mid-run
    epochs = max(2, stopped // 12 + 1)  # fewer: to the end of the epoch under way (two at least: two validations)
    code, out, err = cli("--resume", tmp_path / "ft", "--epochs", epochs, "--device", "cpu")
    assert code == 0, err
    end = 12 * epochs
    assert f"ft: resumed with training.epochs: 30.0 → {epochs:.1f}; it trains to step {end}," in err
    assert int(next(line for line in err.splitlines() if line.startswith("step ")).split()[1]) > stopped
    assert f"Finished (completed) at step {end}" in out
    best = json.loads((tmp_path / "ft" / "best" / "state.json").read_text())["step"]
    assert best == 12 < end
    done = mlm_studio("export", tmp_path / "ft", tmp_path / "hf")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Took best, its best weights by the validation score.\n")
    assert "load it with AutoModelForSequenceClassification.from_pretrained(" in done.stdout
    exported, kept, latest = (
        load_file(p / "model.safetensors")
        for p in (tmp_path / "hf", tmp_path / "ft" / "best", tmp_path / "ft" / "checkpoints" / f"step-{end:07d}")
    )
    assert torch.equal(exported["classifier.weight"], kept["classifier.weight"])
    assert not torch.equal(exported["classifier.weight"], latest["classifier.weight"])


def stopped_after(command, line_starts):
    """Run `command`, send it Ctrl-C once a line of its stderr starts with `line_starts`; its exit status, stdout
    and the stderr lines read before the signal."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.startswith(line_starts):
            break
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=120)
    return process.returncode, out, seen


@pytest.mark.slow  # a fine-tuning process stopped with Ctrl-C
def test_ctrl_c_during_a_comparison_exits_130_with_a_partial_table_and_no_verdict(pretrained, tmp_path):
    """Two contenders (a pre-training run from scratch has no starting model) × 2 seeds: stopped once the first
    run has finished, one of the four counts; the stopped run's test scores do not."""
    task = write_task(tmp_path / "task.csv", rows=60)
    out = tmp_path / "compare"
    command = [sys.executable, "-m", "mlm_studio", "finetune", str(pretrained), "--task", str(task), "--compare",
               "--seeds", "2", "--out", str(out), *FAST, "--epochs", "30", "--json"]  # fmt: skip
    code, stdout, seen = stopped_after(command, "[your model, seed 0] Finished (")
    assert code == 130, seen
    result = json.loads(stdout)
    assert (result["complete"], result["finished"], result["total"]) == (False, 1, 4)
    assert [(c["label"], len(c["score"])) for c in result["contenders"]] == [("your model", 1)]
    assert result["verdict"] == (
        f"No verdict until all 4 runs have finished; to continue, run the same command again with --out {out}."
    )


@pytest.mark.slow  # a fine-tuning process stopped with Ctrl-C
def test_ctrl_c_during_fine_tuning_exits_130(pretrained, tmp_path):
    task = write_task(tmp_path / "task.csv", rows=60)
    command = [sys.executable, "-m", "mlm_studio", "finetune", str(pretrained), "--task", str(task), "--out",
               str(tmp_path / "ft"), *FAST, "--epochs", "1000", "--patience", "1000"]  # fmt: skip
    code, stdout, _ = stopped_after(command, "step ")
    assert code == 130
    assert re.search(r"Finished \(stopped\) at step \d+", stdout)


def test_options_that_do_not_go_together_are_refused_before_anything_is_written(pretrained, tmp_path, capsys):
    task = write_task(tmp_path / "task.csv", rows=30)
    assert main(["finetune", str(pretrained), "--task", str(task), "--out", str(tmp_path / "ft"), "--seeds", "5"]) == 2
    assert capsys.readouterr().err == (
        "mlm-studio: --seeds needs --compare or --search: a single fine-tuning run takes one --seed\n"
    )
    assert not (tmp_path / "ft").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
@pytest.mark.parametrize("compare", [[], ["--compare", "--seeds", "1"]])
def test_a_device_this_machine_lacks_is_refused_before_the_run_folder_is_made(pretrained, tmp_path, capsys, compare):
    task = write_task(tmp_path / "task.csv", rows=30)
    args = ["finetune", str(pretrained), "--task", str(task), "--out", str(tmp_path / "ft"), "--device", "cuda"]
    assert main([*args, *compare]) == 1
    err = "mlm-studio: device cuda was asked for, but PyTorch sees no CUDA GPU; choose cpu or auto\n"
    assert capsys.readouterr().err == err
    assert not (tmp_path / "ft").exists()  # so the same command with --device cpu is not blocked
    assert main([*args[:-1], "cpu", "--epochs", "1", *compare]) == 0


def test_a_folder_under_a_file_is_refused_in_the_systems_words(pretrained, tmp_path, capsys):
    task = write_task(tmp_path / "task.csv", rows=30)
    (tmp_path / "notes").write_text("mine")
    assert main(["finetune", str(pretrained), "--task", str(task), "--out", str(tmp_path / "notes" / "ft")]) == 1
    assert capsys.readouterr().err == f"mlm-studio: Not a directory ({tmp_path / 'notes' / 'ft'})\n"
    assert (tmp_path / "notes").read_text() == "mine"


@pytest.fixture
def read_only(tmp_path, tmpfs):
    """A real read-only filesystem."""
    return tmpfs(tmp_path / "romnt", "ro,size=64k")


def test_a_read_only_filesystem_is_said_in_the_systems_words(pretrained, tmp_path, read_only):
    task = write_task(tmp_path / "task.csv", rows=30)
    code, out, err = cli(pretrained, "--task", task, "--out", read_only, "--device", "cpu")
    assert (code, out, err) == (1, "", f"mlm-studio: Read-only file system ({read_only / '.lock'})\n")


def test_a_table_given_as_a_tagging_task_is_one_sentence(pretrained, tmp_path, capsys):
    task = write_task(tmp_path / "x.csv", rows=30)
    out = tmp_path / "ft"
    assert main(["finetune", str(pretrained), "--task", str(task), "--kind", "tokens", "--out", str(out)]) == 1
    assert capsys.readouterr().err == (
        "mlm-studio: x.csv: a tagging task reads JSON Lines {tokens, tags} or CoNLL columns; this is a table — use "
        "--kind classification\n"
    )
    assert not out.exists()


def test_a_question_answering_file_without_kind_qa_is_named_for_what_it_is(pretrained, tmp_path):
    """A SQuAD file (also compressed) or a table of question, context and answers, given for classification or
    tagging: named, with the option to add, where the reader of labels would read it as what it is not (a SQuAD
    file as CoNLL columns: "a classifier needs at least two labels")."""
    squad = write_squad(tmp_path / "squad.json", contexts=10, facts=1)
    (tmp_path / "squad.json.gz").write_bytes(gzip.compress(squad.read_bytes()))
    rows = [{"question": "what ?", "context": "the port is red .", "answers": {"text": ["red"], "answer_start": [12]}}]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    table = "a question-answering table (question, context, answers)"
    for kind in ([], ["--kind", "classification"], ["--kind", "tokens"]):
        for name, what in (("squad.json", "a SQuAD file"), ("squad.json.gz", "a SQuAD file"), ("qa.jsonl", table)):
            code, out, err = cli(pretrained, "--task", tmp_path / name, *kind, "--out", tmp_path / "ft", *FAST)
            assert (code, out, err) == (1, "", f"mlm-studio: {name}: this looks like {what}: add --kind qa\n")
            assert not (tmp_path / "ft").exists()


def test_a_column_option_with_kind_qa_is_refused_in_a_sentence(pretrained, tmp_path):
    squad = write_squad(tmp_path / "squad.json", contexts=10, facts=1)
    for option in ("--text-column", "--label-column", "--pair-column"):
        code, out, err = cli(pretrained, "--task", squad, "--kind", "qa", option, "question", "--out", tmp_path / "ft")
        assert (code, out) == (2, "")
        assert err == (
            f"mlm-studio: {option} names a column of a labelled table; a question-answering table is read by its "
            "question, context and answers columns\n"
        )
        assert not (tmp_path / "ft").exists()


def test_export_of_a_run_another_process_trains_says_it_takes_the_weights_so_far(finetuned, tmp_path):
    run = copied(finetuned[3], tmp_path)
    command = [sys.executable, "-m", "mlm_studio", "export", str(run), str(tmp_path / "hf")]
    with RunLock(run):  # this process trains it; the export runs in another
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("Took best, its best weights by the validation score.\n")
    assert done.stderr == (
        f"mlm-studio: warning: ft is still being trained by process {os.getpid()}: best holds its weights so far, "
        "not its final ones; export it again when it finishes\n"
    )
    again = mlm_studio("export", run, tmp_path / "hf", "--overwrite")
    assert (again.returncode, again.stderr) == (0, "")  # trained by none: nothing to warn of


def test_export_takes_a_fine_tuning_runs_best_folder(finetuned, tmp_path, capsys):
    best = finetuned[3] / "best"
    assert main(["export", str(best), str(tmp_path / "hf")]) == 0
    assert capsys.readouterr().out.startswith("Took best, its best weights by the validation score.\n")
    exported, kept = (load_file(p / "model.safetensors") for p in (tmp_path / "hf", best))
    assert torch.equal(exported["classifier.weight"], kept["classifier.weight"])


def test_evaluate_refuses_a_fine_tuned_classifier_and_search_reads_its_encoder(finetuned, pretrained, capsys):
    from mlm_studio.core.evaluation.subject import load_reader

    run = finetuned[3]
    started = (pretrained / "checkpoints" / "step-0000004").resolve()
    said = (
        f"mlm-studio: ft is a fine-tuned classifier: it has no masked-LM head; fill masks and evaluate with the model "
        f"it started from ({started}) (a search reads its encoder)\n"
    )
    assert main(["evaluate", str(run)]) == 1  # `predict` labels a text with it (test_predict_finetuned_cli.py)
    assert capsys.readouterr() == ("", said)
    task = finetuned[3].parent / "task.csv"
    columns = ["--text-column", "sentence", "--label-column", "category"]
    assert main(["search", str(run), "--task", str(task), *columns, "--k", "1000", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model"] == "ft / best (fine-tuned encoder)"
    assert result["retrieval"]["k"] == 149 and result["k_asked"] == 1000  # capped at the other texts
    encoder = load_reader(run).encoder.bert.state_dict()
    tuned = load_file(run / "best" / "model.safetensors")
    assert all(torch.equal(value, tuned[f"bert.{name}"]) for name, value in encoder.items())


def test_question_answering_trains_prints_its_scores_refuses_a_new_stride_and_exports(pretrained, tmp_path):
    """`--kind qa` on a SQuAD v2.0 file: exact match and F1 with the split by answerable questions, a resume with
    another document stride refused before anything is written, the run exported as a question answerer."""
    squad = write_squad(tmp_path / "squad.json", contexts=30, facts=1, impossible=True)
    run = tmp_path / "ft"
    qa = ["--kind", "qa", "--doc-stride", 16, "--max-answer-length", 10]
    code, out, err = cli(pretrained, "--train", squad, *qa, "--out", run, *FAST)
    assert code == 0, err
    test = next(line for line in out.splitlines() if line.startswith("Test, with the best checkpoint"))
    assert re.search(r"exact match \d+\.\d%, F1 \d+\.\d% \(questions with an answer: exact \d+\.\d%, F1 \d+\.\d%; "
                     r"without one: exact \d+\.\d%\)", test), test  # fmt: skip
    assert "label  precision" not in out and "Traceback" not in err
    written = (run / "metrics.jsonl").read_bytes()
    code, out, err = cli("--resume", run, "--doc-stride", 8)
    assert code == 2 and "--doc-stride cannot change when resuming: the run's task is fixed" in err
    assert (run / "metrics.jsonl").read_bytes() == written
    assert main(["export", str(run), str(tmp_path / "export")]) == 0
    config = json.loads((tmp_path / "export" / "config.json").read_text())
    assert config["architectures"] == ["BertForQuestionAnswering"]


def test_question_answering_refuses_a_classification_file_in_a_sentence(pretrained, tmp_path):
    code, out, err = cli(
        pretrained, "--task", write_task(tmp_path / "task.csv"), "--kind", "qa", "--out", tmp_path / "ft"
    )
    assert code == 1 and out == ""
    assert err.strip().endswith(
        "task.csv: no 'question' column (columns: sentence, category); a question-answering table has question, "
        'context and answers ({"text": [...], "answer_start": [...]})'
    )
    assert "Traceback" not in err and not (tmp_path / "ft" / "config.toml").exists()


@pytest.mark.slow  # three processes fine-tune
def test_torchrun_with_two_cpu_processes_fine_tunes_like_one(pretrained, tmp_path):
    """Two gloo processes share each batch of 16 and take the steps one process takes on the same run: the same
    schedule and evaluations, and without dropout (whose draws follow each process's batch shape) every validation
    loss within 1e-3 of one process's through the run's take-off, and the same test scores."""
    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.request import StartingModel
    from mlm_studio.core.finetune.setup import create_run

    task = write_task(tmp_path / "task.csv", rows=300)
    options = FinetuneOptions("classification", task, learning_rate=1e-2, epochs=10, batch_size=16, patience=10,
                              device="cpu")  # fmt: skip
    create_run(tmp_path / "one", StartingModel(str(pretrained)), options)
    written = tmp_path / "one" / "config.toml"
    written.write_text(re.sub(r"dropout_prob = [0-9.]+", "dropout_prob = 0.0", written.read_text()))
    shutil.copytree(tmp_path / "one", tmp_path / "two")
    code, out, err = cli("--resume", tmp_path / "one", "--json")  # the run as made, from its first step
    assert code == 0, err
    one = json.loads(out)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    pair = subprocess.run(
        [*torchrun, "-m", "mlm_studio", "finetune", "--resume", str(tmp_path / "two"), "--json"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert pair.returncode == 0, pair.stderr
    two = json.loads(pair.stdout)  # only rank 0 reports: one JSON object
    assert two["steps"] == one["steps"] and two["reason"] == one["reason"] == "completed"
    assert [v["step"] for v in two["validation"]] == [v["step"] for v in one["validation"]]
    losses = [[v["loss"] for v in run["validation"]] for run in (one, two)]
    assert losses[0][-1] < 0.9 * losses[0][0]  # it learned
    assert losses[1] == pytest.approx(losses[0], rel=1e-3)
    assert two["test"]["accuracy"] == one["test"]["accuracy"]
    metrics = [json.loads(line) for line in (tmp_path / "two" / "metrics.jsonl").read_text().splitlines()]
    assert [r["type"] for r in metrics].count("started") == 1  # one process wrote the run
