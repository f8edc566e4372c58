"""Faster defaults that keep what a run means: precision `auto` and AdamW's fused or multi-tensor kernel."""

import copy
from pathlib import Path

import pytest
import torch

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.models.build import build_trained
from mlm_studio.core.models.encoder import decay_groups
from mlm_studio.core.runs.device import computes_bf16_natively, optimizer_kernel, resolved_precision
from mlm_studio.core.runs.records import StartedRecord
from mlm_studio.core.training.runs import resume_differences, start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config, with_training

CPU = torch.device("cpu")


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="reads the kernel's list of CPU features")
@pytest.mark.skipif(not hasattr(torch.cpu, "get_capabilities"), reason="this PyTorch does not report CPU features")
def test_auto_is_bf16_exactly_where_the_cpu_computes_it():
    native = bool({"avx512_bf16", "amx_bf16"} & cpu_flags())
    assert computes_bf16_natively(CPU) is native
    assert resolved_precision("auto", CPU) == ("bf16" if native else "fp32")
    assert resolved_precision("auto", torch.device("mps")) == "fp32"
    for chosen in ("fp32", "bf16", "fp16"):
        assert resolved_precision(chosen, CPU) == chosen


def test_a_new_run_records_the_precision_auto_chose_says_it_and_resumes_in_it(tmp_path, small_corpus, small_tokenizer):
    config = small_config(max_steps=2, device="cpu")
    assert config.training.precision == "auto"  # the default
    chosen = resolved_precision("auto", CPU)
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    assert RunConfig.load(run.path / "config.toml").training.precision == chosen
    assert f'precision = "{chosen}"' in (run.path / "config.toml").read_text()
    started = next(iter(Trainer(run, *training_blocks(run, small_corpus)).run()))
    assert isinstance(started, StartedRecord) and started.precision == chosen
    assert f"on cpu in {chosen}:" in started.describe()
    assert run.read_metrics()[0]["precision"] == chosen
    assert resume_differences(run, config) == ({}, {})  # auto again, on the same machine: nothing changes
    other = "fp32" if chosen == "bf16" else "bf16"
    assert resume_differences(run, with_training(config, precision=other)) == (
        {"training.precision": (chosen, other)},
        {},
    )


def test_the_trainer_uses_the_fused_kernel_on_the_cpu(tmp_path, small_corpus, small_tokenizer):
    run = start_run(tmp_path / "run", small_config(device="cpu"), small_corpus, small_tokenizer)
    trainer = Trainer(run, *training_blocks(run, small_corpus))
    assert optimizer_kernel(CPU) == {"fused": True} and trainer.optimizer.defaults["fused"] is True
    assert optimizer_kernel(torch.device("meta")) == {"foreach": True}  # a device without a fused kernel


def adamw(model, **kernel):
    return torch.optim.AdamW(decay_groups(model, 0.01), lr=1e-3, betas=(0.9, 0.98), eps=1e-6, **kernel)


@pytest.mark.parametrize("kernel", [{"fused": True}, {"foreach": True}])
def test_the_kernels_update_the_weights_as_the_single_tensor_loop_does(kernel):
    torch.manual_seed(0)
    plain_model = build_trained(small_config())
    fast_model, initial = copy.deepcopy(plain_model), copy.deepcopy(plain_model)
    plain = adamw(plain_model, foreach=False, fused=False)
    fast = adamw(fast_model, **kernel)
    gradients = torch.Generator().manual_seed(1)
    for step in range(20):
        for optimizer in (plain, fast):
            for group in optimizer.param_groups:
                group["lr"] = 2e-3 * (step + 1) / 20  # a schedule changes it every step, as the trainer's does
        for a, b in zip(plain_model.parameters(), fast_model.parameters(), strict=True):
            a.grad = torch.randn(a.shape, generator=gradients)
            b.grad = a.grad.clone()
        plain.step()
        fast.step()
    moved = 0.0
    for a, b, start in zip(plain_model.parameters(), fast_model.parameters(), initial.parameters(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
        moved = max(moved, (a - start).abs().max().item())
    assert moved > 1e-2  # the weights did move: the comparison is not of two untouched models
    for state_a, state_b in zip(plain.state.values(), fast.state.values(), strict=True):
        torch.testing.assert_close(state_b["exp_avg_sq"], state_a["exp_avg_sq"], rtol=1e-5, atol=1e-9)
