"""A run folder's checkpoints: their order, and what a killed writer leaves behind."""

import shutil
import subprocess
import sys

from mlm_studio.core.storage.run_folder import RunDir, checkpoint_step

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
