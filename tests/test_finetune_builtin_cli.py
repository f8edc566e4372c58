"""`mlm-studio finetune MODEL --kind K` without --task: a short fine-tuning on the kind's built-in example task
(`--example pairs` for text pairs), its test scores printed as for a file of one's own; an example that cannot go
with the options given is refused in one sentence."""

import json

import pytest

from mlm_studio.core.data.builtin_tasks import builtin_task
from mlm_studio.core.storage.json_text import read_json
from tests.command import mlm_studio
from tests.test_finetune_cli import pretrained  # noqa: F401 - the shared pre-trained run

TINY = ["--epochs", "0.05", "--lr", "5e-3", "--batch-size", "16", "--max-length", "48", "--device", "cpu", "--json"]


def finetuned(model, *args):
    done = mlm_studio("finetune", model, *args, *TINY)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.mark.parametrize(
    ("chosen", "name", "labels"),
    [
        (["--kind", "classification"], "classification", 7),
        (["--example", "pairs"], "pairs", 2),
        (["--kind", "tokens"], "tokens", 4),
    ],
)
def test_without_a_task_the_kind_is_fine_tuned_on_its_built_in_example(pretrained, tmp_path, chosen, name, labels):  # noqa: F811
    result, err = finetuned(pretrained, *chosen, "--out", tmp_path / "ft")
    example = builtin_task(name)
    assert f"Built-in example: {example.title}" in err
    test = result["test"]
    test_rows = example.files[2].read_text(encoding="utf-8").count("\n")
    assert len(test["labels"]) - (name == "tokens") * 3 == labels  # a tagger adds I- for each B- tag
    if name == "tokens":
        assert {"B-NAME", "B-NUMBER", "B-CONSTANT", "O"} <= set(test["labels"]) and 0 <= test["entity_f1"] <= 1
    else:
        assert sum(map(sum, test["confusion"])) == test_rows
    assert 0 <= test["accuracy"] <= 1 and test["seen_in_training"] == 0
    task = read_json((tmp_path / "ft" / "task.json").read_text(encoding="utf-8"))
    assert [task["files"][part] for part in ("train", "validation", "test")] == [str(p) for p in example.files]


def test_without_a_task_question_answering_is_fine_tuned_on_its_built_in_example(pretrained, tmp_path):  # noqa: F811
    result, err = finetuned(pretrained, "--kind", "qa", "--doc-stride", 16, "--out", tmp_path / "ft")
    example = builtin_task("qa")
    assert f"Built-in example: {example.title}" in err
    test = result["test"]
    assert 0 <= test["exact_match"] <= test["f1"] <= 1 and test["seen_in_training"] == 0
    assert "F1" in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--example", "qa", "--kind", "tokens"], "the built-in example qa is a qa task, not --kind tokens"),
        (["--example", "pairs", "--task", "x.csv"], "--example is a built-in task in place of --task FILE; give one "),
        (["--validation", "v.csv", "--test", "t.csv"], "--validation goes with --task FILE; a built-in example has "),
        (["--text-column", "body"], "--text-column goes with --task FILE"),
    ],
)
def test_an_example_that_cannot_go_with_the_options_is_refused(pretrained, tmp_path, args, said):  # noqa: F811
    done = mlm_studio("finetune", pretrained, *args, "--out", tmp_path / "ft")
    assert done.returncode == 2 and said in done.stderr and not (tmp_path / "ft").exists()
