"""An option the command line does not know is refused naming the one meant: `transformers`' name for it, or a
close spelling."""

import pytest

from mlm_studio.cli import main
from tests.command import mlm_studio


def test_finetunes_learning_rate_under_its_transformers_name_is_refused_naming_lr(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = mlm_studio("finetune", "model", "--task", "t.csv", "--learning_rate", "1e-3")
    assert done.returncode == 2 and done.stdout == "" and list(tmp_path.iterdir()) == []
    assert done.stderr.endswith("mlm-studio: error: unrecognized arguments: --learning_rate 1e-3; did you mean --lr?\n")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["finetune", "m", "--num-train-epochs", "2"], "--num-train-epochs 2; did you mean --epochs?"),
        (["finetune", "m", "--per_device_train_batch_size", "8"], "8; did you mean --batch-size?"),
        (["finetune", "m", "--output_dir", "x"], "--output_dir x; did you mean --out?"),
        (["predict", "m", "a [MASK]", "--topk", "3"], "--topk 3; did you mean --top-k?"),
        (["search", "m", "--qeury", "x"], "--qeury x; did you mean --query?"),
        (["evaluate", "m", "--tsak", "t.csv"], "--tsak t.csv; did you mean --task?"),
        (["finetune", "m", "--frobnicate", "1"], "--frobnicate 1\n"),
        (["train", "--lr", "1e-3"], "--lr 1e-3; did you mean --learning-rate?"),  # finetune's names on train
        (["train", "--batch-size", "8"], "--batch-size 8; did you mean --per-device-train-batch-size?"),
        (["train", "--epochs", "2"], "--epochs 2; did you mean --num-train-epochs?"),
        (["train", "--steps", "20"], "--steps 20; did you mean --max-steps?"),  # the other command's names
        (["finetune", "m", "--max-steps", "10"], "--max-steps 10; did you mean --epochs?"),
        (["finetune", "m", "--set", "training.learning_rate=1e-4"], "did you mean --lr?"),  # a field: its option
        (["train", "--set", "max_steps=5"], "'max_steps=5': write SECTION.FIELD=VALUE, e.g. training.max_steps=5"),
        (
            ["train", "--set", "per_device_train_batch_size=8"],  # run_mlm.py's name as a setting: its option named
            "'per_device_train_batch_size=8': write --per-device-train-batch-size 8 or --set training.batch_size=VALUE",
        ),
    ],
)
def test_an_unknown_option_names_the_known_one_close_to_it(args, said, capsys):
    with pytest.raises(SystemExit) as exited:
        main(args)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.endswith(said if said.endswith("\n") else said + "\n"), err


def test_a_value_that_begins_with_a_dash_is_refused_saying_how_to_write_it(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["search", "m", "--corpus", "c.txt", "--query", "-cat"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.endswith(
        "argument --query: expected one argument (a value that begins with '-' is written --query=VALUE)\n"
    )


TIME_BUDGET = "a time budget is how long to train, like 90s, 6m or 1h30m (0 for none), at most 366 days"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--time-budget", "-5m"], f"'-5m' is negative: {TIME_BUDGET}"),
        (["--time_budget=-1h30m"], f"'-1h30m' is negative: {TIME_BUDGET}"),
        (["--time-budget", "-90"], f"'-90' is negative: {TIME_BUDGET}"),
        (["--time-budget", "5x"], f"'5x' is not a duration: {TIME_BUDGET}"),
        (["--time-budget", "9000h"], f"'9000h' is more than 366 days: {TIME_BUDGET}"),
        (["--time-budget", "9" * 400 + "h"], "a number of 400 digits is more than any setting takes"),
        (
            ["--time-budget", "-soon"],
            "expected one argument (a value that begins with '-' is written --time-budget=VALUE)",
        ),
    ],
)
def test_a_time_budget_that_is_no_length_of_time_is_refused_saying_what_one_is(args, said, capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["train", *args, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and not (tmp_path / "r").exists()
    assert err.endswith(f"mlm-studio train: error: argument --time-budget/--time_budget: {said}\n"), err


@pytest.mark.parametrize(
    ("setting", "meant"),
    [("training.lr=1e-4", "training.learning_rate"), ("training.learning-rate=1e-4", "training.learning_rate")],
)
def test_an_unknown_field_names_the_field_close_to_it(setting, meant, capsys, tmp_path):
    assert main(["train", "--set", setting, "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert f"[training]; did you mean {meant}?" in err and not (tmp_path / "r").exists(), err


NINES = "9" * 5000


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["train", "--max-steps", NINES], "argument --max-steps/--max_steps: a number of 5,000 digits"),
        (["train", "--seed", NINES], "argument --seed: a number of 5,000 digits"),
        (["train", "--per-device-train-batch-size", NINES], "train_batch_size: a number of 5,000 digits"),
        (["train", "--learning-rate", "9" * 400], "argument --learning-rate/--learning_rate: a number of 400 digits"),
        (["train", "--set", f"training.max_steps={NINES}"], "--set: training.max_steps: a number of 5,000 digits"),
        (["finetune", "m", "--seeds", NINES], "argument --seeds: a number of 5,000 digits"),
        (["finetune", "m", "--batch-size", NINES], "argument --batch-size: a number of 5,000 digits"),
        (["finetune", "m", "--epochs", "9" * 400], "argument --epochs: a number of 400 digits"),
        (["finetune", "m", "--seed", "x" * 5000], "argument --seed: 'xxxxxxxx"),
        (["train", "--epochs", NINES], "unrecognized arguments: --epochs 9999"),
        (
            ["train", "--time-budget", NINES],
            "argument --time-budget/--time_budget: a number of 5,000 digits is more than any",
        ),
        (["train", "--set", "training.learning_rate=1e999"], "training.learning_rate: '1e999' is more than any"),
        (["train", "--objective", "x" * 100_000], "argument --objective: invalid choice: 'xxxxxxx"),
        (["finetune", "m", "--kind", "x" * 100_000], "argument --kind: invalid choice: 'xxxxxxx"),
        (["x" * 100_000], "argument COMMAND: invalid choice: 'xxxxxxx"),
    ],
)
def test_a_huge_value_is_refused_in_one_short_line(args, said, capsys):
    """Said by its length (or cut to 80 characters), never echoed whole; a float too large is not taken as inf."""
    with pytest.raises(SystemExit) as exited:
        main(args)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and said in err and len(err.splitlines()[-1]) < 300, err[-400:]


def test_set_on_a_resume_names_the_option_though_its_value_was_taken_for_the_model(capsys):
    """With --resume, MODEL is optional: the word after an unknown --set is taken for it, and still read."""
    with pytest.raises(SystemExit) as exited:
        main(["finetune", "--resume", "run", "--set", "training.learning_rate=1e-4"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith("unrecognized arguments: --set; did you mean --lr?\n")


def test_a_config_path_too_long_for_the_system_is_said_once_and_cut(capsys, tmp_path):
    assert main(["train", "--config", "x" * 100_000, "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert err == f"mlm-studio: cannot read {'x' * 299}… (File name too long)\n" and not (tmp_path / "r").exists()


def refused_screenshot(command: list[str], path, capsys) -> str:
    """What `mlm-studio [gui] --screenshot PATH` says as it exits 2."""
    with pytest.raises(SystemExit) as exited:
        main([*command, "--screenshot", str(path)])
    assert exited.value.code == 2
    return capsys.readouterr().err.splitlines()[-1].partition("error: argument --screenshot: ")[2]


@pytest.mark.parametrize("command", [[], ["gui"]])
def test_a_screenshot_that_cannot_be_written_is_refused_before_the_window_trains(command, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("the user's")
    refusals = {
        tmp_path / "missing" / "w.png": f"the folder {tmp_path / 'missing'} does not exist: make it first, or give "
        "a file in a folder that does",
        tmp_path / "notes.txt" / "w.png": f"{tmp_path / 'notes.txt'} is a file, not a folder: give a file in a folder",
        tmp_path: f"{tmp_path} is a folder: give the PNG file to write, such as {tmp_path / 'window.png'}",
        "": "the name is empty: give the PNG file to write, such as window.png",
    }
    for path, said in refusals.items():
        assert refused_screenshot(command, path, capsys) == said
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_screenshot_into_a_read_only_folder_is_refused_before_the_window_trains(tmp_path, tmpfs, capsys):
    read_only = tmpfs(tmp_path / "read-only", "ro,size=64k")
    said = f"the folder {read_only} cannot be written: give a file in a folder you can write"
    assert refused_screenshot([], read_only / "w.png", capsys) == said
