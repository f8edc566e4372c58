"""What every model family shares: the masked-LM's forward pass with its sparse prediction head, attention,
the CPU's faster dropout, and the optimizer's parameter groups.

A family's masked-LM subclasses `MaskedLM` and gives `hidden` (the encoder: hidden states, or only the rows a
`keep` mask selects, its last layer then running on those rows alone) and `logits` (its head: hidden states → logits).
In training the vocabulary projection is computed only at the positions that carry a label (sparse
prediction): with 15% masking that skips 85% of the largest matrix multiply of a small model, and gives the
same loss as the dense head.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.data.masking import IGNORE_INDEX


@dataclass
class MLMOutput:
    loss: torch.Tensor | None  # mean cross-entropy over labelled positions
    # (N, V) at labelled positions when labels are given (the loss's backward overwrites them: read them first),
    # else (B, L, V)
    logits: torch.Tensor
    labels: torch.Tensor | None  # (N,) the labels those logits predict
    top: torch.Tensor | None  # (N,) fp32: the largest of each row of those logits, where the loss found it

    def correct(self) -> torch.Tensor:
        """How many labels are their row's most likely token (read before the backward). From the loss's row
        maxima, a label tied with another for the largest logit counts as predicted; argmax, slow on the CPU,
        would pick the first of them."""
        if self.top is None:
            return (self.logits.detach().argmax(-1) == self.labels).sum()
        return (self.logits.detach().gather(1, self.labels[:, None]).squeeze(1).float() == self.top).sum()

    @property
    def masked_lm_loss(self) -> torch.Tensor | None:
        """The masked-LM's loss (what an objective adds to it is its own)."""
        return self.loss

    def detection_sums(self) -> torch.Tensor | None:
        """Replaced-token detection's sums (an ELECTRA objective's); None for a masked-LM."""
        return None


class VocabularyCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of (N, V) logits against (N,) targets, and each row's largest logit (N,) in fp32, computed
    without a log-softmax the size of the logits: the forward keeps each row's log-sum-exp, the backward turns the
    logits' own memory into their gradient, softmax minus one-hot. Both work a few rows at a time in fp32, so bf16
    logits are never copied whole to fp32. Large fresh tensors cost page faults on the CPU; this saves three of
    them per step. The logits cannot be read after the backward, nor backpropagated twice."""

    ROWS = 64  # rows a chunk: 64 × a 30,000-token vocabulary in fp32 is 7.7 MB

    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lse, top = [], []
        for rows in logits.split(VocabularyCrossEntropy.ROWS):
            x = rows.float()
            largest = x.amax(-1, keepdim=True)
            lse.append(largest.squeeze(1) + (x - largest).exp_().sum(-1).log_())
            top.append(largest.squeeze(1))
        lse, top = torch.cat(lse), torch.cat(top)
        ctx.save_for_backward(logits, targets, lse)
        ctx.spent = False
        ctx.mark_non_differentiable(top)
        return (lse - logits.gather(1, targets[:, None]).squeeze(1).float()).mean(), top

    @staticmethod
    def backward(ctx, grad: torch.Tensor, _top: None) -> tuple[torch.Tensor, None]:
        if ctx.spent:
            raise RuntimeError("the masked-LM loss cannot be backpropagated twice: its backward reuses the logits")
        ctx.spent = True
        logits, targets, lse = ctx.saved_tensors
        scale, rows = grad / len(targets), VocabularyCrossEntropy.ROWS
        for start, chunk in zip(range(0, len(targets), rows), logits.split(rows)):
            x = chunk.float()  # the chunk itself in fp32, else a copy written back
            softmax = x.sub_(lse[start : start + rows, None]).exp_()
            softmax[torch.arange(len(x), device=x.device), targets[start : start + rows]] -= 1
            softmax.mul_(scale)
            if softmax is not chunk:
                chunk.copy_(softmax)
        return logits, None


class Dropout(nn.Dropout):
    """Dropout that, on the CPU, draws its mask 16 bits at a time from 64-bit random integers: about 3× faster
    than PyTorch's Bernoulli sampling there, which takes a fifth of a training step. The drop probability is
    rounded to a multiple of 1/65536 and the kept values scaled to keep the expectation exact."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    return x * kept_scaled(x, p)


def kept_scaled(x: torch.Tensor, p: float) -> torch.Tensor:
    """The CPU dropout's multiplier for `x`: 0 where dropped, 1/(1 - p) where kept, in `x`'s dtype."""
    threshold = round(p * 65536)
    bits = torch.empty((x.numel() + 3) // 4, dtype=torch.int64, device=x.device).random_(-(2**63), 2**63 - 1)
    keep = bits.view(torch.int16)[: x.numel()].view(x.shape) >= threshold - 32768
    return keep.to(x.dtype).mul_(65536 / (65536 - threshold))


_RECORDING = threading.local()  # `maps`: the list this thread's attention probabilities are appended to


@contextmanager
def recorded_attention() -> Iterator[list[torch.Tensor]]:
    """While open, every attention layer this thread runs appends its (B, nh, L, L) probabilities (detached) to
    the list it yields, in layer order. They are computed the eager way, which costs nothing when not recording."""
    maps: list[torch.Tensor] = []
    outer = getattr(_RECORDING, "maps", None)
    _RECORDING.maps = maps
    try:
        yield maps
    finally:
        _RECORDING.maps = outer


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, p: float) -> torch.Tensor:
    """Scaled dot-product attention of (B, nh, L, hs) heads, `mask` True where a query may look; dropout `p` on
    the weights. On the CPU with dropout (SDPA samples it slowly) or in bf16 (its fused kernel's backward runs at
    a fifth of the matrix multiplies' rate there) it is computed as `ExplicitAttention`; elsewhere by SDPA."""
    if getattr(_RECORDING, "maps", None) is not None or attention_kernel(q.device.type, q.dtype, p) == "explicit":
        return ExplicitAttention.apply(q, k, v, mask, p)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)


def attention_kernel(device_type: str, dtype: torch.dtype, p: float) -> str:
    """Which computation `attention` trains with on this device at this dtype and dropout: "explicit"
    (`ExplicitAttention`) or "sdpa" (`F.scaled_dot_product_attention`)."""
    return "explicit" if device_type == "cpu" and (p > 0 or dtype != torch.float32) else "sdpa"


class ExplicitAttention(torch.autograd.Function):
    """Attention as two batched matrix multiplies around a softmax (and the CPU's faster dropout), with a
    backward of four batched multiplies and one softmax gradient: no pass over the (B, nh, L, L) weights that
    autograd's chain of scaling, masking and dropout would add. Records the weights while `recorded_attention`
    is open."""

    @staticmethod
    def forward(ctx, q, k, v, mask, p):
        scale = q.shape[-1] ** -0.5
        scores = (q * scale) @ k.transpose(-2, -1)  # (B, nh, L, L); scaling q is cheaper
        if mask is not None:
            scores.masked_fill_(~mask, float("-inf"))
        probabilities = scores.softmax(-1)
        recording = getattr(_RECORDING, "maps", None)
        if recording is not None:
            recording.append(probabilities)
        kept = kept_scaled(probabilities, p) if p > 0 else None
        weights = probabilities if kept is None else probabilities * kept
        ctx.save_for_backward(q, k, v, probabilities, weights, kept)
        ctx.scale = scale
        return weights @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, probabilities, weights, kept = ctx.saved_tensors
        grad_weights = grad @ v.transpose(-2, -1)
        if kept is not None:
            grad_weights.mul_(kept)
        grad_scores = torch._softmax_backward_data(grad_weights, probabilities, -1, probabilities.dtype)
        grad_q = (grad_scores @ k).mul_(ctx.scale)
        grad_k = (grad_scores.transpose(-2, -1) @ q).mul_(ctx.scale)
        return grad_q, grad_k, weights.transpose(-2, -1) @ grad, None, None


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, L, H) → (B, nh, L, H/nh)."""
    b, length, h = x.shape
    return x.view(b, length, heads, h // heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, nh, L, hs) → (B, L, nh·hs)."""
    b, heads, length, size = x.shape
    return x.transpose(1, 2).reshape(b, length, heads * size)


def padding_mask(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """A (B, L) mask (0 on padding) as attention's (B, 1, 1, L) bool mask."""
    return None if attention_mask is None else attention_mask[:, None, None, :].bool()


class MaskedLM(nn.Module):
    """A masked-LM of any family; subclasses define `hidden` and `logits` and set `config`."""

    config: ModelConfig

    def hidden(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, keep: torch.Tensor | None = None
    ) -> torch.Tensor:
        raise NotImplementedError

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        dense: bool = False,
    ) -> MLMOutput:
        """With `labels`, logits and loss only where a label is set (unless `dense`); without, every position.
        Sparse, the last layer and the head run only at the labelled positions: the same loss, less work."""
        if labels is None:
            return MLMOutput(None, self.logits(self.hidden(input_ids, attention_mask)), None, None)
        if dense:
            logits = self.logits(self.hidden(input_ids, attention_mask))  # (B, L, V)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX)
            return MLMOutput(loss, logits, labels, None)
        selected = labels != IGNORE_INDEX  # (B, L)
        targets = labels[selected]  # (N,)
        logits = self.logits(self.hidden(input_ids, attention_mask, keep=selected))  # (N, V)
        if not len(targets):
            return MLMOutput(logits.sum() * 0.0, logits, targets, None)
        loss, top = VocabularyCrossEntropy.apply(logits, targets)
        return MLMOutput(loss, logits, targets, top)

    def predict_at(self, input_ids: torch.Tensor, positions: torch.Tensor, attention_mask=None) -> torch.Tensor:
        """Logits (N, V) at the (N, 2) [row, column] `positions` only (the last layer runs there alone)."""
        length = input_ids.shape[1]
        flat, order = (positions[:, 0] * length + positions[:, 1]).unique(return_inverse=True)
        keep = torch.zeros(input_ids.numel(), dtype=torch.bool, device=input_ids.device)
        keep[flat] = True
        hidden = self.hidden(input_ids, attention_mask, keep=keep.view(input_ids.shape))  # rows in `flat` order
        return self.logits(hidden[order])


def layer_count(model: nn.Module) -> int:
    return len(layers_of(model))


def layers_of(model: nn.Module) -> nn.ModuleList:
    """The encoder's layers: every family keeps them in its one ModuleList."""
    return next(m for m in model.modules() if isinstance(m, nn.ModuleList))


@contextmanager
def layer_outputs(model: nn.Module, layer: int) -> Iterator[list[torch.Tensor]]:
    """While open, the output of encoder layer `layer` (1 = the first) at each forward pass, appended to the list
    it yields."""
    captured: list[torch.Tensor] = []
    hook = layers_of(model)[layer - 1].register_forward_hook(lambda _m, _i, output: captured.append(output))
    try:
        yield captured
    finally:
        hook.remove()


def init_like_bert(module: nn.Module, std: float) -> None:
    """BERT's initialisation: normal weights, zero biases, unit LayerNorms, a zero padding embedding."""
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, 0.0, std)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, 0.0, std)
        if module.padding_idx is not None:
            nn.init.zeros_(module.weight[module.padding_idx])
    elif isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Optimizer parameter groups: weight decay on matrices, none on biases, norms and embeddings' norms."""
    decay, no_decay, seen = [], [], set()
    for name, parameter in model.named_parameters():
        if id(parameter) in seen or not parameter.requires_grad:
            continue
        seen.add(id(parameter))
        lowered = name.lower()
        is_norm = "layernorm" in lowered or "layer_norm" in lowered or "norm." in lowered
        (no_decay if parameter.ndim < 2 or is_norm else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
