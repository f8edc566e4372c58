import os
import subprocess
import sys

SCRIPT = """
import logging, os, sys
logging.basicConfig(level=logging.WARNING)
if {torch_first}:
    import torch
from mlm_studio.ui.app import keep_openmp_threads_ready
keep_openmp_threads_ready()
print(os.environ["OMP_WAIT_POLICY"], os.environ["GOMP_SPINCOUNT"])
"""


def _start(torch_first: bool, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(torch_first=torch_first)],
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_the_window_sets_openmps_wait_policy_before_pytorch_loads():
    done = _start(torch_first=False)
    assert done.stdout.split() == ["ACTIVE", "300000"]
    assert "already loaded" not in done.stderr


def test_a_users_own_setting_wins_and_a_late_call_says_it_has_no_effect():
    done = _start(torch_first=True, OMP_WAIT_POLICY="PASSIVE")
    assert done.stdout.split() == ["PASSIVE", "300000"]
    assert "PyTorch is already loaded" in done.stderr
