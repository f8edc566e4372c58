"""bf16 on the CPU: the whole step in bf16 on fp32 master weights, which the optimizer, checkpoints and resumes see."""

import copy

import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.core.models.build import build_trained
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.precision import LowPrecisionForward, step_forward
from mlm_studio.core.runs.records import StepRecord
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config, with_training

CPU = torch.device("cpu")


def batch(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 400, (4, 32), generator=generator)
    labels = torch.full_like(ids, -100)
    picked = torch.rand(ids.shape, generator=generator) < 0.15
    labels[picked] = ids[picked]
    return ids, torch.ones_like(ids), labels


def test_each_precision_takes_one_road_on_the_cpu():
    model = torch.nn.Linear(2, 2)
    forward, autocast = step_forward(model, "bf16", CPU)
    assert isinstance(forward, LowPrecisionForward) and forward.model is model and autocast is None
    assert step_forward(model, "fp32", CPU) == (model, None)


@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_a_bf16_forward_trains_the_fp32_weights_themselves_and_leaves_them_fp32(objective):
    torch.manual_seed(0)
    config = small_config()
    if objective == "electra":
        config = config.with_values({"model.family": "electra", "training.objective": "electra"})
    model = build_trained(config)
    reference = copy.deepcopy(model)
    weights = dict(model.named_parameters(remove_duplicate=False))  # an ELECTRA pair shares its embeddings
    ids, mask, labels = batch()

    torch.manual_seed(1)
    out = LowPrecisionForward(model, torch.bfloat16)(ids, mask, labels)
    assert out.logits.dtype == torch.bfloat16
    out.loss.backward()
    torch.manual_seed(1)
    expected = reference(ids, mask, labels)
    expected.loss.backward()

    assert dict(model.named_parameters(remove_duplicate=False)).keys() == weights.keys()
    for name, weight in model.named_parameters(remove_duplicate=False):
        assert weight is weights[name] and weight.dtype == torch.float32
    assert float(out.loss) == pytest.approx(float(expected.loss), rel=2e-2)
    gradients = torch.cat([p.grad.flatten() for p in model.parameters()])
    exact = torch.cat([p.grad.flatten() for p in reference.parameters()])
    assert gradients.dtype == torch.float32
    assert torch.nn.functional.cosine_similarity(gradients, exact, dim=0) > 0.99


def test_a_bf16_run_saves_fp32_weights_and_resumes_exactly(tmp_path, small_corpus, small_tokenizer):
    config = small_config(max_steps=6, precision="bf16", checkpoint_interval=100, eval_interval=100)

    def steps(records):
        return [(r.step, r.loss) for r in records if isinstance(r, StepRecord)]

    straight = start_run(tmp_path / "straight", config, small_corpus, small_tokenizer)
    expected = steps(Trainer(straight, *training_blocks(straight, small_corpus)).run())
    halves = start_run(tmp_path / "halves", with_training(config), small_corpus, small_tokenizer)
    control, first = TrainingControl(), []
    for record in Trainer(halves, *training_blocks(halves, small_corpus), control).run():
        first.append(record)
        if isinstance(record, StepRecord) and record.step == 3:
            control.stop()
    second = steps(Trainer(halves, *training_blocks(halves, small_corpus)).run())
    assert steps(first) + second == expected and len(expected) == 6
    a = load_file(str(straight.latest_checkpoint() / "model.safetensors"))
    b = load_file(str(halves.latest_checkpoint() / "model.safetensors"))
    assert all(a[k].dtype == torch.float32 and torch.equal(a[k], b[k]) for k in a)
