"""The built-in example tasks: read by the readers a file of one's own goes through, split with no validation or test
text a training text (as the model's tokenizer reads them), labels true of their texts, written the same each
time."""

import json
import shutil

import pytest

from mlm_studio.core.data.builtin_corpus import fingerprint
from mlm_studio.core.data.builtin_tasks import (
    BUILTIN_TASKS,
    EXAMPLE_KINDS,
    PACKAGES,
    builtin_task,
    builtin_task_of,
    builtin_tasks_location,
)
from mlm_studio.core.data.copies import copy_keys, seen_in_training
from mlm_studio.core.data.labelled import check_known, check_labels, read_labelled_file
from mlm_studio.core.finetune.qa.task import contexts_seen_in_training, read_qa_task


def rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def tasks():
    return {name: builtin_task(name) for name in BUILTIN_TASKS}


@pytest.mark.parametrize("name", ["classification", "pairs", "tokens"])
def test_a_labelled_example_reads_whole_and_no_held_out_text_is_a_training_text(tasks, small_tokenizer, name):
    files = [read_labelled_file(path, EXAMPLE_KINDS[name]) for path in tasks[name].files]
    assert all(not file.skipped for file in files)  # every row usable
    check_labels(files[0])
    for file in files[1:]:
        check_known(file, set(files[0].label_counts()), files[0].path.name)
    keys = [copy_keys(file.examples, small_tokenizer.normalised) for file in files]
    assert len(set(keys[0].tolist())) == len(keys[0])  # no copies within training either
    assert seen_in_training(keys[0], keys[1]) == seen_in_training(keys[0], keys[2]) == 0
    sizes = [len(file.examples) for file in files]
    assert sizes[1] == sizes[2] and 0.09 < sizes[2] / sum(sizes) < 0.11  # 80/10/10
    if name != "tokens":
        assert files[0].columns.pair == ("text_pair" if name == "pairs" else "")


def test_each_sentence_is_labelled_by_its_package_and_each_pair_by_whether_they_share_one(tasks):
    package_of = {}
    for path in tasks["classification"].files:
        for row in rows(path):
            package_of[row["text"]] = row["label"]
    counts = {package: list(package_of.values()).count(package) for package in PACKAGES}
    assert set(package_of.values()) == set(PACKAGES) and min(counts.values()) > 200 and max(counts.values()) <= 300
    for path in tasks["pairs"].files:
        pairs = rows(path)
        assert all((package_of[p["text"]] == package_of[p["text_pair"]]) == (p["label"] == "same") for p in pairs)
        assert abs(sum(p["label"] == "same" for p in pairs) - len(pairs) / 2) <= len(PACKAGES)


def test_tags_mark_python_names_numbers_and_constants(tasks):
    tagged = {
        word: tag
        for path in tasks["tokens"].files
        for row in rows(path)
        for word, tag in zip(row["tokens"], row["tags"], strict=True)
    }
    for word, tag in tagged.items():
        if word in ("True", "False", "None"):
            assert tag == "B-CONSTANT"
        elif word.replace(".", "", 1).isdigit():
            assert tag == "B-NUMBER", word
        elif "_" in word and any(c.isalpha() for c in word):
            assert tag == "B-NAME", word
        elif word in ("e.g", "i.e", "the", "return", "none"):
            assert tag == "O", word
    assert tagged.get("os.path") == tagged.get("__init__") == "B-NAME"


def test_every_answer_is_the_clause_after_return_and_no_context_is_in_two_parts(tasks, small_tokenizer):
    files = read_qa_task(*tasks["qa"].files)  # every answer checked against its context where it says it starts
    assert not any(file.has_impossible or file.skipped for file in files)
    for example in files[0].examples:
        ((answer, start),) = example.answers
        assert example.context[:start].endswith(("Return ", "Returns ")) and len(answer.split()) <= 12, example.id
        assert example.question.startswith("What does ") and example.question.endswith(" return?")
    names = [path.name for path in tasks["qa"].files]
    assert contexts_seen_in_training(names, files, small_tokenizer.normalised) == []
    assert len({example.id for file in files for example in file.examples}) == sum(len(f.examples) for f in files)


def test_the_files_are_written_again_byte_for_byte_once_the_cache_is_cleared(tasks):
    before = {path.name: fingerprint(path) for task in tasks.values() for path in task.files}
    shutil.rmtree(builtin_tasks_location())
    train = tasks["qa"].train
    again = builtin_task_of(train)  # a run's task file asked for again writes them all
    assert again == tasks["qa"] and train.is_file()
    assert {path.name: fingerprint(path) for task in tasks.values() for path in task.files} == before
    assert builtin_task_of(train.with_name("mine.jsonl")) is None
