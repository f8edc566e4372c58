"""Where a run's metrics go besides metrics.jsonl: MLflow's own client reads back what a run reported (its settings,
every step's values, its end), a resume goes on in the same MLflow run, and a missing package or a store that
cannot be reached is said once while the run trains on."""

import json
import sys

import pytest

from mlm_studio.core.runs.records import FinishedRecord, StartedRecord, WarningRecord
from mlm_studio.core.runs.sinks import reported_to
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """An MLflow tracking store (sqlite, MLflow's default kind) made once: making its tables takes seconds."""
    pytest.importorskip("mlflow", reason="the mlflow package is not installed (pip install 'mlm-studio[mlflow]')")
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    MlflowClient(uri).search_experiments()
    return uri


@pytest.fixture
def store(database, monkeypatch, request):
    """The store, named as MLflow's users name it, with an experiment of the test's own ("sinks test: NAME")."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", database)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", f"sinks test: {request.node.name}")
    return database


def runs_of(client, request):
    return client.search_runs([client.get_experiment_by_name(f"sinks test: {request.node.name}").experiment_id])


def trained(path, small_corpus, small_tokenizer, steps=8, report_to="mlflow"):
    config = small_config(max_steps=steps, log_interval=2, eval_interval=4, report_to=report_to)
    run = start_run(path, config, small_corpus, small_tokenizer)
    return run, list(Trainer(run, *training_blocks(run, small_corpus)).run())


def test_report_to_names_the_sinks():
    assert reported_to("tensorboard+mlflow") == ("tensorboard", "mlflow")
    assert reported_to("none") == () and reported_to("mlflow") == ("mlflow",)


def test_a_run_reported_to_mlflow_reads_back_with_its_settings_metrics_and_end(
    store, tmp_path, small_corpus, small_tokenizer, request
):
    from mlflow import MlflowClient

    run, records = trained(tmp_path / "run", small_corpus, small_tokenizer)
    assert isinstance(records[-1], FinishedRecord) and "metrics reported to MLflow" in records[0].describe()
    assert not (tmp_path / "run" / "tensorboard").exists()  # not asked for
    client = MlflowClient(store)
    (found,) = runs_of(client, request)
    assert found.info.run_name == "run" and found.info.status == "FINISHED"
    assert found.data.tags["mlm_studio.run_dir"] == str((tmp_path / "run").resolve())
    assert found.data.params["training.learning_rate"] == str(run.config.training.learning_rate)
    assert found.data.params["model.hidden_size"] == "32"
    steps = [r for r in run.read_metrics() if r["type"] == "step"]
    history = client.get_metric_history(found.info.run_id, "train/loss")
    assert [(m.step, m.value) for m in history] == [(r["step"], pytest.approx(r["loss"])) for r in steps]
    evaluations = client.get_metric_history(found.info.run_id, "eval/accuracy")
    assert [m.step for m in evaluations] == [4, 8]
    assert json.loads((tmp_path / "run" / "mlflow.json").read_text())["run_id"] == found.info.run_id


def test_a_resumed_run_goes_on_in_the_same_mlflow_run(store, tmp_path, small_corpus, small_tokenizer, request):
    from mlflow import MlflowClient

    from mlm_studio.core.runs.control import TrainingControl

    config = small_config(max_steps=8, log_interval=1, checkpoint_interval=4, report_to="mlflow")
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    control = TrainingControl()
    for record in Trainer(run, *training_blocks(run, small_corpus), control).run():
        if record.kind == "checkpoint" and record.step == 4:
            control.stop()
    client = MlflowClient(store)
    (stopped,) = runs_of(client, request)
    assert stopped.info.status == "KILLED"  # stopped by the user
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    (again,) = runs_of(client, request)
    assert again.info.run_id == stopped.info.run_id and again.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(again.info.run_id, "train/loss")][-1] == 8


def test_without_the_mlflow_package_the_run_says_so_once_and_trains(
    tmp_path, small_corpus, small_tokenizer, monkeypatch
):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError, as where it is missing
    _, records = trained(tmp_path / "run", small_corpus, small_tokenizer, report_to="tensorboard+mlflow")
    said = [r.message for r in records if isinstance(r, WarningRecord) and "MLflow" in r.message]
    assert said == [
        'metrics are not reported to MLflow: the mlflow package is not installed (pip install "mlm-studio[mlflow]"); '
        "metrics.jsonl keeps every record"
    ]
    assert isinstance(records[-1], FinishedRecord)


def test_a_store_that_cannot_be_reached_is_said_once_and_the_run_trains_on(
    tmp_path, small_corpus, small_tokenizer, monkeypatch
):
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    _, records = trained(tmp_path / "run", small_corpus, small_tokenizer)
    said = [r.message for r in records if isinstance(r, WarningRecord) and "MLflow" in r.message]
    assert len(said) == 1 and said[0].startswith("MLflow is not reported to (")
    assert isinstance(records[0], StartedRecord) and isinstance(records[-1], FinishedRecord)


def test_finetune_and_train_report_to_mlflow_from_the_command_line(store, tmp_path, request, small_tokenizer):
    from mlflow import MlflowClient

    from tests.command import mlm_studio
    from tests.core.helpers import config_file
    from tests.core.test_finetune import write_task

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"line {i} of a small corpus about the run and its model" for i in range(200)))
    cfg = config_file(tmp_path, max_steps=4, log_interval=2)
    pre = mlm_studio("train", "--config", cfg, "--corpus", corpus, "--out", tmp_path / "pre", "--report-to", "mlflow")
    assert pre.returncode == 0, pre.stderr
    task = write_task(tmp_path / "task.csv", rows=60)
    tuned = mlm_studio(
        "finetune", tmp_path / "pre", "--task", task, "--epochs", "1", "--batch-size", "8", "--device", "cpu",
        "--out", tmp_path / "tuned", "--report_to", "mlflow", "--json",
    )  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    client = MlflowClient(store)
    found = {run.info.run_name: run for run in runs_of(client, request)}
    assert set(found) == {"pre", "tuned"} and {r.info.status for r in found.values()} == {"FINISHED"}
    tuned_run = found["tuned"]
    assert tuned_run.data.params["task.kind"] == "classification" and tuned_run.data.params["task.labels"] == "3"
    assert tuned_run.data.params["training.learning_rate"] and not any(
        key.startswith(("masking.", "tokenizer.")) for key in tuned_run.data.params
    )  # pre-training's settings are not a fine-tuning's
    assert any(key.startswith("masking.") for key in found["pre"].data.params)
    test_scores = json.loads(tuned.stdout)["test"]
    assert tuned_run.data.metrics["test/accuracy"] == pytest.approx(test_scores["accuracy"])
    assert [m.step for m in client.get_metric_history(found["pre"].info.run_id, "train/loss")] == [2, 4]
