"""Which compute devices this machine offers to PyTorch."""

from __future__ import annotations

from dataclasses import dataclass


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
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        devices.append(DeviceInfo("mps", "Apple GPU (MPS)"))
    devices.append(DeviceInfo("cpu", f"CPU ({torch.get_num_threads()} threads)"))
    return devices
