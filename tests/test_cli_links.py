"""A run is never written through a symbolic link: `train --out LINK`, `finetune --out LINK` and a resumed run
whose `checkpoints/` is a link are refused before anything is written, the link's target left as it was."""

import shutil

import pytest

from tests.command import mlm_studio
from tests.core.helpers import config_file, small_config
from tests.core.test_finetune import write_task

FAST = ["--epochs", "1", "--lr", "5e-3", "--batch-size", "8", "--device", "cpu"]


def _contents(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory, small_corpus, small_tokenizer):
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    run = start_run(tmp_path_factory.mktemp("pre") / "run", small_config(max_steps=4), small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run.path


@pytest.fixture
def elsewhere(tmp_path):
    """A folder of the user's, with one file of theirs."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    return folder


def test_train_out_a_link_is_refused_writing_nothing_through_it(tmp_path, corpus_file, elsewhere):
    link = tmp_path / "run"
    link.symlink_to(elsewhere, target_is_directory=True)
    done = mlm_studio(
        "train", "--config", config_file(tmp_path), "--corpus", corpus_file, "--out", link, "--max-steps", 2
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.endswith(
        f"mlm-studio: {link} is a symbolic link to {elsewhere}; a run is written only into folders of its own, never "
        "through a link: put the folder it points to in its place, or choose another folder\n"
    )
    assert _contents(elsewhere) == ["notes.txt"]


def test_finetune_out_a_link_is_refused_writing_nothing_through_it(tmp_path, pretrained, elsewhere):
    link = tmp_path / "ft"
    link.symlink_to(elsewhere, target_is_directory=True)
    done = mlm_studio("finetune", pretrained, "--task", write_task(tmp_path / "task.csv"), "--out", link, *FAST)
    assert (
        done.returncode == 1
        and f"mlm-studio: {link} is a symbolic link to {elsewhere}; a run is written only" in done.stderr
    )
    assert _contents(elsewhere) == ["notes.txt"]


def test_resuming_a_run_whose_checkpoints_folder_is_a_link_writes_nothing(tmp_path, pretrained, elsewhere):
    run = shutil.copytree(pretrained, tmp_path / "run")
    shutil.copytree(run / "checkpoints", elsewhere / "checkpoints")
    shutil.rmtree(run / "checkpoints")
    (run / "checkpoints").symlink_to(elsewhere / "checkpoints", target_is_directory=True)
    before, metrics = _contents(elsewhere), (run / "metrics.jsonl").read_bytes()
    done = mlm_studio("train", "--resume", run, "--max-steps", 6)
    assert done.returncode == 1 and f"mlm-studio: {run / 'checkpoints'} is a symbolic link" in done.stderr
    assert _contents(elsewhere) == before and (run / "metrics.jsonl").read_bytes() == metrics


def test_predict_on_a_dangling_link_names_where_it_points(tmp_path, monkeypatch, capsys):
    from mlm_studio.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "gone").symlink_to(tmp_path / "runs" / "moved-away")
    assert main(["predict", "runs/gone", "a [MASK] b"]) == 1
    error = capsys.readouterr().err
    assert f"runs/gone is a link to {tmp_path / 'runs' / 'moved-away'}, which does not exist" in error
    assert "Hugging Face" not in error
