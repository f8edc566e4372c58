"""Which compute devices this machine offers to PyTorch."""

from __future__ import annotations

from dataclasses import dataclass

from mlm_studio.core.config.sections import DEVICES, join_words, valid_device
from mlm_studio.core.errors import UserError
from mlm_studio.core.shown import shown


@dataclass(frozen=True)
class DeviceInfo:
    """One device a model can train on: its torch name ("cpu", "cuda:0", "mps") and a label for people."""

    name: str
    label: str


def available_devices() -> list[DeviceInfo]:
    """Every usable device, best first: each CUDA GPU, then MPS, then the CPU."""
    import torch  # imported here: torch is slow to import and the window must open fast

    devices = [
        DeviceInfo(f"cuda:{i}", f"CUDA {i}: {torch.cuda.get_device_name(i)}") for i in range(torch.cuda.device_count())
    ]
    if _mps_available():
        devices.append(DeviceInfo("mps", "Apple GPU (MPS)"))
    devices.append(DeviceInfo("cpu", f"CPU ({torch.get_num_threads()} threads)"))
    return devices


def resolve_device(name: str):
    """The torch device for a config value; "auto" is the best of `available_devices()`. A name that is not one
    of `DEVICES`, or a device this machine lacks, is refused with a ValueError that says what to write."""
    import torch

    if not valid_device(name):
        raise UserError(f"{shown(name)} is not a device: write {join_words(DEVICES, 'or')} (N: a GPU's number)")
    if name == "auto":
        return torch.device(available_devices()[0].name)
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {name} was asked for, but PyTorch sees no CUDA GPU; choose cpu or auto")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise UserError(f"device {name} does not exist; this machine has {torch.cuda.device_count()} GPU(s)")
    if device.type == "mps" and not _mps_available():
        raise UserError("device mps was asked for, but Apple's GPU is not available; choose cpu or auto")
    return device


def _mps_available() -> bool:
    import torch

    return getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()


def computes_bf16_natively(device) -> bool:
    """Whether `device` computes bfloat16 in hardware: a CUDA GPU that supports it without emulation, or a CPU
    with AVX512-BF16 or AMX-BF16 as `torch.cpu.get_capabilities()` reports them (a PyTorch too old to report
    them counts as no)."""
    import torch

    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    capabilities = getattr(torch.cpu, "get_capabilities", None)
    if device.type != "cpu" or capabilities is None:
        return False
    found = capabilities()
    return bool(found.get("avx512_bf16") or found.get("amx_bf16"))


def resolved_precision(precision: str, device) -> str:
    """The precision a run trains in: "auto" is bf16 where `device` computes it natively, else fp32."""
    if precision != "auto":
        return precision
    return "bf16" if computes_bf16_natively(device) else "fp32"


def autocast_dtype(precision: str, device):
    """The dtype `torch.autocast` computes in for a precision (None: fp32, no autocast)."""
    import torch

    precision = resolved_precision(precision, device)
    if precision == "fp32":
        return None
    if precision == "fp16" and device.type != "cuda":
        raise UserError("fp16 needs a CUDA GPU (it relies on loss scaling there); use bf16 or fp32")
    return torch.bfloat16 if precision == "bf16" else torch.float16


def optimizer_kernel(device) -> dict[str, bool]:
    """AdamW's implementation for this device: the fused kernel where PyTorch has one (CUDA, MPS, and the CPU
    since torch 2.4), else the multi-tensor (`foreach`) one; both give the single-tensor loop's results."""
    return {"fused": True} if device.type in ("cuda", "cpu", "mps") else {"foreach": True}


def adamw(model, training, device):
    """AdamW over `model` with a recipe's (`TrainConfig`) rate, betas, epsilon and weight decay (none on biases and
    norms), in this device's fastest kernel (`optimizer_kernel`)."""
    import torch

    from mlm_studio.core.models.encoder import decay_groups

    return torch.optim.AdamW(
        decay_groups(model, training.weight_decay),
        lr=training.learning_rate,
        betas=(training.adam_beta1, training.adam_beta2),
        eps=training.adam_epsilon,
        **optimizer_kernel(device),
    )
