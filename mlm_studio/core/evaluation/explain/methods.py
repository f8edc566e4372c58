"""Three ways to say how much each piece of a text carried one output of a model, all computed here over the
input embeddings in plain PyTorch (no Qt, no other dependency):

- gradient × input: the output's gradient at each piece's embedding, dotted with the embedding (one backward);
- integrated gradients (Sundararajan et al. 2017): that gradient averaged along the straight path from a baseline
  text's embeddings to the input's, dotted with their difference; the nodes and weights are Gauss–Legendre's
  (Captum's default), and the steps run as batches of the path, so the sum of the attributions equals the
  output at the input minus at the baseline (completeness) up to the quadrature's error;
- occlusion: the output's probability with the text whole minus without one word (its pieces hidden from
  attention, the others keeping their positions).

A model's output is read through `Outputs`: (B, L) ids, an optional (B, L) attention mask (0 on padding) and the
(B,) position each row's output is read at → (B, C) logits there (a vocabulary's or a task's labels). The
embeddings the methods feed are substituted for the word embeddings' output, so positions and segments are the
model's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

Outputs = Callable[[torch.Tensor, torch.Tensor | None, torch.Tensor], torch.Tensor]

PATH_BATCH = 16  # points of the integration path run together (bounds memory on long texts)
OCCLUDED_BATCH = 32  # texts without one word scored together


def word_embeddings(model: nn.Module) -> nn.Embedding:
    """The embedding table of a model's pieces (every family names it `word_embeddings` or `tok_embeddings`)."""
    return next(
        module
        for name, module in model.named_modules()
        if isinstance(module, nn.Embedding) and name.endswith(("word_embeddings", "tok_embeddings"))
    )


@contextmanager
def substituted_embeddings(model: nn.Module, embeddings: torch.Tensor) -> Iterator[None]:
    """While open, the word embeddings' output is `embeddings` (B, L, E) in this thread's forward passes (another
    thread using the same model, such as the Playground's fill-mask, is left alone)."""
    owner = threading.get_ident()
    hook = word_embeddings(model).register_forward_hook(
        lambda _module, _inputs, output: embeddings if threading.get_ident() == owner else output
    )
    try:
        yield
    finally:
        hook.remove()


def gradient_x_input(model: nn.Module, outputs: Outputs, ids: torch.Tensor, where: int, label: int) -> np.ndarray:
    """(1, L) ids → (L,) each piece's gradient × input for the logit of `label` at piece `where`."""
    with torch.inference_mode(False), torch.enable_grad():
        embedded = word_embeddings(model)(ids).detach().requires_grad_()  # (1, L, E)
        with substituted_embeddings(model, embedded):
            logit = outputs(ids, None, torch.tensor([where], device=ids.device))[:, label]
        (gradient,) = torch.autograd.grad(logit.sum(), embedded)
    return (gradient * embedded).sum(-1)[0].detach().double().cpu().numpy()


def path_nodes(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes on [0, 1] and their weights (summing to 1)."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return 0.5 * (nodes + 1.0), 0.5 * weights


def integrated_gradients(
    model: nn.Module,
    outputs: Outputs,
    ids: torch.Tensor,
    baseline: torch.Tensor,
    where: int,
    label: int,
    steps: int,
    check: Callable[[], None] = lambda: None,
) -> tuple[np.ndarray, float]:
    """(1, L) ids and baseline ids → (L,) attributions to the logit of `label` at piece `where`, and that logit
    at the input minus at the baseline (what the attributions sum to). `check` is called before each batch of the
    path: an explanation no longer wanted raises there to stop."""
    table = word_embeddings(model)
    with torch.inference_mode(False), torch.enable_grad():
        start, end = table(baseline).detach(), table(ids).detach()  # (1, L, E)
        nodes, weights = (torch.tensor(v, dtype=start.dtype, device=ids.device) for v in path_nodes(steps))
        gradient = torch.zeros_like(end[0])  # (L, E): the weighted sum along the path
        for first in range(0, steps, PATH_BATCH):
            check()
            alphas = nodes[first : first + PATH_BATCH, None, None]  # (S, 1, 1)
            path = (start + alphas * (end - start)).requires_grad_()  # (S, L, E)
            count = len(alphas)
            with substituted_embeddings(model, path):
                logits = outputs(ids.expand(count, -1), None, torch.full((count,), where, device=ids.device))[:, label]
            (step_gradients,) = torch.autograd.grad(logits.sum(), path)
            gradient += (weights[first : first + PATH_BATCH, None, None] * step_gradients).sum(0)
        with torch.no_grad(), substituted_embeddings(model, torch.cat([end, start])):
            both = outputs(ids.expand(2, -1), None, torch.full((2,), where, device=ids.device))
            at_input, at_baseline = both[:, label].tolist()
    attributions = ((end[0] - start[0]) * gradient).sum(-1)
    return attributions.double().cpu().numpy(), at_input - at_baseline


def occlusion(
    outputs: Outputs, ids: torch.Tensor, groups: Sequence[Sequence[int]], where: int, label: int
) -> np.ndarray:
    """(1, L) ids and groups of piece positions (a word's) → (G,) the probability of `label` at piece `where`
    with the text whole minus with each group removed: its pieces hidden from attention as padding is, the other
    pieces keeping their positions (positive: the group supported the output; an empty group: 0)."""
    with torch.no_grad():
        whole = outputs(ids, None, torch.tensor([where], device=ids.device)).float().softmax(-1)[0, label].item()
        changes = []
        for first in range(0, len(groups), OCCLUDED_BATCH):
            batch = groups[first : first + OCCLUDED_BATCH]
            visible = torch.ones((len(batch), ids.shape[1]), dtype=torch.long, device=ids.device)
            for row, group in enumerate(batch):
                visible[row, list(group)] = 0
            at = torch.full((len(batch),), where, device=ids.device)
            probabilities = outputs(ids.expand(len(batch), -1), visible, at).float().softmax(-1)[:, label]
            changes.append(whole - probabilities)
    if not changes:
        return np.zeros(0)
    out = torch.cat(changes).double().cpu().numpy()
    out[[not group for group in groups]] = 0.0  # nothing removed: no change (not a rounding's)
    return out
