import csv
import io
import json
import math
import os
import shutil

import pytest

from mlm_studio.core.runs.history import TAIL_BYTES, list_runs, metrics_csv, summarize
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.files import atomic_write_text


def test_a_finished_run_is_summarized_from_its_last_records(trained_run):
    summary = summarize(trained_run)
    records = trained_run.read_metrics()
    last_eval = [r for r in records if r["type"] == "eval"][-1]
    last_step = [r for r in records if r["type"] == "step"][-1]
    assert summary.state == "completed" and summary.checkpoint_step == 30
    assert (summary.val_loss, summary.val_accuracy) == (last_eval["loss"], last_eval["accuracy"])
    assert summary.tokens_seen == max(last_eval["tokens_seen"], last_step["tokens_seen"])


def test_killed_failed_and_long_runs_are_told_apart(tmp_path, trained_run):
    killed = RunDir(shutil.copytree(trained_run.path, tmp_path / "runs" / "killed"))
    lines = killed.metrics_path.read_text().splitlines()
    killed.metrics_path.write_text("\n".join(line for line in lines if '"finished"' not in line) + "\n")
    assert summarize(killed).state == "interrupted"

    failed = RunDir(shutil.copytree(trained_run.path, tmp_path / "runs" / "failed"))
    failed.append_metrics([{"type": "failed", "step": 30, "message": "loss became NaN"}])
    assert summarize(failed).state == "failed"

    long = RunDir(shutil.copytree(trained_run.path, tmp_path / "runs" / "long"))
    padding = json.dumps({"type": "step", "step": 1, "tokens_seen": 1, "elapsed": 0.1, "loss": 9.0}) + "\n"
    long.metrics_path.write_text(padding * (2 * TAIL_BYTES // len(padding)) + trained_run.metrics_path.read_text())
    assert summarize(long) == summarize(trained_run).__class__(
        **{**summarize(trained_run).__dict__, "path": long.path, "modified": long.path.stat().st_mtime}
    )
    assert {run.name for run in list_runs(tmp_path / "runs")} == {"killed", "failed", "long"}


def test_metrics_are_written_as_strict_json_and_old_nan_values_read_as_missing(tmp_path, trained_run):
    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    old = '{"type": "eval", "step": 31, "tokens_seen": 1, "elapsed": 2.0, "loss": NaN, "accuracy": 0.5, '
    old += '"top5_accuracy": 0.6, "perplexity": Infinity}\n'
    with open(run.metrics_path, "a") as f:
        f.write(old)  # as versions before strict JSON wrote it
    run.append_metrics(
        [{"type": "step", "step": 32, "loss": float("inf"), "grad_norm": -float("inf"), "x": [math.nan]}]
    )
    last = run.metrics_path.read_text().splitlines()[-1]
    assert json.loads(last, parse_constant=pytest.fail) == {
        "type": "step",
        "step": 32,
        "loss": None,
        "grad_norm": None,
        "x": [None],
    }
    evaluation = run.read_metrics()[-2]
    assert (evaluation["loss"], evaluation["accuracy"], evaluation["perplexity"]) == (None, 0.5, None)
    summary = summarize(run)
    assert summary.val_loss is None and summary.val_accuracy == 0.5
    rows = list(csv.DictReader(io.StringIO(metrics_csv(run.read_metrics()))))
    assert rows[-2]["loss"] == "" and rows[-2]["accuracy"] == "0.5"

    run.truncate_metrics_after(31)  # a resume rewrites the file: strictly, the old NaN as null
    for line in run.metrics_path.read_text().splitlines():
        json.loads(line, parse_constant=pytest.fail)
    assert run.read_metrics()[-1]["step"] == 31


def test_a_record_of_the_wrong_types_is_read_as_missing_never_raised(tmp_path, trained_run):
    """A damaged line of metrics.jsonl (a number written as text) neither stops the runs list nor reads as a value:
    the summary takes what is of its type, and a record read back typed is none."""
    from mlm_studio.core.runs.records import StepRecord, TestRecord, typed_record

    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    run.append_metrics([
        {"type": "started", "step": 30, "total_steps": "many", "time_budget": [1]},
        {"type": "step", "step": 31, "tokens_seen": "many", "elapsed": "long", "loss": 1.0},
        {"type": "eval", "step": 31, "loss": "low", "accuracy": True},
        {"type": "finished", "step": 31, "reason": 5},
    ])  # fmt: skip
    summary = summarize(run)
    assert (summary.state, summary.step, summary.val_step) == ("completed", 31, 31)
    assert (summary.tokens_seen, summary.elapsed, summary.val_loss, summary.val_accuracy) == (0, 0.0, None, None)
    assert (summary.total_steps, summary.time_budget) == (0, 0.0)  # its last start's, damaged: unknown
    step = next(r for r in run.read_metrics() if r["type"] == "step")
    assert typed_record(step, StepRecord) == StepRecord(**{k: v for k, v in step.items() if k != "type"})
    assert typed_record({**step, "loss": "low"}, StepRecord) is None
    assert typed_record({**step, "newer_field": 1}, StepRecord) is not None  # another version's field: aside
    test = {"step": 3, "tokens_seen": 1, "elapsed": 0.1, "epoch": 1.0, "loss": 0.5, "accuracy": 0.5, "macro_f1": 0.4,
            "best_step": 3, "labels": ["a", "b"], "per_class": [["a", 0.5, 0.5, 0.5, 2], ["b", None, None, None, 0]],
            "confusion": [[1, 1], [0, 0]]}  # fmt: skip
    read = typed_record(test, TestRecord)
    assert read.per_class == (("a", 0.5, 0.5, 0.5, 2), ("b", None, None, None, 0))
    assert read.confusion == ((1, 1), (0, 0)) and read.labels == ("a", "b")
    assert typed_record({**test, "confusion": "x"}, TestRecord) is None
    assert typed_record({**test, "per_class": [["a", 0.5, 0.5, 0.5]]}, TestRecord) is None


def test_a_runs_records_read_back_typed_leave_out_the_damaged_ones_in_their_order(tmp_path, trained_run):
    from mlm_studio.core.runs.records import EvalRecord, FinishedRecord, Record, StepRecord

    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    before = run.records(EvalRecord)
    assert before and all(type(r) is EvalRecord for r in before)
    assert [r.step for r in before] == [r["step"] for r in run.read_metrics() if r["type"] == "eval"]
    run.append_metrics([
        {"type": "eval", "step": 40, "loss": "low"},
        {"type": "step", "step": 41, "tokens_seen": 9, "elapsed": 1.0, "loss": 2.0, "accuracy": 0.5,
         "learning_rate": 1e-3, "grad_norm": 1.0, "tokens_per_second": 10.0},
        {"type": "finished", "step": 41, "reason": "completed", "run_dir": "run", "val_loss": None,
         "val_accuracy": None},
        {"type": "another version's", "step": 42},
    ])  # fmt: skip
    assert run.records(EvalRecord) == before  # the damaged evaluation is left out
    last = run.records(StepRecord, FinishedRecord)[-2:]
    assert [type(r) for r in last] == [StepRecord, FinishedRecord] and last[0].loss == 2.0
    every = run.records()
    assert all(isinstance(r, Record) for r in every) and every[-1] == last[-1]


def test_a_runs_configuration_is_read_once_and_again_when_its_file_changes(tmp_path, trained_run, monkeypatch):
    from mlm_studio.core.config import run_config

    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    reads = []
    load = run_config.RunConfig.load
    monkeypatch.setattr(run_config.RunConfig, "load", lambda *a, **k: reads.append(1) or load(*a, **k))
    first = run.config
    assert run.config is first and len(reads) == 1
    text = (run.path / "config.toml").read_text(encoding="utf-8")
    (run.path / "config.toml").write_text(text.replace(f"seed = {first.training.seed}", "seed = 1234"), "utf-8")
    assert run.config.training.seed == 1234 and len(reads) == 2


def test_a_configuration_replaced_within_the_clocks_tick_is_read_again(tmp_path, trained_run):
    """A file system whose times tick in seconds (HFS+, FAT, many network shares) gives a config.toml rewritten
    within the same second, of the same size, the same time: the file put in its place is still read anew."""
    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    path = run.path / "config.toml"
    first = run.config
    before = path.stat()
    text = path.read_text(encoding="utf-8").replace(f"seed = {first.training.seed}", "seed = 9")
    assert len(text) == before.st_size  # the same size: only the time and the file could tell
    atomic_write_text(path, text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert run.config.training.seed == 9
