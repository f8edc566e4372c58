import json
import shutil

from mlm_studio.core.storage.history import TAIL_BYTES, list_runs, summarize
from mlm_studio.core.storage.run_folder import RunDir


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
