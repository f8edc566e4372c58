"""A run folder's checkpoints: their order, and what a killed writer leaves behind."""

import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file

from mlm_studio.core.models.build import build_trained
from mlm_studio.core.runs.run_folder import RunDir, checkpoint_step
from mlm_studio.core.storage.checkpoint import checkpoint_finite, load_weights, weights_finite

KILLED_WHILE_WRITING = """
import sys
from mlm_studio.core.storage.files import atomic_write_folder

def fill(folder):
    (folder / "model.safetensors").write_bytes(b"half")
    print("inside", flush=True)
    sys.stdin.readline()  # held here until killed

atomic_write_folder(sys.argv[1], fill)
"""


def test_checkpoints_are_ordered_by_step_and_a_killed_writers_leftovers_are_removed(tmp_path, trained_run):
    run = trained_run
    steps = [checkpoint_step(path) for path in run.checkpoints()]
    assert steps == sorted(steps) and steps[-1] == 30
    target = tmp_path / "run"
    shutil.copytree(run.path, target)
    copy = RunDir(target)
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WHILE_WRITING, str(target / "checkpoints" / "step-0000040")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "inside"
    child.kill()
    child.wait()
    hidden = [p.name for p in (target / "checkpoints").iterdir() if p.name.startswith(".")]
    assert len(hidden) == 1 and copy.latest_checkpoint().name == "step-0000030"
    copy.remove_leftovers()
    assert not [p for p in (target / "checkpoints").iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_one_non_finite_value_among_all_tensors_is_seen(bad):
    generator = torch.Generator().manual_seed(0)
    tensors = [torch.randn(64, 32, generator=generator), torch.randn(300, generator=generator).bfloat16()]
    tensors.append(torch.full((4,), 3e38))  # largest magnitude near float32's limit: a 2-norm would overflow
    tensors.append(torch.arange(5))  # integer buffers hold no weights
    assert weights_finite(tensors)
    tensors[1][123] = bad
    assert not weights_finite(tensors)


def test_the_newest_finite_checkpoint_skips_damaged_ones_and_is_never_pruned(tmp_path, trained_run):
    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    latest = run.latest_checkpoint()
    assert run.newest_finite_checkpoint() == latest and checkpoint_finite(latest)
    weights = load_file(str(latest / "model.safetensors"))
    weights = {name: torch.full_like(t, float("nan")) if t.is_floating_point() else t for name, t in weights.items()}
    save_file(weights, str(latest / "model.safetensors"))  # a NaN step-0000030, as written before weights were checked
    previous = run.checkpoints()[-2]
    assert not checkpoint_finite(latest) and run.newest_finite_checkpoint() == previous

    model = build_trained(run.config)
    load_weights(previous, model)
    optimizer = torch.optim.AdamW(model.parameters())
    written = run.save_checkpoint(29, model, optimizer, {"tokens_seen": 1, "elapsed": 1.0}, keep=1)
    assert run.latest_checkpoint() == latest  # the NaN step 30 is newer and stays: it is the user's to remove
    assert written in run.checkpoints() and run.newest_finite_checkpoint() == written
    (written / "model.safetensors").write_bytes(b"cut short")
    assert not checkpoint_finite(written)  # unreadable weights are not called finite


def test_a_checkpoint_folder_is_placed_in_its_run_wherever_the_run_keeps_it(tmp_path, trained_run):
    """RUN/checkpoints/step-N, or a folder of the run's own (a fine-tuning run's best/); a checkpoint outside any
    run is named as given, not its parent folder."""
    from mlm_studio.core.runs.run_folder import resolve_checkpoint
    from mlm_studio.core.storage.checkpoint import CheckpointError

    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    latest = run.latest_checkpoint()
    best = shutil.copytree(latest, run.path / "best")
    assert [resolve_checkpoint(latest)[0].path, resolve_checkpoint(latest)[1]] == [run.path, latest]
    found, checkpoint = resolve_checkpoint(best)
    assert found.path == run.path and checkpoint == best
    stray = shutil.copytree(latest, tmp_path / "elsewhere" / "weights")
    with pytest.raises(CheckpointError) as refused:
        resolve_checkpoint(stray)
    assert str(refused.value) == f"{stray} holds weights but belongs to no run folder (no config.toml above it)"


def test_a_damaged_latest_checkpoint_is_refused_naming_the_newest_whole_one_before_it(tmp_path, trained_run):
    """Whole: every file a resume reads. A folder without its state.json is a damaged checkpoint, not none; damaged
    ones before it are skipped (to be moved aside too), and so is an empty step folder (its files removed)."""
    from mlm_studio.core.runs.failures import refuse_nonfinite_resume
    from mlm_studio.core.storage.checkpoint import CheckpointError

    run = RunDir(shutil.copytree(trained_run.path, tmp_path / "run"))
    *_, damaged, latest = run.checkpoints()
    whole = shutil.copytree(damaged, damaged.parent / "step-0000002")  # a whole checkpoint's files, further back
    (latest / "state.json").unlink()
    with open(damaged / "optimizer.safetensors", "r+b") as f:
        f.truncate(500)
    (emptied := run.path / "checkpoints" / "step-0000099").mkdir()
    assert run.latest_checkpoint() == emptied
    with pytest.raises(CheckpointError) as refused:
        refuse_nonfinite_resume(run)
    assert str(refused.value) == (
        f"{emptied}: the folder is empty, its files removed; move this checkpoint folder and {latest.name}, "
        f"{damaged.name} (damaged too) out of {latest.parent} to use {whole.name}, the newest whole checkpoint "
        "before it"
    )
