"""What the masking preview shows: a few masked samples token by token, and rates measured over many blocks.

It runs the trainer's own `Masker` on the trainer's own blocks, so what the user sees is what training does.
Each rate's 95% interval comes from the spread between blocks, which are masked independently of each other,
while the tokens of one word or span are not: a binomial interval over tokens would be too narrow for them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mlm_studio.core.data.dataset import BlockSet
from mlm_studio.core.data.masking import Masker, MaskKind, with_samples
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.progress import Progress

MEASURE_BATCH = 256


@dataclass(frozen=True)
class PreviewToken:
    """One position of a sample: the original piece, what the model sees, and what masking did."""

    original: str
    shown: str
    kind: MaskKind
    special: bool
    generated: str | None = None  # ELECTRA: the generator's sample here (selected positions), what the
    # discriminator sees; equal to `original` counts as original


@dataclass(frozen=True)
class MeasuredRate:
    """A share measured over blocks: `hits` of `trials`, and its 95% interval."""

    hits: int
    trials: int
    low: float
    high: float

    @property
    def share(self) -> float:
        return self.hits / self.trials if self.trials else 0.0


def measured_rate(hits: np.ndarray, trials: np.ndarray, z: float = 1.96) -> MeasuredRate:
    """The share sum(hits) / sum(trials) of per-block counts and its interval (95% by default), from the spread
    of the blocks' counts around it (the ratio estimator's variance: blocks are independent, tokens need not be)."""
    total, blocks = int(trials.sum()), len(trials)
    if total == 0 or blocks < 2:
        return MeasuredRate(int(hits.sum()), total, 0.0, 1.0)
    share = hits.sum() / total
    residuals = hits - share * trials
    half = z * np.sqrt(blocks / (blocks - 1) * np.sum(residuals**2)) / total
    return MeasuredRate(int(hits.sum()), total, float(max(0.0, share - half)), float(min(1.0, share + half)))


@dataclass(frozen=True)
class MaskingPreview:
    samples: tuple[tuple[PreviewToken, ...], ...]
    rates: dict[str, MeasuredRate]  # "selected", "mask", "random", "keep": see `Masker.achieved`
    span_lengths: np.ndarray  # (max_span,) how many selected spans had 1..max_span words
    blocks_measured: int


def masking_preview(
    blocks: BlockSet,
    tokenizer: MLMTokenizer,
    masker: Masker,
    seed: int,
    samples: int = 4,
    measure: int = 1000,
    progress: Progress | None = None,
    generator: torch.nn.Module | None = None,
) -> MaskingPreview:
    """Mask `samples` blocks for display and `measure` blocks for statistics, all chosen by `seed`; with an
    ELECTRA `generator`, the samples also show its replacements of the selected tokens."""
    progress = progress or Progress()
    rng = np.random.default_rng(seed)
    random = torch.Generator(device=masker.device).manual_seed(seed)
    shown = rng.choice(len(blocks), size=min(samples, len(blocks)), replace=False)
    batch = blocks.batch(np.sort(shown))
    masked = masker(torch.from_numpy(batch.input_ids), torch.from_numpy(batch.word_ids), random)
    generated = _generated(generator, masked, batch.attention_mask, seed) if generator is not None else None
    rows = tuple(
        preview_row(
            tokenizer,
            batch.input_ids[r],
            masked.input_ids[r].cpu().numpy(),
            masked.kinds[r].cpu().numpy(),
            batch.attention_mask[r],
            None if generated is None else generated[r],
        )
        for r in range(len(shown))
    )

    measured = rng.choice(len(blocks), size=min(measure, len(blocks)), replace=False)
    per_block: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    span_counts = np.zeros(masker.config.max_span, dtype=np.int64)
    for start in range(0, len(measured), MEASURE_BATCH):
        progress.check()
        progress.report(start, len(measured), "Measuring masking rates")
        part = blocks.batch(measured[start : start + MEASURE_BATCH])
        ids = torch.from_numpy(part.input_ids)
        result = masker(ids, torch.from_numpy(part.word_ids), random)
        for name, counts in masker.achieved(ids, result).items():
            per_block.setdefault(name, []).append(counts)
        span_counts += np.bincount(result.spans[:, 2].cpu().numpy(), minlength=len(span_counts) + 1)[1:]
    rates = {
        name: measured_rate(np.concatenate([h for h, _ in parts]), np.concatenate([t for _, t in parts]))
        for name, parts in per_block.items()
    }
    return MaskingPreview(rows, rates, span_counts, len(measured))


@torch.no_grad()
def _generated(generator: torch.nn.Module, masked, attention: np.ndarray, seed: int) -> np.ndarray:
    """The ids the discriminator would see: the generator's samples at the selected positions (as in training,
    drawn from its predicted distribution), the originals elsewhere; -1 past the positions the model reads."""
    device = next(generator.parameters()).device
    length = min(masked.input_ids.shape[1], generator.config.max_tokens())
    ids, labels = masked.input_ids[:, :length].to(device), masked.labels[:, :length].to(device)
    mask = None if attention[:, :length].all() else torch.from_numpy(attention[:, :length]).to(device)
    out = generator.eval()(ids, mask, labels)
    corrupted = torch.full(masked.input_ids.shape, -1, dtype=torch.long, device=device)
    corrupted[:, :length] = with_samples(ids, labels, out.logits, torch.Generator(device=device).manual_seed(seed))
    return corrupted.cpu().numpy()


def preview_row(
    tokenizer: MLMTokenizer, original, masked, kinds, attention, generated=None
) -> tuple[PreviewToken, ...]:
    """One block's tokens as shown, up to its padding (which the model does not read)."""
    specials = set(tokenizer.special_ids)
    return tuple(
        PreviewToken(
            original=tokenizer.id_to_token(original[i]),
            shown=tokenizer.id_to_token(masked[i]),
            kind=MaskKind(int(kinds[i])),
            special=int(original[i]) in specials,
            generated=tokenizer.id_to_token(generated[i])
            if generated is not None and kinds[i] and generated[i] >= 0
            else None,
        )
        for i in range(len(original))
        if attention[i]
    )
