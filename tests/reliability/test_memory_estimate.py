"""The memory the Configuration panel announces is what training takes (peak resident memory, Linux)."""

import subprocess
import sys
from pathlib import Path

import pytest

MEASURE = """
import sys
from dataclasses import replace
from mlm_studio.core.config.presets import preset
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.training.trainer import Trainer

def status(key):
    return int(open("/proc/self/status").read().split(key + ":")[1].split()[0]) * 1024

corpus = load_corpus([sys.argv[1]])
config = preset("quickstart")
config = replace(config, training=replace(config.training, max_steps=6, eval_interval=1000, checkpoint_interval=1000))
run = start_run(sys.argv[2], config, corpus, train_tokenizer(corpus.iter_documents(), config.tokenizer))
blocks = training_blocks(run, corpus)
open("/proc/self/clear_refs", "w").write("5")  # the peak starts again from here
before = status("VmRSS")
for _ in Trainer(run, *blocks).run():
    pass
print(status("VmHWM") - before, run.config.training_memory_bytes())
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's peak-memory counters")
def test_the_training_memory_estimate_is_within_a_quarter_of_the_measured_peak(tmp_path, builtin_corpus):
    source = str(builtin_corpus.loaded_sources[0].path)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, source, str(tmp_path / "run")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    measured, estimated = map(int, done.stdout.split())
    assert 0.75 < estimated / measured < 1.25, (estimated / 2**20, measured / 2**20)
