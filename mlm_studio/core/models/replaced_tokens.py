"""ELECTRA's objective, replaced-token detection: a small masked-LM (the generator) fills the masked positions with
tokens sampled from its predictions, and the model being trained (the discriminator) learns to tell, at every
position, whether its token is the original or a replacement. A sampled token equal to the original counts as
original. Both learn together from one loss: the generator's masked-LM loss plus `detection_weight` times the
discriminator's binary cross-entropy over all real tokens. They share one embeddings module (words, positions,
segments and its LayerNorm), as in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mlm_studio.core.config.sections import ModelConfig, generator_config
from mlm_studio.core.data.masking import IGNORE_INDEX, with_samples
from mlm_studio.core.models.electra import ElectraForMaskedLM, ElectraForPreTraining
from mlm_studio.core.models.encoder import MLMOutput

AUC_BINS = 2048  # the detection AUC is computed from histograms of the logits' sigmoid this fine
DETECTION_SUMS = ("loss_sum", "positions", "correct", "replaced", "flagged", "caught")


@dataclass
class ElectraOutput(MLMOutput):
    generator_loss: torch.Tensor  # the generator's masked-LM loss (`loss` is the weighted sum of both)
    detection_logits: torch.Tensor  # (M,) the discriminator's logits of "replaced" at the real tokens
    replaced: torch.Tensor  # (M,) bool: whether each of those tokens differs from the original
    corrupted: torch.Tensor  # (B, L) the ids the discriminator read: the generator's samples where masked

    @property
    def masked_lm_loss(self) -> torch.Tensor:
        return self.generator_loss

    def detection_sums(self) -> torch.Tensor:
        """(6,) float sums, in DETECTION_SUMS order: binary cross-entropy, positions, right calls, replaced
        tokens, tokens flagged as replaced, replaced tokens flagged."""
        logits, replaced = self.detection_logits.detach().float(), self.replaced
        flagged = logits > 0
        loss_sum = F.binary_cross_entropy_with_logits(logits, replaced.float(), reduction="sum")
        counts = [(flagged == replaced).sum(), replaced.sum(), flagged.sum(), (flagged & replaced).sum()]
        return torch.stack([loss_sum, torch.tensor(float(len(logits)), device=logits.device), *counts]).float()

    def detection_histogram(self) -> torch.Tensor:
        """(2, AUC_BINS) counts of the "replaced" probability of original (row 0) and replaced (row 1) tokens."""
        probability = torch.sigmoid(self.detection_logits.detach().float())
        bins = (probability * AUC_BINS).long().clamp_(0, AUC_BINS - 1) + AUC_BINS * self.replaced.long()
        return torch.bincount(bins, minlength=2 * AUC_BINS).view(2, AUC_BINS).float()


class ReplacedTokenDetection(nn.Module):
    """A discriminator of `config` and its generator, `generator_size` times as wide, trained together."""

    def __init__(self, config: ModelConfig, generator_size: float, detection_weight: float) -> None:
        super().__init__()
        self.config = config
        self.detection_weight = detection_weight
        self.discriminator = ElectraForPreTraining(config)
        self.generator = ElectraForMaskedLM(generator_config(config, generator_size))
        shared = self.discriminator.electra.embeddings
        self.generator.electra.embeddings = shared
        self.generator.generator_lm_head.weight = shared.word_embeddings.weight

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        labels: torch.Tensor,
        sampler: torch.Generator | None = None,
    ) -> ElectraOutput:
        """`input_ids` masked, `labels` the originals where masked (IGNORE_INDEX elsewhere); replacements are
        drawn with `sampler` (the global generator when None)."""
        generated = self.generator(input_ids, attention_mask, labels)
        selected = labels != IGNORE_INDEX
        corrupted = with_samples(input_ids, labels, generated.logits, sampler)
        replaced = selected & (corrupted != labels)
        logits = self.discriminator(corrupted, attention_mask)
        real = attention_mask.bool() if attention_mask is not None else torch.ones_like(selected)
        logits, replaced = logits[real], replaced[real]
        detection_loss = F.binary_cross_entropy_with_logits(logits.float(), replaced.float())
        return ElectraOutput(
            loss=generated.loss + self.detection_weight * detection_loss,
            logits=generated.logits,
            labels=generated.labels,
            top=generated.top,
            generator_loss=generated.loss,
            detection_logits=logits,
            replaced=replaced,
            corrupted=corrupted,
        )


@torch.no_grad()
def detection_metrics(sums: list[float] | tuple[float, ...]) -> dict[str, float]:
    """Mean loss, accuracy, precision and recall on replaced tokens from DETECTION_SUMS (NaN where undefined)."""
    loss_sum, positions, correct, replaced, flagged, caught = sums
    nan = float("nan")
    return {
        "detection_loss": loss_sum / positions if positions else nan,
        "detection_accuracy": correct / positions if positions else nan,
        "detection_precision": caught / flagged if flagged else nan,
        "detection_recall": caught / replaced if replaced else nan,
    }


def auc_from_histogram(histogram: torch.Tensor) -> float:
    """The area under the ROC curve from `detection_histogram` counts: the chance that a replaced token scores
    above an original one, ties (the same bin) counting half. NaN without both kinds."""
    originals, replaced = histogram[0].double(), histogram[1].double()
    if originals.sum() == 0 or replaced.sum() == 0:
        return float("nan")
    below = torch.cumsum(originals, 0) - originals  # originals in lower bins
    wins = (replaced * (below + 0.5 * originals)).sum()
    return float(wins / (originals.sum() * replaced.sum()))
