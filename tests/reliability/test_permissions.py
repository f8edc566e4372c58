"""Files others can read: under the usual umask 022 every file and folder a run and an export hold has the mode an
ordinary `open()` or `mkdir()` gives (rw-r--r--, rwxr-xr-x), the atomic writes' temporaries included; a real second
user (`nobody`) reads an export and a run; a task.json kept from its reader is said to be unreadable, not damaged."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mlm_studio.core.storage.lock import LOCK_FILE
from tests.command import mlm_studio
from tests.core.helpers import config_file
from tests.core.test_finetune import write_task

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--epochs", "1", "--lr", "5e-3", "--batch-size", "8", "--device", "cpu"]


def modes(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder` (itself included) with its permissions, as `ls -l` shows them."""
    found = {".": stat.filemode(folder.stat().st_mode)}
    for path in sorted(folder.rglob("*")):
        found[str(path.relative_to(folder))] = stat.filemode(path.lstat().st_mode)
    return found


def ordinary(found: dict[str, str]) -> dict[str, str]:
    """What `found` should be: each folder drwxr-xr-x, each file -rw-r--r--."""
    return {name: "drwxr-xr-x" if mode.startswith("d") else "-rw-r--r--" for name, mode in found.items()}


@pytest.fixture(scope="module")
def made(corpus_file):
    """Under umask 022, in a folder every user may enter: a pre-training run with two checkpoints, a run fine-tuned
    from it, and an export of each, all made through the terminal."""
    before = os.umask(0o022)
    shared = Path(tempfile.mkdtemp(prefix="mlm-studio-shared-"))
    try:
        shared.chmod(0o755)
        config = config_file(shared, max_steps=4, checkpoint_interval=2)
        done = mlm_studio("train", "--config", config, "--corpus", corpus_file, "--out", shared / "run")
        assert done.returncode == 0, done.stderr
        task = write_task(shared / "task.csv", rows=40)
        done = mlm_studio("finetune", shared / "run", "--task", task, "--out", shared / "ft", *FAST)
        assert done.returncode == 0, done.stderr
        for run in ("run", "ft"):
            done = mlm_studio("export", shared / run, shared / f"{run}-export")
            assert done.returncode == 0, done.stderr
        yield shared
    finally:
        os.umask(before)
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.parametrize("name", ["run", "ft", "run-export", "ft-export"])
def test_every_file_of_a_run_and_an_export_has_the_ordinary_mode(made, name):
    found = modes(made / name)
    expected = {
        "run": ["config.toml", "tokenizer.json", "metrics.jsonl", LOCK_FILE, "checkpoints/step-0000002/state.json"],
        "ft": ["task.json", "best", "best/model.safetensors", "init/model.safetensors", "checkpoints"],
        "run-export": ["config.json", "model.safetensors", "tokenizer.json", "vocab.txt", ".mlm-studio-files.json"],
        "ft-export": ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"],
    }[name]
    assert set(expected) <= set(found)
    assert any(part.startswith("checkpoints/step-") and part.endswith(".safetensors") for part in found) == (
        name in ("run", "ft")
    )
    assert found == ordinary(found)


NOBODY = """
import json, os, pwd, sys
import tokenizers
from safetensors import safe_open
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
nobody = pwd.getpwnam("nobody")
os.setgroups([])
os.setgid(nobody.pw_gid)
os.setuid(nobody.pw_uid)
out = {"uid": os.getuid()}
for folder in sys.argv[1:-1]:
    config = json.load(open(os.path.join(folder, "config.json")))
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    with safe_open(os.path.join(folder, "model.safetensors"), "np") as weights:
        tensors = len(list(weights.keys()))
    out[folder] = [config["architectures"], tokenizer.get_vocab_size(), tensors]
try:
    out["task"] = RunDir(sys.argv[-1]).task.kind
except CheckpointError as exc:
    out["task"] = str(exc)
print(json.dumps(out))
"""


def as_nobody(*args) -> dict:
    """`NOBODY` run with `args`: imported as this user (its interpreter may live where only this user can read),
    then as the user `nobody`, what it read. Skipped where this process cannot become another user."""
    if os.geteuid() != 0:
        pytest.skip("becoming a second user needs root")
    try:
        import pwd

        pwd.getpwnam("nobody")
    except (ImportError, KeyError):
        pytest.skip("this system has no user nobody")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", NOBODY, *map(str, args)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_second_user_reads_an_export_and_a_run(made):
    read = as_nobody(made / "run-export", made / "ft-export", made / "ft")
    assert read["uid"] != 0
    assert read[str(made / "run-export")][0] == ["BertForMaskedLM"]
    architectures, vocabulary, tensors = read[str(made / "ft-export")]
    assert architectures == ["BertForSequenceClassification"] and vocabulary == 400 and tensors > 0
    assert read["task"] == "classification"


def test_a_task_json_another_user_cannot_read_is_said_unreadable_not_damaged(made):
    ft = made / "ft"
    (ft / "task.json").chmod(0)
    try:
        read = as_nobody(ft)
    finally:
        (ft / "task.json").chmod(0o644)
    assert read["task"] == f"{ft / 'task.json'} cannot be read (Permission denied)"
