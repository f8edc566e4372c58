"""`mlm-studio finetune MODEL --task FILE --search` as a user runs it: progress per run, the table and the chosen
recipe (or one JSON object), a rerun that continues the same search without training, another search in the same
folder refused in one sentence with nothing written, and bad values refused in a sentence before anything is."""

import json
import re

import pytest

from mlm_studio.cli import main
from tests.core.test_finetune import write_task
from tests.test_finetune_cli import cli, pretrained  # noqa: F401 - a fixture

GRID = ["--lrs", "1e-3,5e-3,2e-2", "--max-epochs", "2", "--seeds", "2", "--batch-size", "8", "--device", "cpu"]


def snapshot(root):
    """Every file's time of change, the lock a command holds while it works left out."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*")) if p.name != ".lock"}


@pytest.fixture(scope="module")
def searched(pretrained, tmp_path_factory):  # noqa: F811 - the fixture imported
    folder = tmp_path_factory.mktemp("search")
    task = write_task(folder / "task.csv", rows=60)
    return task, folder / "search", cli(pretrained, "--task", task, "--search", *GRID, "--out", folder / "search")


@pytest.mark.slow  # a search of five fine-tuning runs, in a subprocess
def test_a_search_prints_each_runs_progress_the_table_and_the_chosen_recipe(searched):
    _, root, (code, out, err) = searched
    assert code == 0, err
    assert "[lr 0.001, seed 0, run 1 of 5] " in err and "[lr 0.02, seed 0, run 3 of 5] " in err
    assert sum(line.endswith("of 5] " + line.split("] ", 1)[-1]) for line in err.splitlines() if "seed 1, run" in line)
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["lr", "epochs"] and len(lines) == 5
    assert re.match(r"Chosen recipe: learning rate \S+, (1 epoch|\d+ epochs) — validation macro-F1 ", lines[-1])
    assert sum(line.startswith("*") for line in lines[1:4]) == 1
    assert json.loads((root / "search.json").read_text())["learning rates"] == [1e-3, 5e-3, 2e-2]


def test_a_rerun_continues_the_same_search_trains_nothing_and_says_it_as_json(pretrained, searched):  # noqa: F811
    task, root, (_, out, _) = searched
    before = snapshot(root)
    code, again, err = cli(pretrained, "--task", task, "--search", *GRID, "--out", root, "--json")
    assert code == 0, err
    assert err.count("has finished already; its scores are read back") == 5 and snapshot(root) == before
    result = json.loads(again)
    assert (result["complete"], result["finished"], result["total"], result["score"]) == (True, 5, 5, "macro-F1")
    assert [c["learning_rate"] for c in result["candidates"]] == [1e-3, 5e-3, 2e-2]
    assert sorted(len(c["validation"]) for c in result["candidates"]) == [1, 2, 2]
    chosen = result["chosen"]
    epochs = "1 epoch" if chosen["epochs"] == 1 else f"{chosen['epochs']} epochs"  # singular for one
    assert out.splitlines()[-1].startswith(f"Chosen recipe: learning rate {chosen['learning_rate']:g}, {epochs} — ")


def test_another_grid_in_the_same_folder_is_refused_in_one_sentence(pretrained, searched):  # noqa: F811
    task, root, _ = searched
    before = snapshot(root)
    code, out, err = cli(pretrained, "--task", task, "--search", *GRID[:1], "1e-3,5e-3", *GRID[2:], "--out", root)
    assert (code, out) == (1, "")
    assert err == (
        f"mlm-studio: {root} holds another search: its learning rates 0.001, 0.005, 0.02, not 0.001, 0.005; give the "
        "same options to continue it, or another folder to start a new search\n"
    )
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("given", "status", "said"),
    [
        (["--search", "--lrs", "1e-4,fast"], 1, "--lrs must be learning rates separated by commas, such as "
                                                "1e-5,1e-4, not 1e-4,fast"),
        (["--search", "--lrs", "1e-4,1e-4"], 1, "--lrs must be one or more different values, each more than 0 and "
                                                "less than 1, not 0.0001,0.0001"),
        (["--search", "--lrs", "1e-4,1.0000001e-4"], 1, "--lrs must be one or more different values, each more than "
                                                        "0 and less than 1, not 0.0001,0.0001"),  # they print alike
        (["--search", "--lrs", "0"], 1, "--lrs must be one or more different values, each more than 0 and less "
                                        "than 1, not 0"),
        (["--search", "--max-epochs", "0"], 1, "--max-epochs must be between 1 and 1,000, not 0"),
        (["--search", "--seeds", "0"], 1, "--seeds must be between 1 and 100, not 0"),
        (["--compare", "--seeds", "0"], 1, "--seeds must be between 1 and 100, not 0"),
        (["--search", "--lr", "1e-4"], 2, "--search chooses --lr itself: give the grid with --lrs and --max-epochs"),
        (["--lrs", "1e-4"], 2, "--lrs needs --search: it is the grid a recipe search tries"),
        (["--search", "--compare"], 2, "--search starts its own runs and cannot go with --compare; rerun it with the "
                                       "same --out to continue"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_before_anything_is_written(pretrained, tmp_path, capsys, given, status, said):  # noqa: F811
    task = write_task(tmp_path / "task.csv", rows=30)
    assert main(["finetune", str(pretrained), "--task", str(task), "--out", str(tmp_path / "out"), *given]) == status
    assert capsys.readouterr().err == f"mlm-studio: {said}\n"
    assert not (tmp_path / "out").exists()
