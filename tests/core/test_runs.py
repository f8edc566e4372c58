"""One road to a trainer: the CLI, the window and the engine prepare the same run the same way."""

import json
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.run_folder import RunDir
from mlm_studio.core.training.runs import FOLDER_LABEL_LENGTH, NewRun, folder_label, new_run_path, prepare_trainer
from tests.core.helpers import config_file, small_config

TIMING = {"elapsed", "tokens_per_second", "run_dir", "device", "path", "events"}


def comparable(records):
    """The records as `metrics.jsonl` holds them, without what depends on the clock or the folder."""
    written = json.loads(json.dumps(records))
    return [{k: v for k, v in r.items() if k not in TIMING} for r in written if r["type"] != "checkpoint"]


def test_the_cli_and_the_engine_prepare_the_same_run(tmp_path, corpus_file, small_corpus, small_tokenizer):
    command = [sys.executable, "-m", "mlm_studio", "train", "--config", str(config_file(tmp_path)), "--corpus"]
    done = subprocess.run(
        [*command, str(corpus_file), "--out", str(tmp_path / "cli"), "--max-steps", "4"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    config = RunDir(tmp_path / "cli").config
    with ExitStack() as held:
        trainer = prepare_trainer(
            tmp_path / "engine", begin=lambda: NewRun(config, small_corpus, small_tokenizer), held=held
        )
        records = [r.to_dict() for r in trainer.run()]
    assert records[0]["type"] == "started" and records[0]["total_steps"] == 4
    assert comparable(RunDir(tmp_path / "cli").read_metrics()) == comparable(records)
    assert f"Training {(tmp_path / 'cli').resolve()} on cpu: 1 layers × 32" in done.stdout


def test_a_folder_that_holds_a_run_is_not_begun_again_and_a_resume_is_checked_first(
    tmp_path, small_corpus, small_tokenizer
):
    new = NewRun(small_config(max_steps=2), small_corpus, small_tokenizer)
    with ExitStack() as held:
        list(prepare_trainer(tmp_path / "run", begin=lambda: new, held=held).run())
    with ExitStack() as held, pytest.raises(CheckpointError, match=r"already holds a run"):
        prepare_trainer(tmp_path / "run", begin=lambda: new, held=held)

    def refuse(run):
        raise CheckpointError(f"{run.name} refused")

    with ExitStack() as held, pytest.raises(CheckpointError, match=r"run refused"):
        prepare_trainer(tmp_path / "run", check=refuse, held=held)
    with ExitStack() as held:
        resumed = prepare_trainer(tmp_path / "run", held=held)
        assert resumed.step == 2 and resumed.started().step == 2


@pytest.mark.parametrize(
    ("preset", "label"),
    [("base", "base"), ("my_preset-2", "my_preset-2"), ("../../etc", "etc"), ("C:\\runs\\x", "C-runs-x"),
     ('two\nlines "quoted"', "two-lines-quoted"), ("été 日本", "été-日本"), ("..", "run"), ("", "run"),
     ("x" * 99, "x" * 40)],
)  # fmt: skip
def test_a_preset_becomes_a_safe_part_of_a_folder_name(preset, label):
    assert folder_label(preset) == label


@given(st.text(max_size=200))
@example("../../escape")
@example("a/b\\c\nd\te\x00")
def test_a_new_run_folder_is_always_one_new_folder_inside_the_root(preset):
    with tempfile.TemporaryDirectory() as root:
        path = new_run_path(root, preset)
        label = path.name.split("-", 2)[2]
        assert path.parent == Path(root) and 0 < len(label) <= FOLDER_LABEL_LENGTH and label.isprintable()
        assert not set(label) & set("/\\.:") and label[0] not in "-_" and label[-1] not in "-_"
        path.mkdir()
        again = new_run_path(root, preset)
        assert again.parent == Path(root) and not again.exists()
