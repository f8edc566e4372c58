"""Which compute devices this machine offers to PyTorch."""

from __future__ import annotations

from dataclasses import dataclass

from mlm_studio.core.config.sections import DEVICES, join_words, valid_device


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
        raise ValueError(f"{name!r} is not a device: write {join_words(DEVICES, 'or')} (N: a GPU's number)")
    if name == "auto":
        return torch.device(available_devices()[0].name)
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name} was asked for, but PyTorch sees no CUDA GPU; choose cpu or auto")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ValueError(f"device {name} does not exist; this machine has {torch.cuda.device_count()} GPU(s)")
    if device.type == "mps" and not _mps_available():
        raise ValueError("device mps was asked for, but Apple's GPU is not available; choose cpu or auto")
    return device


def _mps_available() -> bool:
    import torch

    return getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()


def autocast_dtype(precision: str, device):
    """The dtype `torch.autocast` computes in for a precision (None: fp32, no autocast)."""
    import torch

    if precision == "fp32":
        return None
    if precision == "fp16" and device.type != "cuda":
        raise ValueError("fp16 needs a CUDA GPU (it relies on loss scaling there); use bf16 or fp32")
    return torch.bfloat16 if precision == "bf16" else torch.float16


def fused_optimizer_runs_on(device) -> bool:
    """Whether PyTorch's fused AdamW runs on this device."""
    return device.type in ("cuda", "cpu", "mps")
