"""A fine-tuning run's task.json read once into a typed TaskSpec: every field checked, a damaged, foreign or
unreadable file refused in one sentence naming the file and the field (a CheckpointError, which every front end
says), and the files earlier versions wrote still read, each missing field meaning what it meant then."""

import json
import os
from pathlib import Path

import pytest

from mlm_studio.core.data.labelled import Columns
from mlm_studio.core.runs.run_folder import TASK, RunDir
from mlm_studio.core.runs.task_spec import TaskSpec
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.json_record import RecordError

# what the first fine-tuning version wrote (December 2026): no copies_as_read, no request
FIRST_VERSION = {
    "task": "classification",
    "labels": ["errors", "files", "returns"],
    "files": {"train": "/data/task.csv", "validation": None, "test": None},
    "columns": {"text": "sentence", "label": "category", "pair": ""},
    "split_seed": 0,
    "pooling": "cls",
    "freeze_layers": 0,
    "patience": 2,
}
# question answering before unanswerable questions were recorded
FIRST_QA = {**FIRST_VERSION, "task": "qa", "labels": ["start", "end"], "columns": None, "doc_stride": 16,
            "max_answer_length": 30}  # fmt: skip


def run_with(folder: Path, task: object) -> RunDir:
    """A run folder whose task.json holds `task` (a JSON value, or text written as it is)."""
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text("", encoding="utf-8")  # a run folder: the task is all that is read here
    text = task if isinstance(task, str) else json.dumps(task)
    (folder / TASK).write_text(text, encoding="utf-8")
    return RunDir(folder)


def test_files_earlier_versions_wrote_read_with_what_each_missing_field_meant(tmp_path):
    first = run_with(tmp_path / "first", FIRST_VERSION).task
    assert (first.kind, first.labels, first.train, first.validation, first.test) == (
        "classification", ("errors", "files", "returns"), Path("/data/task.csv"), None, None
    )  # fmt: skip
    assert first.columns == Columns("sentence", "category", "")
    assert (first.copies_as_read, first.request, first.unanswerable) == (False, None, False)  # copies as written
    assert (first.doc_stride, first.max_answer_length) == (None, None)
    answering = run_with(tmp_path / "qa", FIRST_QA).task
    assert (answering.doc_stride, answering.max_answer_length, answering.unanswerable) == (16, 30, False)
    given = {**FIRST_VERSION, "columns": {"text": "body", "label": None, "pair": None}}  # --text-column alone
    assert run_with(tmp_path / "given", given).task.columns == Columns("body", "", "")


def test_a_spec_reads_back_as_written(tmp_path):
    spec = TaskSpec("qa", ("start", "end"), Path("/d/train.json"), Path("/d/v.json"), Path("/d/t.json"), None, 3,
                    "mean", 1, 4, True, {"model": "/m#0123", "learning_rate": 1e-4}, 64, 20, True)  # fmt: skip
    read = run_with(tmp_path / "run", spec.to_json()).task
    assert read == spec and dict(read.request) == {"model": "/m#0123", "learning_rate": 1e-4}
    assert read.files == {"train": Path("/d/train.json"), "validation": Path("/d/v.json"), "test": Path("/d/t.json")}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({}, 'its "task" is missing (it must be one of classification, tokens, qa)'),
        ({"labels": "two"}, "its \"labels\" must be a list of one or more texts, not 'two'"),
        ({"labels": []}, 'its "labels" must be a list of one or more texts, not []'),
        ({"labels": ["a", "b", "a"]}, "its \"labels\" names 'a' twice"),
        ({"split_seed": "two"}, "its \"split_seed\" must be a whole number from 0 to 4,294,967,295, not 'two'"),
        ({"split_seed": True}, 'its "split_seed" must be a whole number from 0 to 4,294,967,295, not True'),
        ({"pooling": "max"}, "its \"pooling\" must be one of cls, mean, not 'max'"),
        ({"freeze_layers": -1}, 'its "freeze_layers" must be a whole number, 0 or more, not -1'),
        ({"patience": 0.5}, 'its "patience" must be a whole number, 1 or more, not 0.5'),
        ({"files": ["task.csv"]}, "its \"files\" must be a JSON object, not ['task.csv']"),
        ({"files": {"train": 5}}, 'its "files.train" must be the path of a file, not 5'),
        ({"files": {"train": "/t.csv", "validation": "/v.csv", "test": None}}, 'its "files" name a validation file'),
        ({"columns": {"text": 5, "label": "y"}}, 'its "columns.text" must be the name of a column'),
        ({"copies_as_read": "yes"}, "its \"copies_as_read\" must be true or false, not 'yes'"),
        ({"request": "asked"}, "its \"request\" must be a JSON object, or null, not 'asked'"),
        ({"request": {"model": 5}}, 'its "request.model" must be a text, not 5'),
        ({"task": "qa", "doc_stride": 0}, 'its "doc_stride" must be a whole number, 1 or more, not 0'),
        ({"task": "qa", "doc_stride": 16}, 'its "max_answer_length" is missing'),
    ],
)
def test_a_damaged_field_is_refused_naming_the_file_and_the_field(tmp_path, change, said):
    task = {**FIRST_VERSION, **change} if change else {}
    run = run_with(tmp_path / "run", task)
    with pytest.raises(RecordError) as refused:
        run.task  # noqa: B018 - reading it is the test
    assert str(refused.value).startswith(f"{tmp_path / 'run' / TASK} is damaged: {said}")
    assert isinstance(refused.value, CheckpointError)  # what the command line and the window say in a sentence


def test_a_task_of_a_kind_this_version_does_not_know_is_refused_as_foreign_not_blamed_on_weights(tmp_path):
    run = run_with(tmp_path / "run", {**FIRST_VERSION, "task": "regression"})
    with pytest.raises(RecordError, match=r"task.json cannot be used: its \"task\" is 'regression', which this "
                       r"version of MLM Studio does not know \(it knows classification, tokens, qa\)"):  # fmt: skip
        run.task  # noqa: B018


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"task": ', "is damaged: it is not JSON (Expecting value: line 1 column 10 (char 9))"),
        ("[1, 2]", "is damaged: it holds a list, not a JSON object"),
        ("[" * 100_000 + "]" * 100_000, "is damaged: it is not JSON (nested too deeply: lists or objects inside"),
        ("\udcff", "is damaged: it is not JSON ("),
    ],
)
def test_a_file_that_is_not_a_task_record_is_refused_in_one_line(tmp_path, text, said):
    folder = tmp_path / "run"
    run_with(folder, "")
    (folder / TASK).write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(RecordError) as refused:
        RunDir(folder).task  # noqa: B018
    assert str(refused.value).startswith(f"{folder / TASK} {said}") and "\n" not in str(refused.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_task_file_is_said_to_be_unreadable_not_damaged(tmp_path):
    run = run_with(tmp_path / "run", FIRST_VERSION)
    (run.path / TASK).chmod(0)
    with pytest.raises(RecordError, match=r"task.json cannot be read \(Permission denied\)$"):
        run.task  # noqa: B018


def test_the_spec_is_read_once_per_run(tmp_path):
    run = run_with(tmp_path / "run", FIRST_VERSION)
    first = run.task
    (run.path / TASK).write_text("{}", encoding="utf-8")
    assert run.task is first  # read once: a run's task does not change under it
