"""Scoring a model on held-out blocks: loss, top-1 and top-5 accuracy at the masked positions (and for ELECTRA's
objective how well replaced tokens are detected), under a masking that is the same at every evaluation of every
run, so the numbers compare across runs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from mlm_studio.core.data.dataset import Batch, BlockSet
from mlm_studio.core.data.masking import MaskedBatch, Masker
from mlm_studio.core.models.replaced_tokens import (
    AUC_BINS,
    DETECTION_SUMS,
    ReplacedTokenDetection,
    auc_from_histogram,
    detection_metrics,
)

EVAL_SEED = 1_234_567  # the masking of evaluation batch n is seeded with EVAL_SEED + n


def mask_blocks(
    blocks: BlockSet, indices: np.ndarray, seed: int, masker: Masker, generator: torch.Generator, device: torch.device
) -> tuple[MaskedBatch, torch.Tensor | None, int, Batch]:
    """Blocks `indices` masked with `seed` on `device`: the masked batch, the attention mask (None without
    padding), the count of real tokens, and the blocks as they were."""
    batch = blocks.batch(indices)
    ids = _on(batch.input_ids, device)
    attention = None if batch.attention_mask.all() else _on(batch.attention_mask, device)
    generator.manual_seed(seed)
    masked = masker(ids, _on(batch.word_ids, device), generator)
    return masked, attention, int(batch.attention_mask.sum()), batch


def _on(array: np.ndarray, device: torch.device) -> torch.Tensor:
    tensor = torch.from_numpy(array)
    if device.type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


@torch.no_grad()
def held_out_sums(
    model: torch.nn.Module,
    blocks: BlockSet,
    indices: np.ndarray,
    batch_size: int,
    masked_batch: Callable,
) -> tuple[float, ...]:
    """(summed loss, top-1 hits, top-5 hits, predicted positions) of the masked-LM over `blocks[indices]`, then
    for ELECTRA's objective the detection's DETECTION_SUMS and its flattened histogram (replacements drawn with
    a seed fixed per batch), in fp32 whatever the run trains in, so that the figures are those `evaluate` computes and
    compare across runs. `masked_batch(blocks, indices, seed)` masks a batch on the model's device."""
    was_training = model.training
    model.eval()
    electra = isinstance(model, ReplacedTokenDetection)
    sums = torch.zeros(4 + (len(DETECTION_SUMS) + 2 * AUC_BINS if electra else 0), dtype=torch.float64)
    sampler = torch.Generator(device=next(model.parameters()).device)
    for number, start in enumerate(range(0, len(indices), batch_size)):
        masked, attention, _ = masked_batch(blocks, indices[start : start + batch_size], EVAL_SEED + number)
        if electra:
            out = model(masked.input_ids, attention, masked.labels, sampler.manual_seed(EVAL_SEED + number))
        else:
            out = model(masked.input_ids, attention, masked.labels)
        if electra:
            sums[4:] += torch.cat([out.detection_sums(), out.detection_histogram().flatten()]).cpu().double()
        if len(out.labels) == 0:
            continue
        logits = out.logits.float()
        best = logits.topk(min(5, logits.shape[-1]), dim=-1).indices
        sums[0] += float(F.cross_entropy(logits, out.labels, reduction="sum"))
        sums[1] += float((best[:, 0] == out.labels).sum())
        sums[2] += float((best == out.labels[:, None]).any(-1).sum())
        sums[3] += len(out.labels)
    model.train(was_training)
    return tuple(sums.tolist())


def detection_scores(sums: list[float] | tuple[float, ...]) -> dict[str, float]:
    """The detection fields of an evaluation record from `held_out_sums`' values after the first four."""
    if not sums:
        return {}
    detection, histogram = sums[: len(DETECTION_SUMS)], torch.tensor(sums[len(DETECTION_SUMS) :])
    return {**detection_metrics(detection), "detection_auc": auc_from_histogram(histogram.view(2, AUC_BINS))}
