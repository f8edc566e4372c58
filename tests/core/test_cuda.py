"""The engine on a CUDA GPU (run by `benchmarks/gpu.sh`; skipped where there is none): every precision
trains, every family and ELECTRA's objective train, a run resumes, the dropout and attention paths match the
CPU's semantics, fill-mask predicts."""

from dataclasses import replace

import pytest
import torch

from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.runs.records import FinishedRecord, StepRecord
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_training_on_cuda_in_every_precision(tmp_path, small_corpus, small_tokenizer, precision):
    config = small_config(max_steps=12, device="cuda", precision=precision, learning_rate=5e-3)
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    trainer = Trainer(run, *training_blocks(run, small_corpus))
    assert trainer.device.type == "cuda"
    records = list(trainer.run())
    losses = [r.loss for r in records if isinstance(r, StepRecord)]
    assert isinstance(records[-1], FinishedRecord) and all(torch.isfinite(torch.tensor(losses)))
    assert sum(losses[-3:]) < sum(losses[:3])
    resumed = Trainer(run, *training_blocks(run, small_corpus))
    assert resumed.step == 12 and next(resumed.model.parameters()).is_cuda


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "modernbert", "electra"])
def test_every_family_and_objective_trains_on_cuda(tmp_path, small_corpus, small_tokenizer, family):
    config = small_config(max_steps=6, device="cuda", precision="bf16", learning_rate=5e-3)
    config = (
        config.with_objective("electra")
        if family == "electra"
        else replace(config, model=config.model.as_family(family))
    )
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    records = list(Trainer(run, *training_blocks(run, small_corpus)).run())
    assert isinstance(records[-1], FinishedRecord)
    steps = [r for r in records if isinstance(r, StepRecord)]
    assert all(torch.isfinite(torch.tensor([r.loss for r in steps])))
    assert family != "electra" or all(r.detection_loss is not None for r in steps)


def test_fill_mask_on_cuda_matches_the_cpu(tmp_path, small_corpus, small_tokenizer):
    run = start_run(tmp_path / "run", small_config(max_steps=8), small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    text = "Return the [MASK] of the list."
    on_gpu, on_cpu = FillMask.from_path(run.path, "cuda").predict(text), FillMask.from_path(run.path).predict(text)
    assert [c.token for c in on_gpu[0]] == [c.token for c in on_cpu[0]]
    assert [c.score for c in on_gpu[0]] == pytest.approx([c.score for c in on_cpu[0]], abs=1e-3)
