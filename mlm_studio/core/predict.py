"""Fill-mask: the most likely tokens, with probabilities, for every `[MASK]` in a text."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import torch

from mlm_studio.core.checkpoint import load_weights, resolve_checkpoint
from mlm_studio.core.hf import import_model, is_hf_folder
from mlm_studio.core.model import BertForMaskedLM
from mlm_studio.core.tokenizer import MLMTokenizer

MAX_MASKS = 32


class PredictError(ValueError):
    """The text cannot be scored (no [MASK], too long); the message says what to change."""


@dataclass(frozen=True)
class Candidate:
    token: str
    token_id: int
    score: float


@dataclass(frozen=True)
class Filled:
    """The outcome of filling the masks one by one, most confident first."""

    text: str
    order: tuple[int, ...]  # which mask (by position in the text) was filled first, second, …
    candidates: tuple[tuple[Candidate, ...], ...]  # per mask, in text order, at the moment it was filled


class FillMask:
    """A model and its tokenizer, ready to score masks; it never trains."""

    def __init__(self, model: BertForMaskedLM, tokenizer: MLMTokenizer, source: str = "") -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.source = source
        self.device = next(model.parameters()).device

    @classmethod
    def from_path(cls, path: str | Path, device: str = "cpu") -> FillMask:
        """Load from a run folder (its latest checkpoint), one checkpoint folder of a run, or a Hugging Face
        BERT folder."""
        return _load_cached(str(Path(path).resolve()), device, _stamp(Path(path)))

    def encode(self, text: str) -> torch.Tensor:
        ids = self.tokenizer.backend.encode(text).ids  # [CLS] … [SEP]
        masks = ids.count(self.tokenizer.mask_id)
        if masks == 0:
            raise PredictError("The text has no [MASK]; write [MASK] where a word is missing.")
        if masks > MAX_MASKS:
            raise PredictError(f"The text has {masks} [MASK]s; at most {MAX_MASKS} are predicted at once.")
        limit = self.model.config.max_position_embeddings
        if len(ids) > limit:
            raise PredictError(f"The text is {len(ids)} tokens long; this model reads at most {limit}.")
        return torch.tensor([ids], device=self.device)

    @torch.inference_mode()
    def _scores(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positions = (ids[0] == self.tokenizer.mask_id).nonzero().flatten()  # (M,)
        rows = torch.zeros_like(positions)
        logits = self.model.predict_at(ids, torch.stack([rows, positions], dim=1))  # (M, V)
        return positions, logits.float().softmax(-1)

    def _candidates(self, probabilities: torch.Tensor, top_k: int) -> tuple[Candidate, ...]:
        scores, ids = probabilities.topk(min(top_k, probabilities.shape[-1]))
        return tuple(
            Candidate(self.tokenizer.id_to_token(i), int(i), float(s)) for s, i in zip(scores.tolist(), ids.tolist())
        )

    def predict(self, text: str, top_k: int = 5) -> list[tuple[Candidate, ...]]:
        """Top-k candidates for each [MASK] in order, each mask scored with all the others still masked."""
        _, probabilities = self._scores(self.encode(text))
        return [self._candidates(p, top_k) for p in probabilities]

    def fill(self, text: str, top_k: int = 5) -> Filled:
        """Fill the most confident mask, then predict the rest again, until none is left."""
        ids = self.encode(text)
        positions, _ = self._scores(ids)
        order_of = {int(p): i for i, p in enumerate(positions)}
        chosen: dict[int, tuple[Candidate, ...]] = {}
        order = []
        while True:
            left, probabilities = self._scores(ids)
            if len(left) == 0:
                break
            best = int(probabilities.max(-1).values.argmax())
            position = int(left[best])
            chosen[position] = self._candidates(probabilities[best], top_k)
            order.append(order_of[position])
            ids[0, position] = chosen[position][0].token_id
        words = self.tokenizer.backend.decode(ids[0].tolist(), skip_special_tokens=True)
        return Filled(words, tuple(order), tuple(chosen[p] for p in sorted(chosen)))


def _stamp(path: Path) -> float:
    """Changes when a new checkpoint appears, so a cached model is reloaded."""
    try:
        checkpoints = path / "checkpoints"
        return max(path.stat().st_mtime, checkpoints.stat().st_mtime if checkpoints.exists() else 0.0)
    except OSError:
        return 0.0


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, device: str, stamp: float) -> FillMask:
    folder = Path(path)
    if is_hf_folder(folder):
        imported = import_model(folder)
        note = " (untrained head)" if imported.fresh_head else ""
        return FillMask(imported.build_model().to(device), imported.tokenizer, f"{folder.name} (Hugging Face){note}")
    run, checkpoint = resolve_checkpoint(folder)
    model = BertForMaskedLM(run.config.model)
    load_weights(checkpoint, model)
    return FillMask(model.to(device), run.tokenizer, f"{run.name} / {checkpoint.name}")
