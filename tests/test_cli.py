import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from mlm_studio.cli import main
from mlm_studio.core.config.presets import DEFAULT_PRESET, PRESETS
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import OBJECTIVES, PRECISIONS, SCHEDULES, STRATEGIES
from mlm_studio.core.data.formats import FORMATS, TABLE_FORMATS
from mlm_studio.core.errors import UserError
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.user_folders import RUNS_ENV
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.command import Ran, mlm_studio
from tests.core.helpers import config_file, small_config

ROOT = Path(__file__).resolve().parent.parent


def test_train_predict_and_resume(tmp_path, corpus_file, capsys):
    cfg = config_file(tmp_path, learning_rate=5e-3)
    run = tmp_path / "run"
    code = main(["train", "--config", str(cfg), "--corpus", str(corpus_file), "--out", str(run), "--max-steps", "6"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "Finished (completed) at step 6: validation loss" in out.out and str(run) in out.out
    assert "step 6 loss" in out.err and "of 6 steps · ETA" in out.err and "Evaluation at step 4: loss" in out.err

    assert main(["predict", str(run), "the [MASK] of the [MASK]", "--json", "--top-k", "3"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload) == 2 and all(len(mask) == 3 for mask in payload)
    assert set(payload[0][0]) == {"score", "token", "token_str", "sequence"}
    assert [c["score"] for c in payload[0]] == sorted((c["score"] for c in payload[0]), reverse=True)

    assert main(["predict", str(run), "the [MASK] is", "--fill"]) == 0
    assert "[MASK] 1:" in capsys.readouterr().out

    assert main(["train", "--resume", str(run), "--max-steps", "9"]) == 0
    out = capsys.readouterr()
    assert "steps 6 → 9" in out.out and "Finished (completed) at step 9" in out.out
    assert RunDir(run).latest_checkpoint().name == "step-0000009"


def test_export_then_predict_the_export_then_continue_pre_training_it(tmp_path, corpus_file, capsys):
    cfg = config_file(tmp_path, learning_rate=5e-3)
    run, exported, further = tmp_path / "run", tmp_path / "hf", tmp_path / "further"
    assert (
        main(["train", "--config", str(cfg), "--corpus", str(corpus_file), "--out", str(run), "--max-steps", "4"]) == 0
    )
    capsys.readouterr()
    assert main(["export", str(run), str(exported)]) == 0
    assert "AutoModelForMaskedLM.from_pretrained" in capsys.readouterr().out
    assert (exported / "model.safetensors").is_file() and (exported / "README.md").is_file()

    text = "the [MASK] of the list"
    assert main(["predict", str(run), text, "--json"]) == 0
    from_run = json.loads(capsys.readouterr().out)
    assert main(["predict", str(exported), text, "--json"]) == 0
    from_export = json.loads(capsys.readouterr().out)
    assert [c["token"] for c in from_export] == [c["token"] for c in from_run]  # one mask: one list
    assert [c["score"] for c in from_export] == pytest.approx([c["score"] for c in from_run], abs=1e-6)

    assert main(["export", str(run), str(exported)]) == 1
    assert "allow overwriting" in capsys.readouterr().err

    args = ["train", "--init-from", str(exported), "--corpus", str(corpus_file), "--out", str(further)]
    assert main([*args, "--config", str(cfg), "--max-steps", "2"]) == 0
    out = capsys.readouterr()
    assert "BERT 1 layers × 32" in out.err and "Finished (completed) at step 2" in out.out
    assert RunDir(further).initial_weights is not None
    assert RunDir(further).tokenizer.fingerprint() == RunDir(run).tokenizer.fingerprint()

    assert main([*args[:-1], str(tmp_path / "other"), "--tokenizer", str(exported / "vocab.txt")]) == 1
    assert "leave out --tokenizer" in capsys.readouterr().err


def test_a_time_budget_ends_training_by_the_clock(tmp_path, corpus_file, capsys):
    cfg = config_file(tmp_path, max_steps=1, eval_interval=10_000, checkpoint_interval=10_000)
    run = tmp_path / "run"
    assert (
        main(["train", "--config", str(cfg), "--corpus", str(corpus_file), "--out", str(run), "--time-budget", "2s"])
        == 0
    )
    out = capsys.readouterr()
    assert "for 0m02s" in out.out and "Finished (completed)" in out.out
    steps = [r for r in RunDir(run).read_metrics() if r["type"] == "step"]
    assert len(steps) > 1 and steps[-1]["elapsed"] >= 2.0  # the budget, not max_steps, ended it
    assert RunDir(run).config.training.time_budget == 2.0
    with pytest.raises(SystemExit):
        main(["train", "--time-budget", "soon"])
    assert "'soon' is not a duration" in capsys.readouterr().err


def test_errors_are_one_readable_line(tmp_path, corpus_file, capsys):
    assert main(["predict", str(tmp_path), "a [MASK]"]) == 1
    assert capsys.readouterr().err.strip() == f"mlm-studio: {tmp_path} is not a run folder (it has no config.toml)"
    assert main(["tensorboard", str(tmp_path / "gone")]) == 1  # a name that is nothing: said so, not "no config.toml"
    assert capsys.readouterr().err.strip() == f"mlm-studio: {tmp_path / 'gone'} does not exist"
    empty = tmp_path / "empty.txt"
    empty.write_text(" ")
    assert main(["train", "--corpus", str(empty), "--out", str(tmp_path / "r")]) == 1
    assert "No usable text in the corpus (empty.txt: no usable text)" in capsys.readouterr().err


def cli(*args, in_a_subprocess=False):
    """`mlm-studio ARGS` in this process (or a subprocess), its help unwrapped (argparse wraps at $COLUMNS)."""
    if in_a_subprocess:
        done = subprocess.run([sys.executable, "-m", "mlm_studio", *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "COLUMNS": "100"})  # fmt: skip
    else:
        done = mlm_studio(*args, env={"COLUMNS": "100"})
    return done.returncode, " ".join(done.stdout.split()), " ".join(done.stderr.split())


def test_the_help_lists_the_engines_choices_as_a_subprocess():
    code, train_help, _ = cli("train", "--help", in_a_subprocess=True)
    assert code == 0
    assert f"--objective {{{','.join(OBJECTIVES)}}}" in train_help
    assert f"--precision {{{','.join(PRECISIONS)}}}" in train_help
    for names in (PRESETS, OBJECTIVES, PRECISIONS, STRATEGIES, SCHEDULES):
        assert all(f" {name}" in train_help for name in names), names
    assert f"a preset: {DEFAULT_PRESET} (the default)" in train_help and f"files or folders: {FORMATS};" in train_help
    code, evaluate_help, _ = cli("evaluate", "--help", in_a_subprocess=True)
    assert code == 0 and f"labelled texts: {TABLE_FORMATS}" in evaluate_help


def test_a_device_the_engine_does_not_name_exits_2_and_one_this_machine_lacks_is_refused(tmp_path):
    for command in (("train", "--out", str(tmp_path / "run")), ("predict", str(tmp_path), "a [MASK]")):
        code, out, err = cli(*command, "--device", "tpu")
        assert code == 2 and out == "" and "argument --device: 'tpu' is not a device: write auto, cpu, cuda" in err
    if not torch.cuda.is_available():
        code, out, err = cli("predict", str(tmp_path), "a [MASK]", "--device", "cuda")
        assert (
            code == 1
            and err.strip() == "mlm-studio: device cuda was asked for, but PyTorch sees no CUDA GPU; choose cpu or auto"
        )
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("option", "names"), [("--objective", OBJECTIVES), ("--precision", PRECISIONS),
                                               ("--preset", tuple(PRESETS))])  # fmt: skip
def test_a_wrong_choice_exits_2_with_argparses_message_as_a_subprocess(tmp_path, option, names):
    code, out, err = cli("train", option, "enormous", "--out", str(tmp_path / "run"), in_a_subprocess=True)
    assert code == 2 and out == "" and not (tmp_path / "run").exists()
    assert err.startswith("usage: mlm-studio train ")
    if option == "--preset":  # its own check: the value quoted short, the presets in words
        assert f"mlm-studio train: error: argument {option}: 'enormous' is not a preset: choose " in err
        assert all(f" {name}" in err.split("is not a preset", 1)[1] for name in names)
        return
    assert f"mlm-studio train: error: argument {option}: invalid choice: 'enormous' (choose from " in err
    assert all(f"'{name}'" in err.split("choose from", 1)[1] for name in names)


def test_resume_with_another_tokenizer_is_refused(tmp_path, corpus_file, capsys):
    cfg = config_file(tmp_path)
    run = tmp_path / "run"
    assert (
        main(["train", "--config", str(cfg), "--corpus", str(corpus_file), "--out", str(run), "--max-steps", "2"]) == 0
    )
    other = tmp_path / "vocab.txt"
    other.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n" + "".join(f"w{i}\n" for i in range(100)))
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--tokenizer", str(other)]) == 1
    assert "differ from the run's (run → given): tokenizer: 400 pieces" in capsys.readouterr().err


def command(*args):
    return [sys.executable, "-m", "mlm_studio", *map(str, args)]


@pytest.mark.slow  # a process trained, then killed
def test_kill_dash_nine_then_resume_continues_from_the_last_checkpoint(tmp_path, corpus_file):
    cfg = config_file(tmp_path, max_steps=10_000, checkpoint_interval=3, eval_interval=1000)
    run = tmp_path / "run"
    process = subprocess.Popen(
        command("train", "--config", cfg, "--corpus", corpus_file, "--out", run),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    checkpoints = 0
    for line in process.stderr:
        checkpoints += line.startswith("Checkpoint written: ")
        if checkpoints == 2:
            break
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    latest = RunDir(run).latest_checkpoint()
    assert latest is not None and int(latest.name.split("-")[1]) >= 6
    resumed = mlm_studio("train", "--resume", run, "--max-steps", int(latest.name.split("-")[1]) + 3)
    assert resumed.returncode == 0, resumed.stderr
    assert f"steps {int(latest.name.split('-')[1])} →" in resumed.stdout and "Finished (completed)" in resumed.stdout


@pytest.mark.slow  # a process trained, then interrupted
def test_ctrl_c_stops_cleanly_with_a_checkpoint(tmp_path, corpus_file):
    cfg = config_file(tmp_path, max_steps=10_000, checkpoint_interval=10_000, eval_interval=10_000)
    run = tmp_path / "run"
    process = subprocess.Popen(
        command("train", "--config", cfg, "--corpus", corpus_file, "--out", run),
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    for line in process.stderr:
        if line.startswith("step 3 "):
            break
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err  # stopped by the user, as `finetune` says it: a script goes no further
    assert "Finished (stopped)" in out
    assert RunDir(run).latest_checkpoint() is not None


@pytest.mark.slow  # three processes train 40 steps
def test_torchrun_with_two_cpu_processes_trains_like_one(tmp_path, corpus_file):
    """Two gloo processes with 8 blocks each take the steps one process takes with 16 blocks."""
    single = config_file(tmp_path, batch_size=16, max_steps=40, eval_interval=40, learning_rate=5e-3)
    alone = mlm_studio("train", "--config", single, "--corpus", corpus_file, "--out", tmp_path / "one")
    assert alone.returncode == 0, alone.stderr
    (tmp_path / "two-cfg").mkdir()
    double = config_file(tmp_path / "two-cfg", batch_size=8, max_steps=40, eval_interval=40, learning_rate=5e-3)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    pair = subprocess.run(
        [
            *torchrun,
            "-m",
            "mlm_studio",
            "train",
            "--config",
            str(double),
            "--corpus",
            str(corpus_file),
            "--out",
            str(tmp_path / "two"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert pair.returncode == 0, pair.stderr
    assert pair.stdout.count("Finished (completed) at step 40") == 1  # only rank 0 reports

    def losses(path):
        return [r["loss"] for r in RunDir(path).read_metrics() if r["type"] == "step"]

    one, two = losses(tmp_path / "one"), losses(tmp_path / "two")
    assert len(one) == len(two) == 40

    def mean(values):
        return sum(values) / len(values)

    # Single steps are noisy; the trend is compared over the first and last five steps.
    assert mean(one[-5:]) < mean(one[:5]) - 0.3 and mean(two[-5:]) < mean(two[:5]) - 0.3, (one, two)
    assert abs(mean(one[-5:]) - mean(two[-5:])) < 0.25
    state = json.loads((RunDir(tmp_path / "two").latest_checkpoint() / "state.json").read_text())
    assert state["world_size"] == 2 and state["tokens_seen"] == 40 * 16 * 32


def test_the_terminal_shows_the_corpus_report_the_window_shows(tmp_path, corpus_file):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "good.txt").write_text(corpus_file.read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "notes.jsonl").write_text('{"text": "a fine line"}\n{broken\n{"other": 1}\n', encoding="utf-8")
    (folder / "old.txt").write_bytes("caf\xe9 cr\xe8me, na\xefve".encode("cp1252"))
    (folder / "empty.txt").write_text("")
    done = mlm_studio(
        "train", "--config", config_file(tmp_path), "--corpus", folder, "--out", tmp_path / "run", "--max-steps", 1
    )
    assert done.returncode == 0, done.stderr
    assert "Corpus: " in done.stderr and "1 skipped, 2 problem line(s)" in done.stderr
    assert "empty.txt" in done.stderr and "skipped:" in done.stderr
    assert "notes.jsonl" in done.stderr and "line 2:" in done.stderr and "line 3:" in done.stderr
    assert "old.txt" in done.stderr and "cp1252" in done.stderr


def test_ecosystem_formats_and_run_mlm_names_train_and_are_recorded(tmp_path, corpus_file):
    import gzip
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    paragraphs = corpus_file.read_text().split("\n\n")
    shards = tmp_path / "shards"
    shards.mkdir()
    for n, part in enumerate((paragraphs[:150], paragraphs[150:300])):
        pq.write_table(pa.table({"text": part}), shards / f"train-{n}.parquet")
    (tmp_path / "data.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps({"text": p}) + "\n" for p in paragraphs[300:350]).encode())
    )
    (tmp_path / "notes.txt.zst").write_bytes(zstandard.compress("\n\n".join(paragraphs[350:]).encode()))
    config = tmp_path / "small.json"
    config.write_text(json.dumps(_small_sections()))
    run = tmp_path / "run"
    done = mlm_studio(
        "train",
        "--config",
        config,
        "--train_file",
        *sorted(shards.glob("*.parquet")),
        tmp_path / "data.jsonl.gz",
        tmp_path / "notes.txt.zst",
        "--learning_rate",
        "1e-3",
        "--max_steps",
        "3",
        "--set",
        "masking.strategy=whole_word",
        "--output-dir",
        run,
    )
    assert done.returncode == 0, done.stderr
    assert "4 file(s); 0 skipped" in done.stderr and "Finished (completed) at step 3" in done.stdout
    recorded = RunDir(run).config
    assert recorded.training.learning_rate == 1e-3 and recorded.masking.strategy == "whole_word"
    assert recorded.model.hidden_size == 32  # from the JSON configuration


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--set", "model.hidden_size=abc"], "--set: model.hidden_size must be int, not str ('abc')"),
        (["--set", "training.learning_rate=2"], "--set: training.learning_rate must be between 0 and 1, not 2.0"),
        (["--set", "training.speed=3"], "--set: unknown field 'speed' in [training]"),
        (["--mlm_probability", "1.5"], "--set: masking.rate must be between 0 and 1 (exclusive), not 1.5"),
        (["--set", "nothing"], "write SECTION.FIELD=VALUE"),
        (["--set", 'model.family=["bert"]'], "--set: model.family must be str, not list (['bert'])"),
    ],
)
def test_settings_from_the_command_line_are_checked_like_a_file(tmp_path, options, words):
    done = mlm_studio("train", "--out", tmp_path / "run", *options)
    assert done.returncode != 0 and words in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()


def _small_sections():
    """The small test configuration as a JSON-like dict of its sections (400-piece tokenizer)."""
    from dataclasses import replace

    from mlm_studio.core.config.sections import SECTIONS
    from tests.core.helpers import small_config

    config = small_config()
    config = replace(config, tokenizer=replace(config.tokenizer, vocab_size=400))
    return {name: getattr(config, name).values() for name in SECTIONS}


@pytest.mark.parametrize("family", ["roberta", "distilbert", "modernbert"])
def test_each_family_from_the_hub_cache_trains_predicts_and_exports(family, tmp_path, corpus_file, small_corpus,
                                                                     monkeypatch):  # fmt: skip
    """`train --init-from NAME` with NAME in the local Hugging Face cache (offline), `predict` on the run and
    on the cached model (typed [MASK] for RoBERTa's <mask>), `export` back as the family's folder. (That a fresh
    process finds the cache where HF_HUB_CACHE says: tests/core/test_hub_cache.py.)"""
    from itertools import islice

    from huggingface_hub import constants

    from tests.core.family_folders import make_folder
    from tests.core.hub_layout import point_main_at, use_cache

    snapshot = tmp_path / "hub" / f"models--tiny--{family}" / "snapshots" / "abc123"
    make_folder(family, list(islice(small_corpus.iter_documents(), 400)), snapshot)
    point_main_at(snapshot)
    use_cache(monkeypatch, tmp_path / "hub")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # read once, when huggingface_hub is imported

    def cli(*args: str) -> Ran:
        done = mlm_studio(*args)
        assert done.returncode == 0, done.stderr
        return done

    run = tmp_path / "run"
    trained = cli("train", "--init-from", f"tiny/{family}", "--corpus", str(corpus_file), "--out", str(run),
                  "--max_steps", "3", "--max_seq_length", "32", "--per_device_train_batch_size", "4")  # fmt: skip
    title = {"roberta": "RoBERTa", "distilbert": "DistilBERT", "modernbert": "ModernBERT"}[family]
    assert f"{title} 3 layers × 48" in trained.stderr and "Finished (completed) at step 3" in trained.stdout
    for model in (str(run), f"tiny/{family}"):
        payload = json.loads(cli("predict", model, "Return the [MASK] of the list.", "--json").stdout)
        assert len(payload) == 5 and all(0 < c["score"] <= 1 for c in payload)
    cli("export", str(run), str(tmp_path / "export"))
    config = json.loads((tmp_path / "export" / "config.json").read_text())
    assert config["model_type"] == family and config["architectures"][0].lower() == f"{family}formaskedlm"


def test_evaluate_prints_the_trainers_figures_and_a_task_probe(tmp_path, corpus_file, capsys):
    from tests.core.test_diagnostics import _labelled

    run = tmp_path / "run"
    args = ["train", "--config", str(config_file(tmp_path)), "--corpus", str(corpus_file), "--out", str(run)]
    assert main([*args, "--max-steps", "8"]) == 0
    capsys.readouterr()
    trained_run = RunDir(run)
    evals = [r for r in trained_run.read_metrics() if r.get("type") == "eval"]
    task = _labelled(tmp_path / "topics.csv")
    done = mlm_studio("evaluate", trained_run.path, "--task", task, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert result["masked_accuracy"] == pytest.approx(evals[-1]["accuracy"])
    assert result["loss"] == pytest.approx(evals[-1]["loss"], rel=1e-6)
    assert {b["bucket"] for b in result["by_frequency"]} and set(result["by_kind"]) >= {"word start", "[MASK]"}
    task_scores = result["task"]
    assert task_scores["accuracy"] > task_scores["majority_accuracy"]
    assert 0 <= task_scores["recall_at_1"] <= task_scores["recall_at_5"] <= 1 and 0 < task_scores["mrr"] <= 1
    assert task_scores["bag_of_words_recall_at_1"] >= 0.9  # the topics' words tell them apart
    lines = mlm_studio("evaluate", trained_run.path, "--task", task)
    assert lines.returncode == 0, lines.stderr
    assert (
        "same-label neighbours of the held-out texts among the training texts: "
        f"recall@1 {task_scores['recall_at_1']:.2%}, recall@5 {task_scores['recall_at_5']:.2%}, "
        f"MRR {task_scores['mrr']:.3f}; bag of words recall@1 {task_scores['bag_of_words_recall_at_1']:.2%}"
    ) in lines.stdout
    table = mlm_studio("evaluate", trained_run.path, "--checkpoint", "7")
    assert table.returncode == 1 and "has no checkpoint at step 7" in table.stderr


@pytest.mark.slow  # two torchrun processes
def test_torchrun_trains_electra_with_detection_summed_over_the_processes(tmp_path, corpus_file):
    config = config_file(tmp_path, batch_size=8, max_steps=4, eval_interval=4, checkpoint_interval=4)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    arguments = ["--config", str(config), "--corpus", str(corpus_file), "--objective", "electra"]
    pair = subprocess.run(
        [*torchrun, "-m", "mlm_studio", "train", *arguments, "--out", str(tmp_path / "two")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert pair.returncode == 0, pair.stderr
    assert pair.stdout.count("Finished (completed) at step 4") == 1
    final = [r for r in RunDir(tmp_path / "two").read_metrics() if r["type"] == "eval"][-1]
    assert 0 <= final["detection_auc"] <= 1 and 0 <= final["detection_accuracy"] <= 1
    assert RunDir(tmp_path / "two").latest_checkpoint().name == "step-0000004"


# Where runs and the cache go under HOME when nothing overrides them (Windows takes its folders elsewhere).
HOME_FOLDERS = {
    "linux": (".local/share/mlm-studio/runs", ".cache/mlm-studio"),
    "darwin": ("Library/Application Support/mlm-studio/runs", "Library/Caches/mlm-studio"),
}


@pytest.mark.slow  # a fresh interpreter trains
@pytest.mark.skipif(sys.platform not in HOME_FOLDERS, reason="the user folders under HOME are Linux's and macOS's")
def test_empty_xdg_variables_leave_runs_and_cache_in_the_home_folders(tmp_path, corpus_file):
    """XDG_DATA_HOME= and XDG_CACHE_HOME= count as unset: nothing lands in the current folder."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("MLM_STUDIO_")}
    env.update(HOME=str(home), XDG_DATA_HOME="", XDG_CACHE_HOME="", PYTHONPATH=str(ROOT))
    config = config_file(tmp_path)
    done = subprocess.run(
        command("train", "--config", config, "--corpus", corpus_file, "--max-steps", 1),
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    runs, cache = (home / folder for folder in HOME_FOLDERS[sys.platform])
    [run] = runs.iterdir()
    assert str(run) in done.stdout and RunDir(run).latest_checkpoint().name == "step-0000001"
    assert any(path.is_file() for path in cache.rglob("*")) and list(work.iterdir()) == []


@pytest.mark.parametrize(
    ("kind", "name"), [("json", "x/../../../escape"), ("json", 'line one\nline "two" \\ end'), ("toml", "x/../y")]
)
def test_a_config_naming_an_unknown_preset_is_refused_before_anything_is_made(tmp_path, corpus_file, kind, name):
    """A preset a file names is a name, never a path: an unknown one is refused, nothing is created anywhere."""
    config = tmp_path / f"config.{kind}"
    if kind == "json":
        config.write_text(json.dumps({"preset": name, **_small_sections()}), encoding="utf-8")
    else:
        sections = config_file(tmp_path).read_text(encoding="utf-8").replace('preset = "custom"\n', "")
        config.write_text(f"preset = {json.dumps(name)}\n" + sections, encoding="utf-8")
    runs = tmp_path / "deep" / "runs"
    done = mlm_studio("train", "--config", config, "--corpus", corpus_file, "--max-steps", 1, env={RUNS_ENV: str(runs)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"unknown preset {name!r}; choose one of modern, quickstart" in done.stderr
    assert not (tmp_path / "deep").exists() and not (tmp_path.parent / "escape").exists()


def test_a_preset_that_is_not_text_is_refused(tmp_path, corpus_file):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"preset": ["..", "escape"], **_small_sections()}), encoding="utf-8")
    done = mlm_studio("train", "--config", config, "--corpus", corpus_file, "--out", tmp_path / "run")
    assert done.returncode == 1
    assert done.stderr == "mlm-studio: config.json: preset must be text, not list (['..', 'escape'])\n"
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # training, then three resumes
def test_a_resume_refuses_settings_it_cannot_change_and_applies_and_says_the_others(tmp_path, corpus_file):
    run = tmp_path / "run"
    train = ("train", "--config", config_file(tmp_path), "--corpus", corpus_file, "--out", run)
    assert mlm_studio(*train, "--max-steps", "2").returncode == 0
    written = {name: (run / name).read_bytes() for name in ("config.toml", "metrics.jsonl", "corpus.json")}

    other = tmp_path / "other.json"
    sections = _small_sections()
    sections["model"]["hidden_size"], sections["masking"]["rate"] = 64, 0.3
    other.write_text(json.dumps(sections), encoding="utf-8")
    resume = ("train", "--resume", run, "--max-steps", 4)
    refused = mlm_studio(*resume, "--config", other, "--set", "training.batch_size=4")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    for change in ("model.hidden_size: 32 → 64", "masking.rate: 0.15 → 0.3", "training.batch_size: 8 → 4"):
        assert change in refused.stderr
    assert "max_steps" not in refused.stderr and "Traceback" not in refused.stderr
    assert {name: (run / name).read_bytes() for name in written} == written
    if not torch.cuda.is_available():  # a precision this machine cannot train in is refused before anything is written
        refused = mlm_studio(*resume, "--precision", "fp16")
        assert refused.returncode == 1 and "fp16 needs a CUDA GPU" in refused.stderr
        assert {name: (run / name).read_bytes() for name in written} == written

    applied = mlm_studio(*resume, "--set", "training.learning_rate=2e-3")
    assert applied.returncode == 0, applied.stderr
    said = "resumed with training.learning_rate: 0.001 → 0.002; training.max_steps: 2 → 4"
    assert said in applied.stderr and "Finished (completed) at step 4" in applied.stdout
    assert RunConfig.load(run / "config.toml").training.learning_rate == 2e-3
    assert {"type": "changed", "step": 2, "message": said} in RunDir(run).read_metrics()


@pytest.mark.slow  # training
def test_a_one_document_corpus_says_why_it_has_no_validation_and_records_no_nan(tmp_path, corpus_file):
    one = tmp_path / "one.txt"
    one.write_text(" ".join(corpus_file.read_text(encoding="utf-8").split()[:3000]), encoding="utf-8")
    run = tmp_path / "run"
    done = mlm_studio("train", "--config", config_file(tmp_path), "--corpus", one, "--out", run, "--max-steps", 4)
    assert done.returncode == 0, done.stderr
    assert (
        "Warning: no validation set: data.validation_fraction (0.05) held out none of the corpus's 1 document(s), "
        "so no validation loss is recorded; a validation set takes at least two documents and a share above 0\n"
    ) in done.stderr
    assert "Finished (completed) at step 4: no evaluation, run folder" in done.stdout
    text = (run / "metrics.jsonl").read_text(encoding="utf-8")
    assert "NaN" not in text and '"type": "eval"' not in text and '"type": "step"' in text


def test_a_run_without_evaluations_and_with_a_nan_checkpoint_gets_the_truth(tmp_path, small_corpus, small_tokenizer):
    run = start_run(tmp_path / "run", small_config(max_steps=20, checkpoint_interval=2), small_corpus, small_tokenizer)
    control = TrainingControl()
    for record in Trainer(run, *training_blocks(run, small_corpus), control).run():
        if isinstance(record, StepRecord) and record.step == 3:
            control.stop()  # stopped before its first evaluation: no checkpoint has a validation loss
    assert [p.name for p in run.checkpoints()] == ["step-0000002", "step-0000003"]

    code, out, err = cli("export", str(run.path), str(tmp_path / "hf"), "--best")
    assert code == 0, err
    assert "Took step-0000003, the latest checkpoint: none of the run's checkpoints has a validation loss" in out

    weights = load_file(str(run.checkpoints()[-1] / "model.safetensors"))
    weights = {name: torch.full_like(t, float("nan")) if t.is_floating_point() else t for name, t in weights.items()}
    save_file(weights, str(run.checkpoints()[-1] / "model.safetensors"))  # as a divergence saved before the check
    code, out, err = cli("predict", str(run.path), "the [MASK] of")
    assert code == 1 and "Traceback" not in err
    assert f"Use {run.checkpoints()[0]}, the newest checkpoint with finite weights." in err
    written = {name: (run.path / name).read_bytes() for name in ("config.toml", "metrics.jsonl")}
    code, out, err = cli("train", "--resume", str(run.path), "--max-steps", "30")
    assert code == 1 and "Traceback" not in err
    assert "step-0000003's weights hold values that are not finite numbers, so training cannot resume" in err
    assert "The newest checkpoint with finite weights is step-0000002: to resume from it, move step-0000003" in err
    assert [p.name for p in run.checkpoints()] == ["step-0000002", "step-0000003"]
    assert {name: (run.path / name).read_bytes() for name in written} == written  # refused before any write

    for command_line in (("export", str(run.path), str(tmp_path / "nan")), ("evaluate", str(run.path))):
        code, out, err = cli(*command_line)
        assert code == 1 and "Traceback" not in err, command_line
        assert "step-0000003's weights hold values that are not finite numbers, so MLM Studio will not" in err
        assert f"The newest checkpoint with finite weights is {run.checkpoints()[0]}" in err
    assert not (tmp_path / "nan").exists()


# --- every command's top level: one sentence, never a traceback ----------------------------------------------
@pytest.fixture(scope="module")
def small_run(tmp_path_factory, corpus_file):
    """A run of 4 steps, trained through the command line."""
    folder = tmp_path_factory.mktemp("cli-run")
    cfg = config_file(folder)
    args = ["train", "--config", str(cfg), "--corpus", str(corpus_file), "--out", str(folder / "run")]
    assert main([*args, "--max-steps", "4"]) == 0
    return folder / "run"


@pytest.fixture(scope="module")
def encoder_only(tmp_path_factory, corpus_file):
    """A published-style `BertModel` folder: an encoder (and pooler) without a masked-LM head."""
    transformers = pytest.importorskip("transformers")
    from tests.core.family_folders import save_tokenizer

    folder = tmp_path_factory.mktemp("encoder") / "bert-encoder"
    documents = corpus_file.read_text(encoding="utf-8").split("\n\n")[:200]
    tokenizer = save_tokenizer("wordpiece", documents, folder)
    shape = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96}
    config = transformers.BertConfig(vocab_size=len(tokenizer), max_position_embeddings=64, **shape)
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(folder)
    return folder


def _ceiling(megabytes: int):
    import resource

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return apply


def test_an_unhandled_error_is_one_sentence_and_its_traceback_is_there_on_request(tmp_path):
    """256 MiB of address space is too little for PyTorch's libraries: predict cannot even import them."""
    debug = {k: v for k, v in os.environ.items() if k != "MLM_STUDIO_DEBUG"}
    args = command("predict", tmp_path, "the [MASK] of")
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, preexec_fn=_ceiling(256), env=debug)
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("mlm-studio: predict failed: ")
    assert (
        "This is a bug in MLM Studio or a library it uses, not in what you gave it: its traceback is in " in done.stderr
    )
    kept = Path(done.stderr.split("its traceback is in ")[1].split(" for a bug report")[0])
    assert "Traceback (most recent call last)" in kept.read_text(encoding="utf-8")
    debug["MLM_STUDIO_DEBUG"] = "1"
    shown = subprocess.run(args, capture_output=True, text=True, timeout=120, preexec_fn=_ceiling(256), env=debug)
    assert shown.returncode == 1 and "Traceback (most recent call last)" in shown.stderr


def as_from_a_terminal() -> None:
    """A command started from a shell: Ctrl-C neither blocked nor ignored, whatever the test's own process does."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_outside_training_exits_130_quietly(tmp_path):
    """train reads its configuration from a pipe the test holds open: Ctrl-C arrives while it waits there."""
    import threading

    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    process = subprocess.Popen(command("train", "--config", fifo, "--out", tmp_path / "run"), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)  # fmt: skip
    opened = []
    writer = threading.Thread(target=lambda: opened.append(os.open(fifo, os.O_WRONLY)))  # returns once train reads
    writer.start()
    writer.join(timeout=120)
    assert opened, "train never opened its configuration"
    for _ in range(12):  # a signal that lands while train is still opening the pipe is seen once its read returns:
        process.send_signal(signal.SIGINT)  # pressed again, as a person would, it lands in the read
        try:
            out, err = process.communicate(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        signals = [line for line in Path(f"/proc/{process.pid}/status").read_text().splitlines() if line[:3] == "Sig"]
        threads = {t.name: (t / "wchan").read_text() for t in Path(f"/proc/{process.pid}/task").iterdir()}
        process.kill()
        pytest.fail(f"train did not end on Ctrl-C: {signals}, its threads waiting in {threads}")
    os.close(opened[0])
    assert (process.returncode, out, err) == (130, "", "")
    assert not (tmp_path / "run").exists()


def test_ctrl_c_while_the_command_line_is_read_exits_130_quietly(monkeypatch, capsys):
    """The parser imports what its options name: a Ctrl-C that lands there is as quiet as one during the work."""
    import mlm_studio.cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(mlm_studio.cli, "build_parser", interrupted)
    assert mlm_studio.cli.main(["train", "--help"]) == 130
    assert capsys.readouterr() == ("", "")


def test_a_reader_that_left_ends_the_command_quietly(small_run):
    """`mlm-studio evaluate RUN | head -0`: the pipe's reading end is closed before anything is written."""
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "wb") as stdout:
        done = subprocess.run(command("evaluate", small_run), stdout=stdout, stderr=subprocess.PIPE, text=True,
                              timeout=120)  # fmt: skip
    assert (done.returncode, done.stderr) == (141, "")


@pytest.mark.parametrize("device", ["bogus", "cuda:99999999999999999999", "cuda:128", "cuda:٣", "cuda:01"])
def test_a_device_pytorch_cannot_read_is_refused_by_the_parser(small_run, capsys, device):
    with pytest.raises(SystemExit) as exited:
        main(["predict", str(small_run), "the [MASK] of", "--device", device])
    assert exited.value.code == 2
    assert (
        f"argument --device: {device!r} is not a device: write auto, cpu, cuda, cuda:N or mps"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize("device", ["cuda:0", "cuda:127"])
def test_a_gpu_this_machine_lacks_is_one_sentence(small_run, capsys, device):
    if torch.cuda.device_count() > int(device.partition(":")[2] or 0):
        pytest.skip("this machine has that GPU")
    assert main(["predict", str(small_run), "the [MASK] of", "--device", device]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mlm-studio: device {device} ") and len(err.splitlines()) == 1


def test_resolving_a_device_name_pytorch_would_misread_is_refused():
    from mlm_studio.core.runs.device import resolve_device

    for name in ("cuda:99999999999999999999", "cuda:128", "cuda:-1", "CUDA", ""):
        with pytest.raises(ValueError, match=r"is not a device: write auto, cpu, cuda, cuda:N or mps"):
            resolve_device(name)
    assert str(resolve_device("cpu")) == "cpu"


def test_an_encoder_without_a_masked_lm_head_is_predicted_and_evaluated_with_a_warning(
    encoder_only, corpus_file, capsys
):
    assert main(["predict", str(encoder_only), "the [MASK] of the list"]) == 0
    out = capsys.readouterr()
    warning = f"mlm-studio: warning: {encoder_only} holds an encoder without a masked-LM head"
    assert out.err.startswith(warning) and "these predictions are random" in out.err
    assert out.out.startswith("[MASK] 1: ")

    assert main(["predict", str(encoder_only), "the [MASK] of the [MASK]", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(candidate["untrained_head"] is True for row in rows for candidate in row)
    assert main(["predict", str(encoder_only), "the [MASK] of the list", "--json", "--fill"]) == 0
    assert json.loads(capsys.readouterr().out)["untrained_head"] is True

    assert main(["evaluate", str(encoder_only), "--corpus", str(corpus_file), "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["untrained_head"] is True and out.err.startswith(warning)


def test_evaluate_json_is_strict_json_with_null_for_empty_groups(small_run, capsys):
    assert main(["evaluate", str(small_run), "--json"]) == 0
    out = capsys.readouterr()

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    result = json.loads(out.out, parse_constant=refuse)
    empty = [b for b in result["by_frequency"] if b["count"] == 0]
    assert empty and all(b["accuracy"] is None for b in empty)  # a small corpus has no token seen 10,000+ times
    assert result["untrained_head"] is False and out.err == ""
    assert main(["evaluate", str(small_run)]) == 0
    table = capsys.readouterr().out
    assert "nan" not in table and re.search(r"10,000\+\s+0\s+—", table)


def test_evaluate_refuses_when_nothing_was_scored(encoder_only, tmp_path, capsys):
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("Too short to mask.\n", encoding="utf-8")
    assert main(["evaluate", str(encoder_only), "--corpus", str(tiny), "--json"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert (
        "nothing was scored, as the held-out text (0 blocks) gave no masked position; give a larger corpus" in out.err
    )


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.safetensors"])
def test_a_resume_from_a_checkpoint_cut_short_is_refused_before_anything_is_written(tmp_path, small_run, name):
    import shutil

    run = RunDir(shutil.copytree(small_run, tmp_path / "run"))
    latest = run.latest_checkpoint()
    (latest / name).write_bytes((latest / name).read_bytes()[:-100])
    written = {file: (run.path / file).read_bytes() for file in ("config.toml", "metrics.jsonl")}
    code, _, err = cli("train", "--resume", str(run.path), "--max-steps", "8")
    assert code == 1 and "Traceback" not in err and "resumed with" not in err
    assert f"{latest.name}: {name} cannot be read (" in err and "delete this checkpoint" not in err
    assert "no complete checkpoint comes before it, so its run cannot continue: start a new run" in err
    assert {file: (run.path / file).read_bytes() for file in written} == written


@pytest.fixture(scope="module")
def two_checkpoints(small_run, tmp_path_factory):
    """`small_run` resumed to step 8: checkpoints at steps 4 and 8 (copy it before damaging it)."""
    import shutil

    run = shutil.copytree(small_run, tmp_path_factory.mktemp("two-checkpoints") / "run")
    assert main(["train", "--resume", str(run), "--max-steps", "8"]) == 0
    return run


def run_files(folder):
    """Every file of a run folder with its bytes, but the lock (where each process that takes it writes its PID)."""
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".lock"}


def cut(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def both_cut_short(earlier, latest):
    cut(latest / "model.safetensors", 1000)
    cut(earlier / "optimizer.safetensors", 500)


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (  # the one before it damaged too: none is whole
            both_cut_short,
            "{latest}: model.safetensors cannot be read (Error while deserializing header: invalid header length); "
            "no complete checkpoint comes before it, so its run cannot continue: start a new run with the same "
            "settings (its config.toml); {earlier.name}, before it, is damaged too",
        ),
        (
            lambda earlier, latest: (latest / "state.json").write_text('{"step": 8\n'),
            "{latest}: state.json is damaged (Expecting ',' delimiter: line 2 column 1 (char 11)); "
            "move this checkpoint folder out of {latest.parent} to use {earlier.name}, the one before it",
        ),
        (
            lambda earlier, latest: (latest / "state.json").unlink(),
            "{latest}: state.json is missing; "
            "move this checkpoint folder out of {latest.parent} to use {earlier.name}, the one before it",
        ),
    ],
    ids=["both cut short", "state.json cut short", "state.json deleted"],
)
def test_a_resume_from_a_damaged_checkpoint_names_the_run_and_the_newest_whole_one_and_writes_nothing(
    tmp_path, two_checkpoints, capsys, damage, said
):
    import shutil

    run = RunDir(shutil.copytree(two_checkpoints, tmp_path / "run"))
    earlier, latest = run.checkpoints()
    damage(earlier, latest)
    before = run_files(run.path)
    assert main(["train", "--resume", str(run.path), "--max-steps", "12"]) == 1
    assert capsys.readouterr().err == f"mlm-studio: {said.format(earlier=earlier, latest=latest)}\n"
    assert run_files(run.path) == before


@pytest.mark.parametrize(
    "removed",
    [["state.json"], ["state.json", "model.safetensors", "optimizer.safetensors"]],
    ids=["state.json", "every file"],
)
def test_a_resume_whose_only_checkpoint_lost_its_state_is_refused_and_keeps_the_runs_records(
    tmp_path, small_run, capsys, removed
):
    """Its state.json deleted, or every file (the folder left empty: checkpoints are renamed into place whole, so an
    empty one lost its files): damaged, not none, so the run is not restarted at step 0 over its records."""
    import shutil

    run = RunDir(shutil.copytree(small_run, tmp_path / "run"))
    latest = run.latest_checkpoint()
    for name in removed:
        (latest / name).unlink()
    before = run_files(run.path)
    assert main(["train", "--resume", str(run.path), "--max-steps", "8"]) == 1
    problem = "state.json is missing" if len(removed) == 1 else "the folder is empty, its files removed"
    assert capsys.readouterr().err == (
        f"mlm-studio: {latest}: {problem}; no complete checkpoint comes before it, so its run cannot continue: start "
        "a new run with the same settings (its config.toml); moved aside, it would leave a resume to begin again at "
        "step 0\n"
    )
    assert run_files(run.path) == before


@pytest.mark.parametrize("command", [["export", "{run}", "{out}"], ["evaluate", "{run}"]], ids=["export", "evaluate"])
def test_reading_a_damaged_latest_checkpoint_names_it_in_its_run_and_the_whole_one_to_give_instead(
    tmp_path, two_checkpoints, capsys, command
):
    import shutil

    run = RunDir(shutil.copytree(two_checkpoints, tmp_path / "run"))
    earlier, latest = run.checkpoints()
    cut(latest / "model.safetensors", 1000)
    assert main([part.format(run=run.path, out=tmp_path / "out") for part in command]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"mlm-studio: {latest}: model.safetensors cannot be read (Error while deserializing header: invalid header "
        f"length); give {earlier}, the newest whole checkpoint of its run, instead"
    )
    assert not (tmp_path / "out").exists()


def test_a_damaged_checkpoint_names_the_one_before_it_and_moved_aside_that_one_is_resumed(tmp_path, two_checkpoints):
    import shutil

    run = RunDir(shutil.copytree(two_checkpoints, tmp_path / "run"))
    earlier, latest = run.checkpoints()
    (latest / "model.safetensors").write_bytes(b"cut")
    code, _, err = cli("train", "--resume", str(run.path), "--max-steps", "8")
    assert code == 1 and f"move this checkpoint folder out of {latest.parent} to use {earlier.name}" in err
    shutil.move(latest, tmp_path / latest.name)
    code, out, err = cli("train", "--resume", str(run.path), "--max-steps", "8")
    assert code == 0 and "steps 4 → 8" in out and "restarts" not in err


def test_a_resume_without_any_checkpoint_says_it_restarts_at_step_0(tmp_path, small_run):
    """No checkpoint folder (a run stopped before its first one): training begins again, over its records."""
    import shutil

    run = RunDir(shutil.copytree(small_run, tmp_path / "run"))
    shutil.rmtree(run.latest_checkpoint())
    code, out, err = cli("train", "--resume", str(run.path), "--max-steps", "4")
    assert code == 0 and "steps 0 → 4" in out
    assert "run has no checkpoint to continue from, so training restarts at step 0 from new weights" in err
    assert [r["step"] for r in run.read_metrics() if r["type"] == "step"] == [1, 2, 3, 4]  # once, not twice


@pytest.mark.parametrize(
    ("setting", "where"),
    [
        ("family", "config"),  # a huge wrong value in a configuration file
        ("preset", "config"),
        ("masking.strategy", "set"),  # and on the command line
        ("training.device", "set"),
        ("key", "set"),  # a setting's name
        ("field", "config"),  # a field's name in a file
        ("--preset", "flag"),
    ],
)
def test_a_huge_wrong_value_is_quoted_in_at_most_eighty_characters(tmp_path, corpus_file, capsys, setting, where):
    value = "x\ny" * 40_000
    if where == "config":
        section = "[model]\n" if setting in ("family", "field") else ""
        line = f"{json.dumps(value)} = 1" if setting == "field" else f"{setting} = {json.dumps(value)}"
        (tmp_path / "run.toml").write_text(f"{section}{line}\n", encoding="utf-8")
        args = ["--config", str(tmp_path / "run.toml")]
    elif where == "flag":
        args = [setting, value]
    else:
        args = ["--set", f"training.{value}=1" if setting == "key" else f"{setting}={value}"]
    try:
        code = main(["train", *args, "--corpus", str(corpus_file), "--out", str(tmp_path / "run"), "--max-steps", "1"])
    except SystemExit as refused:  # argparse's own refusal
        code = refused.code
    err = capsys.readouterr().err
    assert code in (1, 2) and "Traceback" not in err
    if where == "flag":  # argparse's usage first, then one line of why
        err = err.splitlines()[-1] + "\n"
    assert len(err) < 600 and err.count("\n") == 1, err
    if setting == "field":  # names are listed unquoted, each on one line, cut with "…"
        assert "unknown field(s) in [model]: x\\nyx\\ny" in err and err.rstrip().endswith("…")
        return
    [quoted] = [q for q in re.findall(r"'[^']*'", err) if "x\\ny" in q]
    assert len(quoted) <= 80 and "..." in quoted, quoted
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("option", "value", "said"), [("--lr", "-1e-3", "-0.001"), ("--warmup", "-.5E+1", "-5.0")])
def test_a_negative_number_in_any_form_is_a_value_and_its_own_check_refuses_it(tmp_path, capsys, option, value, said):
    (tmp_path / "task.csv").write_text("text,label\na,b\nc,d\n")
    assert main(["finetune", "model", "--task", str(tmp_path / "task.csv"), option, value]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"mlm-studio: {option} must be ") and err.endswith(f", not {said}\n")


def test_the_per_class_table_keeps_a_line_per_class_however_long_or_broken_a_label():
    from types import SimpleNamespace

    from mlm_studio.commands.finetune import _per_class_table
    from mlm_studio.commands.terminal import LABEL_CHARS

    long, broken = "x" * 5_000, "two\nlines"
    table = _per_class_table(SimpleNamespace(per_class=[(long, 0.5, 0.25, 1 / 3, 4), (broken, 1.0, 1.0, 1.0, 12)]))
    lines = table.splitlines()
    assert len(lines) == 3 and len({len(line) for line in lines}) == 1  # a header and a line per class, aligned
    assert lines[1].startswith("x" * (LABEL_CHARS - 1) + "…  ") and lines[2].startswith("two\\nlines ")
    assert lines[2].split()[1:] == ["100.0%", "100.0%", "100.0%", "12"]


def test_predicts_tables_keep_a_line_per_label_however_long_or_broken_or_coloured():
    from types import SimpleNamespace

    from mlm_studio.commands.predict import _labels_table, _tags_table
    from mlm_studio.commands.terminal import LABEL_CHARS

    long, broken, coloured = "Q" * 5_000, "mon\ney", "sp\x1b[31mRED\x1b[0m"
    rows = [{"label": long, "score": 0.5}, {"label": broken, "score": 0.3}, {"label": coloured, "score": 0.2}]
    lines = _labels_table(SimpleNamespace(as_pipeline=lambda top_k: rows), None).splitlines()
    assert len(lines) == 4 and "\x1b" not in "".join(lines)
    assert lines[1].startswith("Q" * (LABEL_CHARS - 1) + "…  ") and lines[2].startswith("mon\\ney ")
    entity = {"entity_group": long, "score": 0.9, "start": 0, "end": 3, "word": "Ada"}
    word = {"word": "Ada", "entity": f"B-{coloured}", "pieces_differ": False}
    tagged = SimpleNamespace(text="Ada", words=[word], entities=[entity])
    words, header, row = _tags_table(tagged).splitlines()
    assert header.startswith("entity")
    assert "\x1b" not in words and row.startswith("Q" * (LABEL_CHARS - 1) + "…  0.900")


@pytest.mark.parametrize(("kind", "option"), [("tokens", "--doc-stride"), ("classification", "--max-answer-length")])
def test_question_answerings_options_on_another_kind_are_refused(tmp_path, capsys, kind, option):
    (tmp_path / "task.csv").write_text("text,label\na,b\nc,d\n")
    assert main(["finetune", "model", "--task", str(tmp_path / "task.csv"), "--kind", kind, option, "10"]) == 2
    assert capsys.readouterr().err == (
        f"mlm-studio: {option} is question answering's (--kind qa); a {kind} task reads none\n"
    )


def test_a_resume_to_the_length_a_run_has_is_refused_saying_how_far_it_got(tmp_path, small_run, capsys):
    import shutil

    run = RunDir(shutil.copytree(small_run, tmp_path / "run"))
    before = (run.path / "metrics.jsonl").read_bytes()
    assert main(["train", "--resume", str(run.path), "--max-steps", "4"]) == 1
    err = capsys.readouterr().err
    assert "is at step 4, and training.max_steps is 4, so nothing is left to train" in err and "more steps" in err
    assert (run.path / "metrics.jsonl").read_bytes() == before


def test_a_slow_phase_is_said_once_where_stderr_is_not_a_terminal(capsys, monkeypatch):
    from mlm_studio.commands import terminal

    clock = iter([0.0, 1.0, 4.9, 5.0, 9.0, 9.5, 20.0])
    monkeypatch.setattr(terminal.time, "monotonic", lambda: next(clock))
    status = terminal.Status()
    for done, message in [(0, "Reading a.csv"), (1, "Reading a.csv"), (0, "Encoding 9 examples")] + [
        (n, "Scoring 9 examples") for n in range(4)
    ]:
        status.report(done, 9, message)
    # a phase said once, when it has lasted 5 s (Scoring: begun at 5.0 s, said at 20.0 s), a short one never
    assert capsys.readouterr().err == "Scoring 9 examples…\n"


@pytest.mark.parametrize("inside", ["tensorboard", "checkpoints", ".", "new"])
def test_an_export_into_the_run_it_comes_from_is_refused_as_inside_it(tmp_path, small_run, capsys, inside):
    import shutil

    run = Path(shutil.copytree(small_run, tmp_path / "run"))
    before = run_files(run)
    out = run / inside
    assert main(["export", str(run), str(out)]) == 1
    assert capsys.readouterr().err == (
        f"mlm-studio: {out} is inside the run {run} it would be exported from; an export goes into a folder of its "
        "own: choose one outside the run\n"
    )
    assert run_files(run) == before


@pytest.mark.parametrize(
    ("raised", "refusal"),
    [
        (ValueError("operands could not be broadcast together with shapes (3,) (4,)"), False),
        (KeyError("hidden_size"), False),
        (UserError("the run has no checkpoint to export; train it first"), True),
    ],
)
def test_only_a_refusal_is_said_as_one_and_any_other_error_as_a_bug(tmp_path, monkeypatch, raised, refusal):
    """A ValueError from deep inside (numpy's, torch's, ours) is a bug, not something the user gave: it is said as a
    bug with its traceback kept for a report, never as a one-line refusal; a UserError is the refusal it says."""
    from mlm_studio.commands import export

    def failing(*args, **kwargs):
        raise raised

    monkeypatch.setattr(export, "export_choice", failing)
    monkeypatch.setenv("MLM_STUDIO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MLM_STUDIO_DEBUG", raising=False)
    done = mlm_studio("export", tmp_path / "run", tmp_path / "out")
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    if refusal:
        assert done.stderr == "mlm-studio: the run has no checkpoint to export; train it first\n"
        assert not (tmp_path / "cache" / "crashes").exists()
    else:
        assert "This is a bug in MLM Studio or a library it uses, not in what you gave it" in done.stderr
        (kept,) = (tmp_path / "cache" / "crashes").iterdir()
        assert type(raised).__name__ in kept.read_text(encoding="utf-8") and str(kept) in done.stderr


@pytest.mark.parametrize(
    "given",
    [
        ["finetune", "--task", "task.csv"],  # no MODEL
        ["finetune", "model", "--task", "task.csv", "--compare", "--resume", "run"],
        ["finetune", "model", "--task", "task.csv", "--search", "--compare"],
        ["finetune", "scratch:", "--task", "task.csv"],  # fresh weights of no model (not of the working folder's)
        ["finetune", "", "--task", "task.csv"],
    ],
)
def test_options_that_cannot_go_together_exit_2_as_every_misused_option_does(tmp_path, given):
    done = mlm_studio(*given)
    assert done.returncode == 2 and done.stderr.startswith("mlm-studio: ") and done.stderr.count("\n") == 1
