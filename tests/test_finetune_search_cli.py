"""`mlm-studio finetune MODEL --task FILE --search` as a user runs it: progress per run, the table, the chosen
recipe and the command that trains it again (or one JSON object), a rerun that continues the same search without
training, another search in the same folder refused in one sentence with nothing written, and bad values refused in
a sentence before anything is."""

import json
import shlex
from pathlib import Path

import pytest

from mlm_studio.cli import main
from mlm_studio.commands.finetune import _options as finetune_options
from mlm_studio.commands.finetune_flags import finetune_command
from mlm_studio.commands.parser import build_parser
from mlm_studio.core.data.labelled import Columns
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.recipe.result import read_search
from tests.core.test_finetune import write_task
from tests.test_finetune_cli import cli, pretrained  # noqa: F401 - a fixture

# two learning rates over a three-epoch schedule, the better one with a second seed: 0.02 takes off at epoch 2 with
# the first seed and never leaves the majority class with the second
GRID = ["--lrs", "1e-2,2e-2", "--max-epochs", "3", "--seeds", "2", "--batch-size", "8", "--device", "cpu"]


def snapshot(root):
    """Every file's time of change, the lock a command holds while it works left out."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*")) if p.name != ".lock"}


@pytest.fixture(scope="module")
def searched(trained_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("search")
    task = write_task(folder / "task.csv", rows=100)
    model = trained_run.path
    return task, folder / "search", cli(model, "--task", task, "--search", *GRID, "--out", folder / "search")


@pytest.mark.slow  # a search of three fine-tuning runs, in a subprocess
def test_a_search_prints_each_runs_progress_the_table_the_chosen_recipe_and_its_command(searched):
    _, root, (code, out, err) = searched
    assert code == 0, err
    assert "[lr 0.01, seed 0, run 1 of 3] " in err and "[lr 0.02, seed 0, run 2 of 3] " in err
    assert "[lr 0.02, seed 1, run 3 of 3] " in err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["lr", "best", "epochs"] and len(lines) == 5
    table = dict(line[1:].split(maxsplit=1) for line in lines[1:3])
    assert table["0.02"].startswith("2, majority ") and lines[2].startswith("*")  # best at epoch 2, then seed 1
    assert table["0.02"].endswith("1: 20.5% / 20.5% (majority)")
    assert lines[3] == (
        "Chosen recipe: learning rate 0.02 over a 3-epoch schedule, evaluated every epoch and stopped early after 2 "
        "evaluations without a better validation score, keeping the best weights (seed 0 best at epoch 2, seed 1 "
        "never beat the majority class) — validation macro-F1 39.4% ± 26.7% over 2 seeds (test 39.4%; the majority "
        "class scores 20.5%)."
    )
    assert lines[4].startswith("To train it: mlm-studio finetune ")
    assert json.loads((root / "search.json").read_text())["learning rates"] == [1e-2, 2e-2]


@pytest.mark.slow  # one fine-tuning run, in a subprocess
def test_the_printed_command_trains_the_chosen_recipe_again_to_the_score_the_search_measured(
    searched, trained_run, tmp_path
):
    """The command as printed: the learning rate over the search's schedule, stopped early with the best weights
    kept, the first seed; it validates as the search's run of that seed did."""
    _, root, (_, out, _) = searched
    words = shlex.split(out.splitlines()[-1].removeprefix("To train it: "))
    assert words[:3] == ["mlm-studio", "finetune", str(trained_run.path)]
    asked = dict(zip(words[3::2], words[4::2], strict=True))
    assert (asked["--lr"], asked["--epochs"], asked["--patience"], asked["--seed"]) == ("0.02", "3", "2", "0")
    code, again, err = cli(*words[2:], "--out", tmp_path / "again", "--json")
    assert code == 0, err
    best = max(v["macro_f1"] for v in json.loads(again)["validation"])
    assert abs(best - read_search(root).trial(2e-2, 0).validation) <= 0.01


def test_a_rerun_continues_the_same_search_trains_nothing_and_says_it_as_json(searched, trained_run):
    task, root, (_, out, _) = searched
    before = snapshot(root)
    code, again, err = cli(trained_run.path, "--task", task, "--search", *GRID, "--out", root, "--json")
    assert code == 0, err
    assert err.count("has finished already; its scores are read back") == 3 and snapshot(root) == before
    result = json.loads(again)
    assert (result["complete"], result["finished"], result["total"], result["score"]) == (True, 3, 3, "macro-F1")
    assert [c["learning_rate"] for c in result["candidates"]] == [1e-2, 2e-2]
    second = result["candidates"][1]
    assert (second["seeds"], second["beat_majority"], second["best_epochs"]) == ([0, 1], [True, False], [2, None])
    assert second["never_beat_majority"] is False and result["majority_baseline"] == pytest.approx(0.205, abs=5e-4)
    assert result["chosen"] == {
        "learning_rate": 2e-2, "epochs": 3, "patience": 2, "eval_interval": 0, "seed": 0,
        "command": out.splitlines()[-1].removeprefix("To train it: "),
    }  # fmt: skip
    assert result["verdict"] == out.splitlines()[-2]


def test_another_grid_in_the_same_folder_is_refused_in_one_sentence(searched, trained_run):
    task, root, _ = searched
    before = snapshot(root)
    code, out, err = cli(trained_run.path, "--task", task, "--search", *GRID[:1], "1e-2", *GRID[2:], "--out", root)
    assert (code, out) == (1, "")
    assert err == (
        f"mlm-studio: {root} holds another search: its learning rates 0.01, 0.02, not 0.01; give the same options to "
        "continue it, or another folder to start a new search\n"
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


@pytest.mark.parametrize(
    "options",
    [
        FinetuneOptions("classification", Path("t.csv"), Path("v.csv"), Path("x.csv"), Columns("text", "label", "pair"),
                        learning_rate=3e-05, epochs=7.5, batch_size=4, grad_accumulation=2, warmup_share=0.1,
                        weight_decay=0.0, freeze_layers=1, patience=3, eval_interval=50, max_length=64, seed=9),
        FinetuneOptions("qa", Path("squad.json"), learning_rate=1e-4, doc_stride=32, max_answer_length=12),
    ],
)  # fmt: skip
def test_the_command_a_search_prints_asks_for_every_option_it_was_made_from(options):
    """Read back by the command line's own parser, the command names the same model and options (where it computes
    left to the defaults)."""
    words = shlex.split(finetune_command("scratch:runs/my model", options))
    args = build_parser().parse_args(words[1:])
    assert args.model == "scratch:runs/my model" and finetune_options(args) == options
