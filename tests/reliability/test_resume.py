"""Scenario 5, the hard case: a crash in the middle of gradient accumulation, across an epoch boundary. The
resumed run ends with the weights, losses and learning rates of a run that never crashed."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.core.data.builtin_corpus import builtin_corpus_location, ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.runs.records import FailedRecord, FinishedRecord, StepRecord
from mlm_studio.core.runs.settings import apply_resume
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.user_folders import CACHE_ENV
from mlm_studio.core.training.runs import check_resume, start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config, train_documents, with_training

CONFIG = small_config(max_steps=8, grad_accumulation=3, checkpoint_interval=2, eval_interval=100)


def step_records(run):
    return [(r["step"], r["loss"], r["learning_rate"]) for r in run.read_metrics() if r["type"] == "step"]


def test_a_crash_mid_accumulation_resumes_exactly(tmp_path, small_corpus, small_tokenizer):
    straight = start_run(tmp_path / "straight", CONFIG, small_corpus, small_tokenizer)
    train, validation = training_blocks(straight, small_corpus)
    train = type(train)(train.data, train_documents(train, 8), train.config, small_tokenizer)
    assert len(train) < 8 * 3 * CONFIG.training.batch_size  # the run crosses an epoch boundary
    list(Trainer(straight, train, validation).run())

    crashed = start_run(tmp_path / "crashed", CONFIG, small_corpus, small_tokenizer)
    trainer = Trainer(crashed, train, validation)
    forward, calls = trainer.forward, []

    def crash_in_step_six(*args, **kwargs):
        if trainer.step == 5:
            calls.append(1)
            if len(calls) == 2:  # the second of three micro-batches
                raise RuntimeError("simulated crash")
        return forward(*args, **kwargs)

    trainer.forward = crash_in_step_six
    records = list(trainer.run())
    assert isinstance(records[-1], FailedRecord) and "simulated crash" in records[-1].message
    assert crashed.latest_checkpoint().name == "step-0000004"

    resumed = Trainer(crashed, train, validation)
    assert resumed.step == 4
    rest = list(resumed.run())
    assert isinstance(rest[-1], FinishedRecord) and [r.step for r in rest if isinstance(r, StepRecord)] == [5, 6, 7, 8]
    assert step_records(crashed) == step_records(straight)
    a = load_file(str(straight.latest_checkpoint() / "model.safetensors"))
    b = load_file(str(crashed.latest_checkpoint() / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow  # the built-in corpus is built and tokenized twice (a minute on two busy cores)
def test_a_built_in_corpus_run_resumes_after_the_cache_is_cleared_and_not_on_other_text(
    tmp_path, monkeypatch, small_tokenizer
):
    """The built-in corpus is rebuilt exactly; its fingerprint, recorded when the run began, tells. (The run begins
    on the tests' built corpus, copied into a cache of its own.)"""
    cache = tmp_path / "cache"
    built_for_the_tests = ensure_builtin_corpus()
    monkeypatch.setenv(CACHE_ENV, str(cache))
    builtin_corpus_location().parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built_for_the_tests, builtin_corpus_location())
    corpus = load_corpus([ensure_builtin_corpus()])
    config = small_config(max_steps=1, eval_interval=1, eval_blocks=4, checkpoint_interval=1)
    run = start_run(tmp_path / "run", config, corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, corpus)).run())
    built = builtin_corpus_location().read_bytes()

    shutil.rmtree(cache)
    apply_resume(run, check_resume(run, with_training(run.config, max_steps=2), None))
    records = list(Trainer(run, *training_blocks(run)).run())
    assert isinstance(records[-1], FinishedRecord) and records[-1].step == 2
    assert builtin_corpus_location().read_bytes() == built

    record = json.loads((run.path / "corpus.json").read_text(encoding="utf-8"))
    [source] = record["fingerprints"]
    record["fingerprints"][source] = "0" * 64
    (run.path / "corpus.json").write_text(json.dumps(record), encoding="utf-8")
    shutil.rmtree(cache)
    with pytest.raises(CheckpointError, match=r"has other contents \(fingerprint 000000000000 → [0-9a-f]{12}\)"):
        training_blocks(run)
