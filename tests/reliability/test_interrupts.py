"""Ctrl-C during training: the handler that asks for a stop never waits for a lock the interrupted loop holds."""

import subprocess
import sys

ROUNDS = 50  # each a real SIGINT at an arbitrary point of the loop that checks for a pause and a stop

CHILD = f"""
import os, signal, threading
from mlm_studio.commands.terminal import stop_on_interrupt
from mlm_studio.core.runs.control import TrainingControl

def interrupt(looping):
    looping.wait()
    os.kill(os.getpid(), signal.SIGINT)

for _ in range({ROUNDS}):
    control, looping, checks = TrainingControl(), threading.Event(), 0
    signal.signal(signal.SIGINT, stop_on_interrupt(control, say=False))
    threading.Thread(target=interrupt, args=(looping,)).start()
    while not control.stop_requested:  # what a trainer checks between steps
        control.wait_while_paused()
        checks += 1
        if checks == 100:  # the loop is under way: the signal lands at some later check
            looping.set()
print("stopped every time")
"""


def test_ctrl_c_between_steps_always_stops_the_loop():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (0, "stopped every time\n", "")
