"""One metric schema: every field a step or evaluation record can carry (read from the record classes) reaches the
CSV export and the TensorBoard events with its value, in a masked-LM run and in an ELECTRA run; the CSV keeps
today's columns first, and a value the schema does not know gets a column rather than being dropped."""

import csv
import dataclasses
import io
import math

import pytest

from mlm_studio.core.metric_schema import metrics_of
from mlm_studio.core.runs.history import metrics_csv
from mlm_studio.core.runs.records import EvalRecord, ProbeRecord, ProbeResult, StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.tensorboard import EVENTS_FOLDER
from mlm_studio.core.training.probes import Probe, save_probes
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config

SCALAR_RECORDS = (StepRecord, EvalRecord)
# the columns of the CSV export before the schema, in their order: existing files and scripts keep their meaning
EARLIER_COLUMNS = (
    "type step tokens_seen elapsed loss accuracy top5_accuracy perplexity learning_rate grad_norm "
    "tokens_per_second probe rank probability"
).split()


@pytest.fixture(scope="module")
def electra_run(tmp_path_factory, small_corpus, small_tokenizer):
    """4 ELECTRA steps, a record each, evaluated and probed every 2."""
    config = small_config(max_steps=4, eval_interval=2, log_interval=1).with_objective("electra")
    run = start_run(tmp_path_factory.mktemp("electra") / "run", config, small_corpus, small_tokenizer)
    save_probes(run.path, [Probe("Return the [MASK] of the list.", "value")])
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run


@pytest.fixture(params=["mlm", "electra"])
def run(request) -> RunDir:
    return request.getfixturevalue("trained_run" if request.param == "mlm" else "electra_run")


def fields(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def same(written: str, value) -> bool:
    """A CSV cell against the value metrics.jsonl holds (null, e.g. precision with nothing flagged, an empty cell)."""
    if value is None:
        return written == ""
    return math.isnan(float(written)) if math.isnan(value) else float(written) == pytest.approx(value, rel=1e-12)


def test_every_record_field_is_a_csv_column_holding_its_value(run):
    records = run.read_metrics()
    electra = run.config.training.objective == "electra"
    text = metrics_csv(records)
    header = next(csv.reader(io.StringIO(text)))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert header[: len(EARLIER_COLUMNS)] == EARLIER_COLUMNS
    for cls in SCALAR_RECORDS:
        kind = cls.__name__.removesuffix("Record").lower()
        written = [r for r in records if r["type"] == kind]
        exported = [r for r in rows if r["type"] == kind]
        assert len(exported) == len(written) > 0
        for name in fields(cls):
            assert name in header, (kind, name)
            optional = metrics_of(cls)[name].optional
            for record, row in zip(written, exported, strict=True):
                value = record.get(name) if optional else record[name]  # None: written as null, undefined
                assert (name in record) == (electra or not optional), (kind, name)
                assert same(row[name], value), (kind, name, row[name], value)
    assert all(row["type"] in ("step", "eval", "probe") for row in rows)


def test_probe_results_are_csv_rows_with_every_field(electra_run):
    records = electra_run.read_metrics()
    rows = [r for r in csv.DictReader(io.StringIO(metrics_csv(records))) if r["type"] == "probe"]
    probes = [r for r in records if r["type"] == "probe"]
    assert len(rows) == len(probes) == 2
    for record, row in zip(probes, rows, strict=True):
        (result,) = record["results"]
        for name in fields(ProbeRecord):
            if name != "results":
                assert same(row[name], record[name]), name
        for name, metric in metrics_of(ProbeResult).items():
            assert row[metric.column] == str(result[name]), name
        assert (row["probe"], row["probe_text"]) == ("value", "Return the [MASK] of the list.")


def test_a_value_the_schema_does_not_know_gets_a_column_of_its_own():
    records = [
        {"type": "step", "step": 1, "tokens_seen": 10, "elapsed": 0.5, "loss": 5.0, "future_metric": 0.25},
        {"type": "eval", "step": 1, "tokens_seen": 10, "elapsed": 0.6, "loss": 4.9},
    ]
    rows = list(csv.DictReader(io.StringIO(metrics_csv(records))))
    assert (rows[0]["future_metric"], rows[1]["future_metric"]) == ("0.25", "")
    assert list(rows[0])[-1] == "future_metric"


def test_every_metric_field_is_a_tensorboard_scalar_with_its_values(run):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run.path / EVENTS_FOLDER))
    events.Reload()
    scalars = {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    electra = run.config.training.objective == "electra"
    axes = set(fields(ProbeRecord)) - {"results"}  # what every metric record has: TensorBoard's step, the x-axes
    expected_tags = set()
    for cls in SCALAR_RECORDS:
        kind = cls.__name__.removesuffix("Record").lower()
        written = [r for r in run.read_metrics() if r["type"] == kind]
        for name in fields(cls):
            metric = metrics_of(cls)[name]
            if name in axes:
                assert not metric.tag
                continue
            assert metric.tag.startswith({"step": "train/", "eval": "eval/"}[kind]), name
            if metric.optional and not electra:
                assert metric.tag not in scalars
                continue
            values = [(r["step"], r[name]) for r in written if r[name] is not None]  # null: no event
            if values:
                expected_tags.add(metric.tag)
            assert [step for step, _ in scalars.get(metric.tag, [])] == [step for step, _ in values], metric.tag
            for (_, got), (_, value) in zip(scalars.get(metric.tag, []), values, strict=True):
                assert got == pytest.approx(value, rel=1e-6, nan_ok=True), metric.tag
    assert set(scalars) == expected_tags
    assert ("train/detection_loss" in scalars) == electra and "eval/top5_accuracy" in scalars


def test_probe_records_of_any_shape_keep_every_value_in_the_csv():
    records = [
        {"type": "probe", "step": 9, "elapsed": 1.5, "results": []},
        {"type": "probe", "step": 10, "results": "abc"},
        {"type": "probe", "step": 11, "results": [1, {"expected": "value", "rank": 2}]},
        {"type": "step", "step": 12, "loss": 3.0, "extra": {"a": [1, 2, None]}},
    ]
    rows = list(csv.DictReader(io.StringIO(metrics_csv(records))))
    assert [(r["step"], r["elapsed"], r["results"], r["probe"]) for r in rows[:4]] == [
        ("9", "1.5", "", ""), ("10", "", "abc", ""), ("11", "", "1", ""), ("11", "", "", "value"),
    ]  # fmt: skip
    assert rows[3]["rank"] == "2" and rows[4]["extra"] == '{"a": [1, 2, null]}'
