"""The checks that say whether attributions show the model (the tests and `benchmarks/bench_explain.py` run them):
integrated gradients' completeness, the model-randomisation test of Adebayo et al. ("Sanity Checks for Saliency
Maps", 2018) and the agreement of occlusion with integrated gradients."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch import nn

from mlm_studio.core.evaluation.explain.attributions import Explainer
from mlm_studio.core.evaluation.explain.methods import word_embeddings
from mlm_studio.core.models.encoder import layers_of


def completeness_errors(explainer: Explainer, texts: Sequence[str], steps: int) -> np.ndarray:
    """For each text's first mask, how far the integrated gradients' sum is from the logit at the input
    minus at the baseline, as a share of that difference."""
    errors = []
    for text in texts:
        explained = explainer.explain(text, method="ig", steps=steps)
        errors.append(abs(explained.total - explained.gap) / max(abs(explained.gap), 1e-12))
    return np.asarray(errors)


def occlusion_agreement(explainer: Explainer, texts: Sequence[str], top: int = 3) -> float:
    """The share of texts where the word whose removal lowers the predicted word's probability most is among the
    `top` words integrated gradients attribute most to it."""
    agree = 0
    for text in texts:
        explained = explainer.explain(text, method="ig")
        occluded = explainer.explain(text, method="occlusion", candidate=explained.candidate_id)
        agree += int(np.argmax(occluded.scores)) in explained.ranked()[:top]
    return agree / len(texts)


def cascading_randomisation(model: nn.Module, seed: int = 0) -> Iterator[str]:
    """Re-initialise `model` in place a part at a time from the top: the masked-LM head, each layer downwards,
    then the embeddings; yields each part's name once it is random. The head's decoder shares the word
    embeddings' matrix, which is kept until the embeddings' turn."""
    generator = torch.Generator().manual_seed(seed)
    std = model.config.initializer_range
    layers = layers_of(model)
    encoder = next(child for child in model.children() if any(m is layers for m in child.modules()))
    embeddings = word_embeddings(model)
    embeddings_part = next(m for name, m in encoder.named_children() if name == "embeddings")
    parts = [("head", [m for m in model.children() if m is not encoder])]
    parts += [(f"layer {number}", [layers[number - 1]]) for number in range(len(layers), 0, -1)]
    parts.append(("embeddings", [embeddings_part]))
    for name, modules in parts:
        kept = set() if name == "embeddings" else {id(embeddings.weight)}
        with torch.no_grad():
            for module in modules:
                for parameter_name, parameter in module.named_parameters():
                    if id(parameter) in kept:
                        continue
                    if parameter.ndim >= 2:
                        parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
                    else:
                        scale = "norm" in parameter_name.lower() and parameter_name.endswith("weight")
                        parameter.fill_(1.0 if scale else 0.0)
        yield name


def rank_correlation(first: Sequence[float], second: Sequence[float]) -> float:
    """Spearman's rank correlation of two equally long lists of scores (ties ranked by position; 0 where either
    list is constant)."""
    if len(first) < 2 or np.ptp(first) == 0 or np.ptp(second) == 0:
        return 0.0
    ranks = [np.argsort(np.argsort(np.asarray(values))) for values in (first, second)]
    return float(np.corrcoef(ranks[0], ranks[1])[0, 1])
