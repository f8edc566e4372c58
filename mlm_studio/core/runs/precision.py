"""How a training step computes in its precision: the module it calls and the autocast around it.

bf16 on the CPU runs the whole forward and backward in bf16 (`LowPrecisionForward`): the model keeps its fp32
weights, the master copy its optimizer updates, its checkpoints save and its evaluations read, and each forward
casts them once to bf16. Activations then stay bf16 end to end, where autocast would cast each layer's input to
bf16 and its output back. Elsewhere (fp16, bf16 on a GPU) the model runs under `torch.autocast`; fp32 under none.
"""

from __future__ import annotations

import torch
from torch import nn

from mlm_studio.core.runs.device import autocast_dtype


class LowPrecisionForward(nn.Module):
    """`model`'s forward computed in `dtype`: for the call, each floating-point parameter is replaced by its cast
    to `dtype` (once, however many modules share it), in the autograd graph, so that gradients reach the fp32
    parameters themselves; buffers stay as they are."""

    def __init__(self, model: nn.Module, dtype: torch.dtype) -> None:
        super().__init__()
        self.model, self.dtype = model, dtype

    def forward(self, *args, **kwargs):
        casts: dict[int, torch.Tensor] = {}
        swapped = []
        for module in self.model.modules():
            for name, weight in module._parameters.items():
                if weight is not None and weight.is_floating_point():
                    cast = casts.setdefault(id(weight), weight.to(self.dtype))
                    swapped.append((module, name, weight))
                    module._parameters[name] = cast
        try:
            return self.model(*args, **kwargs)
        finally:
            for module, name, weight in swapped:
                module._parameters[name] = weight


def step_forward(model: nn.Module, precision: str, device: torch.device) -> tuple[nn.Module, torch.dtype | None]:
    """The module a training step calls for `model` in `precision` on `device`, and the dtype `torch.autocast`
    computes in around it (None: no autocast)."""
    dtype = autocast_dtype(precision, device)
    if dtype == torch.bfloat16 and device.type == "cpu":
        return LowPrecisionForward(model, dtype), None
    return model, dtype
