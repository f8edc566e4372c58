"""Int8 weight-only copies of a model's linear layers, for quick interactive predictions on the CPU: each output
channel's weights as int8 with one bf16 scale (symmetric), multiplied by PyTorch's own int8 weight-only kernel
with bf16 activations. Reduced precision: for the playground, never for exports, the CLI or parity checks."""

from __future__ import annotations

import copy

import torch
from torch import nn

INNER_BLOCK = 16  # the CPU kernel reads each row in blocks of 16 inputs; a layer of another input width stays exact
INT8_LIMIT = 127  # symmetric: -127 … 127


def int8_available(device: str | torch.device) -> bool:
    """Whether int8 weights run on `device`: the CPU, with a PyTorch build that has the kernel."""
    return torch.device(device).type == "cpu" and hasattr(torch.ops.aten, "_weight_int8pack_mm")


class Int8Linear(nn.Module):
    """An `nn.Linear` with its weight stored as int8 per output channel (one bf16 scale each) and an fp32 bias."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        scales = (weight.abs().amax(dim=1) / INT8_LIMIT).clamp_min(torch.finfo(torch.float32).tiny).bfloat16()
        rounded = torch.round(weight / scales.float()[:, None]).clamp(-INT8_LIMIT, INT8_LIMIT)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight_int8", rounded.to(torch.int8).contiguous())
        self.register_buffer("scales", scales)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().float().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(torch.bfloat16).contiguous()
        out = torch.ops.aten._weight_int8pack_mm(flat, self.weight_int8, self.scales).float()
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], self.out_features).to(x.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def int8_copy(model: nn.Module) -> nn.Module:
    """A copy of `model` in evaluation mode whose linear layers (those the kernel takes) hold int8 weights; `model`
    itself, and a word-embedding matrix a decoder shares, keep their exact weights."""
    quantized = copy.deepcopy(model).eval()
    for parent in list(quantized.modules()):
        for name, child in parent.named_children():
            if isinstance(child, nn.Linear) and child.in_features % INNER_BLOCK == 0:
                setattr(parent, name, Int8Linear(child))
    return quantized
