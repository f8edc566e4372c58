"""What each layer and head of a model attended to for a text: the attention probabilities each layer actually
used (ModernBERT's local layers with their window), and attention rollout (Abnar & Zuidema 2020) as one summary
of how much each position's output draws on each input piece through all the layers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.evaluation.explain.words import Words
from mlm_studio.core.models.encoder import recorded_attention


@dataclass(frozen=True)
class AttentionMaps:
    """`maps[layer, head, row, column]`: how much the piece of `row` attended to the piece of `column` (each row
    sums to 1, a local layer's zero outside its window)."""

    pieces: tuple[str, ...]
    maps: np.ndarray  # (layers, heads, L, L) float32

    @property
    def layers(self) -> int:
        return self.maps.shape[0]

    @property
    def heads(self) -> int:
        return self.maps.shape[1]

    def rollout(self) -> np.ndarray:
        """(L, L) attention rollout: each layer's heads averaged, the residual connection added as an identity
        (A + I) / 2, rows renormalised, and the layers multiplied from the first up."""
        length = self.maps.shape[-1]
        rolled = np.eye(length)
        for layer in self.maps.astype(np.float64):
            mixed = 0.5 * layer.mean(0) + 0.5 * np.eye(length)
            rolled = (mixed / mixed.sum(-1, keepdims=True)) @ rolled
        return rolled


def attention_maps(model: torch.nn.Module, tokenizer: MLMTokenizer, words: Words) -> AttentionMaps:
    """Every layer's and head's attention probabilities as the model computed them for `words`' pieces."""
    device = next(model.parameters()).device
    with torch.no_grad(), recorded_attention() as recorded:
        model.hidden(words.tensor.to(device))
    maps = torch.cat(recorded).float().cpu().numpy()  # (layers, heads, L, L): one text, batch size 1
    return AttentionMaps(tuple(tokenizer.convert_ids(words.ids)), maps)


def task_attention_maps(model: torch.nn.Module, tokenizer: MLMTokenizer, words: Words) -> AttentionMaps:
    """The same for a fine-tuned model (`TaskModel`), read with the segments of a pair or a question and its
    context where `words` has them."""
    device = next(model.parameters()).device
    types = getattr(words, "types", ())
    segments = torch.tensor([types], device=device) if types else None
    with torch.no_grad(), recorded_attention() as recorded:
        model(words.tensor.to(device), None, segments)
    maps = torch.cat(recorded).float().cpu().numpy()
    return AttentionMaps(tuple(tokenizer.convert_ids(words.ids)), maps)
