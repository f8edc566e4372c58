"""steps.tsv: every step's loss and gradient norm, whatever the log interval; kept through a full disk and cut back
on a resume; a damaged file is said in one sentence."""

import math

import numpy as np
import pytest
import torch

from mlm_studio.core.runs.distributed import SINGLE
from mlm_studio.core.runs.step_sums import StepLog
from mlm_studio.core.storage.step_file import (
    STEPS_FILE,
    StepFileDamaged,
    StepTail,
    append_steps,
    read_steps,
    truncate_steps_after,
)
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config
from tests.reliability.disks import fill


def test_every_step_is_kept_and_a_logged_one_is_its_record(tmp_path, small_corpus, small_tokenizer):
    run = start_run(tmp_path / "run", small_config(max_steps=7, log_interval=3), small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    steps = read_steps(run.path, run.name)
    assert steps.steps.tolist() == list(range(1, 8))
    assert np.isfinite(steps.loss).all() and (steps.grad_norm > 0).all()
    logged = {r["step"]: r for r in run.read_metrics() if r["type"] == "step"}
    assert sorted(logged) == [3, 6, 7]
    assert steps.at(7) == (pytest.approx(logged[7]["loss"], rel=1e-6), pytest.approx(logged[7]["grad_norm"]))
    assert steps.at(6)[1] + steps.at(5)[1] + steps.at(4)[1] == pytest.approx(3 * logged[6]["grad_norm"])
    assert steps.at(0) is None and steps.at(8) is None


def lines(folder, text):
    (folder / STEPS_FILE).write_text(text, encoding="utf-8")


def test_a_line_cut_short_at_the_end_is_left_out(tmp_path):
    lines(tmp_path, "step\tloss\tgrad_norm\n1\t5.5\t1.25\n2\tnan\tnan\n3\t5.")
    steps = read_steps(tmp_path, "run")
    assert steps.steps.tolist() == [1, 2] and steps.at(1) == (5.5, 1.25) and math.isnan(steps.at(2)[0])


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("step\tloss\n1\t5.5\n", "run r: steps.tsv is damaged: its first line is not the header"),
        ("step\tloss\tgrad_norm\n1\t5.5\t1.0\nabc\n2\t5.0\t1.0\n", r"damaged at line 3 \(not a step, a loss and a"),
        ("step\tloss\tgrad_norm\n1\t5.5\t1.0\n-2\t5.0\t1.0\n", "damaged at line 3"),
        ("step\tloss\tgrad_norm\n2\t5.5\t1.0\n2\t5.0\t1.0\n", r"damaged at line 3 \(step 2 after step 2\)"),
        ("step\tloss\tgrad_norm\n1\t5.5\t1.0\t7\n", "damaged at line 2"),
    ],
)
def test_a_damaged_file_is_said_in_a_sentence(tmp_path, text, said):
    lines(tmp_path, text)
    with pytest.raises(StepFileDamaged, match=said) as caught:
        read_steps(tmp_path, "r")
    assert "\n" not in str(caught.value) and "move it aside" in str(caught.value)
    truncate_steps_after(tmp_path, 1)  # a resume leaves a damaged file as it is
    assert (tmp_path / STEPS_FILE).read_text(encoding="utf-8") == text


def test_bytes_that_are_not_text_are_said(tmp_path):
    (tmp_path / STEPS_FILE).write_bytes(b"step\tloss\tgrad_norm\n1\t\xff\xfe\t1\n")
    with pytest.raises(StepFileDamaged, match=r"run r: steps\.tsv cannot be read"):
        read_steps(tmp_path, "r")


def test_a_run_without_the_file_has_no_steps(tmp_path):
    assert len(read_steps(tmp_path, "r")) == 0
    lines(tmp_path, "")
    assert len(read_steps(tmp_path, "r")) == 0


def test_steps_a_full_disk_refused_are_written_with_the_next_ones(tmp_path, tmpfs):
    disk, cpu = tmpfs(tmp_path / "disk", "size=64k"), torch.device("cpu")
    log = StepLog()
    log.add(1, torch.tensor(11.0), 2, torch.tensor(3.0))
    log.write(disk, SINGLE, cpu)
    fill(disk)
    for step in range(2, 402):  # more than the room left in the file's last page
        log.add(step, torch.tensor(9.0), 2, None if step == 2 else torch.tensor(math.inf if step == 3 else 1.5))
    log.write(disk, SINGLE, cpu)  # refused: nothing half-written, nothing lost
    assert read_steps(disk, "r").steps.tolist() == [1]
    (disk / "filler.bin").unlink()
    log.add(402, torch.tensor(6.0), 3, torch.tensor(1.5))
    log.write(disk, SINGLE, cpu)
    steps = read_steps(disk, "r")
    assert steps.steps.tolist() == list(range(1, 403))
    assert steps.loss[[0, 1, 401]].tolist() == [5.5, 4.5, 2.0]
    assert steps.grad_norm[[0, 3, 401]].tolist() == [3.0, 1.5, 1.5] and np.isnan(steps.grad_norm[[1, 2]]).all()


def test_a_growing_file_is_followed_a_few_lines_at_a_time(tmp_path):
    tail = StepTail(tmp_path, "run")
    assert len(tail.read()) == 0 and not tail.begun_again  # no file yet
    append_steps(tmp_path, [(step, 6.0 - step / 1000, 1.0) for step in range(1, 3001)])
    assert tail.read().steps.tolist() == list(range(1, 3001))
    with open(tmp_path / STEPS_FILE, "a", encoding="utf-8") as file:
        file.write("3001\t3.0\t1.0\n3002\t2.9")  # the second line still being written
    assert tail.read().steps.tolist() == [3001]
    with open(tmp_path / STEPS_FILE, "a", encoding="utf-8") as file:
        file.write("\t0.5\n")
    newest = tail.read()
    assert newest.steps.tolist() == [3002] and newest.at(3002) == (2.9, 0.5)
    assert tail.offset == (tmp_path / STEPS_FILE).stat().st_size  # every byte read once
    assert len(tail.read()) == 0 and not tail.begun_again


def test_a_file_cut_back_by_a_resume_is_read_again_from_its_start(tmp_path):
    append_steps(tmp_path, [(step, 5.0, 1.0) for step in range(1, 21)])
    tail = StepTail(tmp_path, "run")
    assert len(tail.read()) == 20
    truncate_steps_after(tmp_path, 12)
    append_steps(tmp_path, [(13, 4.0, 1.0)])
    again = tail.read()
    assert tail.begun_again and again.steps.tolist() == list(range(1, 14)) and again.at(13) == (4.0, 1.0)


def test_damage_in_the_lines_appended_is_said_with_its_line_number(tmp_path):
    append_steps(tmp_path, [(1, 5.0, 1.0), (2, 5.0, 1.0)])
    tail = StepTail(tmp_path, "run")
    tail.read()
    with open(tmp_path / STEPS_FILE, "a", encoding="utf-8") as file:
        file.write("3\t5.0\t1.0\n2\t5.0\t1.0\n")
    with pytest.raises(StepFileDamaged, match=r"damaged at line 5 \(step 2 after step 3\)"):
        tail.read()
