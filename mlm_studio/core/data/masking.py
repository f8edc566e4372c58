"""Masking for the MLM objective: one vectorised implementation for the preview and the trainer.

Each *unit* — a token, a whole word, or a span of whole words — is selected independently with probability
`rate`, so every selectable token is selected with probability exactly `rate`, whatever the strategy.
Special tokens and padding are never selected. A selected token becomes `[MASK]` (`mask_fraction`), a random
non-special token (`random_fraction`) or stays as it is (`keep_fraction`); its label is the original id,
and every other label is -100 (ignored by the loss).

Only words with a token that may be selected count as words. Spans follow SpanBERT: the words of a sequence
are tiled into spans whose lengths, in words, follow a geometric law with parameter `span_p` truncated to
`1..max_span` and renormalised; each span is selected as a whole and takes one treatment.

All work is on tensors on the input's device; there is no Python loop over positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import torch

from mlm_studio.core.config.sections import MaskingConfig
from mlm_studio.core.errors import UserError

IGNORE_INDEX = -100


class MaskKind(IntEnum):
    """What masking did to a token."""

    UNTOUCHED = 0
    MASK = 1  # replaced by [MASK]
    RANDOM = 2  # replaced by a random non-special token
    KEPT = 3  # selected for prediction but left unchanged


@dataclass(frozen=True)
class MaskedBatch:
    """The result of masking a batch of sequences."""

    input_ids: torch.Tensor  # (B, L) ids with replacements applied
    labels: torch.Tensor  # (B, L) original ids where selected, -100 elsewhere
    kinds: torch.Tensor  # (B, L) uint8 MaskKind
    spans: torch.Tensor  # (S, 4) row, first word, length in words, MaskKind of the selected spans (span strategy)


class Masker:
    """Applies a `MaskingConfig` to batches of token ids for one vocabulary, on one device."""

    def __init__(
        self,
        config: MaskingConfig,
        special_mask: np.ndarray | torch.Tensor,
        mask_id: int,
        device: torch.device | str = "cpu",
    ) -> None:
        """`special_mask`: (vocab_size,) bool, True for ids that are never selected nor drawn as random."""
        self.config = config
        self.device = torch.device(device)
        self.mask_id = int(mask_id)
        self.is_special = torch.as_tensor(np.asarray(special_mask, dtype=bool), device=self.device)  # (V,)
        self.candidates = (~self.is_special).nonzero().flatten()  # (V - n_special,)
        if len(self.candidates) == 0:
            raise UserError("the vocabulary has no non-special tokens to draw random replacements from")
        bounds = [-1.0, config.mask_fraction, config.mask_fraction + config.random_fraction]
        self.split_bounds = torch.tensor(bounds, device=self.device)
        self.span_probabilities = torch.as_tensor(
            config.span_length_probabilities(), dtype=torch.float, device=self.device
        )

    @classmethod
    def for_tokenizer(cls, config: MaskingConfig, tokenizer, device: torch.device | str = "cpu") -> Masker:
        return cls(config, tokenizer.special_mask(), tokenizer.mask_id, device)

    def __call__(
        self,
        input_ids: torch.Tensor,
        word_ids: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> MaskedBatch:
        """Mask `input_ids` (B, L); `word_ids` (B, L) numbers the words of each row (-1 outside words).

        Without `word_ids`, each token counts as a word. The generator must live on this masker's device.
        """
        cfg = self.config
        ids = input_ids.to(self.device)
        rows, length = ids.shape
        selectable = ~torch.take(self.is_special, ids)  # (B, L)
        spans = torch.zeros((0, 4), dtype=torch.long, device=self.device)
        if cfg.strategy == "token":
            # One uniform draw decides both: selected if u < rate, and then u / rate (uniform) picks the kind.
            split = self._draw(rows, length, generator)  # (B, L)
            selected = split < cfg.rate
            split = split / cfg.rate
        else:
            if word_ids is None:
                word_ids = torch.arange(length, device=self.device).expand(rows, length)
            words = torch.where(selectable, word_ids.to(self.device, torch.long), -1)
            if cfg.strategy == "whole_word":
                n_words = int(words.max()) + 1 if words.numel() else 0
                word_selected = self._draw(rows, max(n_words, 1), generator) < cfg.rate  # (B, W)
                split = self._draw(rows, length, generator)  # (B, L)
            else:
                words, n_words = _maskable_words(words)
                word_selected, word_split, spans = self._spans(words, n_words, generator)
                split = word_split.gather(1, words.clamp(min=0))  # SpanBERT: one treatment for a whole span
            selected = word_selected.gather(1, words.clamp(min=0)) & (words >= 0)  # (B, L)
        selected &= selectable

        # [MASK] below mask_fraction, random up to mask + random fraction, kept above: kinds 1, 2, 3.
        kinds = torch.where(selected, self._kind(split), 0).to(torch.uint8)
        draws = torch.randint(len(self.candidates), (rows, length), generator=generator, device=self.device)
        random_ids = torch.take(self.candidates, draws)  # (B, L)
        masked = torch.where(
            kinds == MaskKind.MASK, self.mask_id, torch.where(kinds == MaskKind.RANDOM, random_ids, ids)
        )
        labels = torch.where(selected, ids, IGNORE_INDEX)
        return MaskedBatch(masked, labels, kinds, spans)

    def achieved(self, input_ids: torch.Tensor, batch: MaskedBatch) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """What masking did to each row of `input_ids`: {name: (hits, trials)}, each (B,), for the selection
        (over tokens that may be selected) and the three-way split (over the selected tokens, or over the
        selected spans for span masking, whose treatment is drawn per span)."""
        kinds = batch.kinds.cpu()
        selectable = ~torch.take(self.is_special.cpu(), input_ids.cpu())
        selected = kinds != MaskKind.UNTOUCHED
        counts = {"selected": (selected.sum(1), selectable.sum(1))}
        if self.config.strategy == "span":
            rows, spans = len(kinds), batch.spans.cpu()
            trials = torch.bincount(spans[:, 0], minlength=rows)
            for name, kind in _SPLIT.items():
                counts[name] = (torch.bincount(spans[:, 0], weights=spans[:, 3] == kind, minlength=rows), trials)
        else:
            for name, kind in _SPLIT.items():
                counts[name] = ((kinds == kind).sum(1), selected.sum(1))
        return {name: (hits.long().numpy(), trials.long().numpy()) for name, (hits, trials) in counts.items()}

    def _draw(self, rows: int, columns: int, generator: torch.Generator | None) -> torch.Tensor:
        return torch.rand((rows, columns), generator=generator, device=self.device)

    def _kind(self, split: torch.Tensor) -> torch.Tensor:
        """MaskKind (as long) of each uniform draw in `split`."""
        return torch.bucketize(split, self.split_bounds, right=True)

    def _spans(
        self, words: torch.Tensor, n_words: int, generator: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Tile each row's words into spans of random length and select spans: (B, W) word selection, (B, W)
        one uniform draw per word, shared by the words of a span, that picks its treatment, and the selected
        spans (row, first word, length in words, MaskKind)."""
        rows = words.shape[0]
        draws = torch.multinomial(self.span_probabilities, rows * n_words, replacement=True, generator=generator)
        lengths = draws.view(rows, n_words) + 1  # (B, W) span lengths in words
        ends = lengths.cumsum(1)  # (B, W) one past the last word of each span
        word_index = torch.arange(n_words, device=self.device).expand(rows, n_words).contiguous()
        span_of_word = torch.searchsorted(ends, word_index, right=True)  # (B, W) in [0, W)
        span_selected = self._draw(rows, n_words, generator) < self.config.rate  # (B, W)
        span_split = self._draw(rows, n_words, generator)  # (B, W)
        word_selected = span_selected.gather(1, span_of_word)
        word_split = span_split.gather(1, span_of_word)

        words_in_row = (words.max(dim=1).values + 1).unsqueeze(1)  # (B, 1)
        starts = ends - lengths
        actual = torch.minimum(ends, words_in_row) - starts  # spans cut at the row's last word
        chosen = span_selected & (starts < words_in_row)
        row, index = chosen.nonzero(as_tuple=True)
        kind = self._kind(span_split[row, index])
        spans = torch.stack([row, starts[row, index], actual[row, index], kind], dim=1)
        return word_selected, word_split, spans


def _maskable_words(words: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The words of each row (-1 on tokens that may not be selected) renumbered 0, 1, … so that a word of
    [UNK] pieces, or a number the dataset gave a separator, takes none; and an upper bound of the words per row."""
    n_words = max(int(words.max()) + 1, 1)
    present = torch.zeros((words.shape[0], n_words + 1), dtype=torch.bool, device=words.device)
    present.scatter_(1, words + 1, True)
    numbers = present[:, 1:].cumsum(1) - 1  # (B, W) the new number of each word present
    return torch.where(words >= 0, numbers.gather(1, words.clamp(min=0)), -1), n_words


_SPLIT = {"mask": MaskKind.MASK, "random": MaskKind.RANDOM, "keep": MaskKind.KEPT}


def with_samples(
    input_ids: torch.Tensor, labels: torch.Tensor, logits: torch.Tensor, sampler: torch.Generator | None = None
) -> torch.Tensor:
    """`input_ids` with each labelled position holding a token drawn from the generator's `logits` there (one row
    per labelled position, in order): what the discriminator sees."""
    corrupted = input_ids.clone()
    if len(logits):
        samples = torch.multinomial(logits.detach().float().softmax(-1), 1, generator=sampler)
        corrupted[labels != IGNORE_INDEX] = samples[:, 0]
    return corrupted
