"""Fill-mask: the most likely tokens, with probabilities, for every `[MASK]` in a text."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import torch

from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.errors import UserError
from mlm_studio.core.evaluation.quantized import Int8Linear, int8_available, int8_copy
from mlm_studio.core.evaluation.subject import refuse_fine_tuned
from mlm_studio.core.models.build import build_trained, masked_lm_of
from mlm_studio.core.models.hf_folder import import_model, is_hf_folder, model_folder
from mlm_studio.core.models.replaced_tokens import ReplacedTokenDetection
from mlm_studio.core.runs.run_folder import RunDir, resolve_checkpoint
from mlm_studio.core.storage.checkpoint import listed, load_weights

MAX_MASKS = 32


class PredictError(UserError):
    """The text cannot be scored (no [MASK], too long); the message says what to change."""


@dataclass(frozen=True)
class Candidate:
    token: str  # as the vocabulary spells it (`##ing`, `Ġcopy`)
    token_id: int
    score: float
    text: str  # as it is written into text (`ing`, `copy`)
    continues: bool  # it joins the word before it instead of starting one


@dataclass(frozen=True)
class Filled:
    """The outcome of filling the masks one by one, most confident first."""

    text: str
    order: tuple[int, ...]  # which mask (by position in the text) was filled first, second, …
    candidates: tuple[tuple[Candidate, ...], ...]  # per mask, in text order, at the moment it was filled


class FillMask:
    """A model and its tokenizer, ready to score masks; it never trains. An ELECTRA model fills masks with its
    generator and has its discriminator as `detector`. `untrained_head`: the masked-LM head (or ELECTRA's
    generator) was made on import, not trained, so its predictions are random. `int8`: the masked-LM's linear
    layers hold int8 weights (`with_int8_weights`), so its scores are close to the exact model's, not equal."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: MLMTokenizer,
        source: str = "",
        detector: torch.nn.Module | None = None,
        untrained_head: bool = False,
        int8: bool = False,
    ) -> None:
        check_vocabulary(tokenizer, model.config, source)
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.source = source
        self.untrained_head = untrained_head
        self.int8 = int8
        self.device = next(model.parameters()).device
        self.detector = detector.eval() if detector is not None else None

    @torch.inference_mode()
    def replaced(self, text: str) -> list[tuple[str, float]]:
        """Each token of `text` (as written) with the detector's probability that it is not the original."""
        if self.detector is None:
            raise PredictError("This model has no replaced-token detector; only ELECTRA models have one.")
        ids, _ = self.tokenizer.encode_text(text)
        probabilities = torch.sigmoid(self.detector(self._checked_length(ids))[0].float())
        inner = range(1, len(ids) - 1)  # without [CLS] and [SEP]
        return [(self.tokenizer.backend.id_to_token(ids[i]), float(probabilities[i])) for i in inner]

    @classmethod
    def from_path(cls, path: str | Path, device: str = "cpu", int8: bool = False) -> FillMask:
        """Load from a run folder (its latest checkpoint), one checkpoint folder of a run, or a Hugging Face
        model's folder or cached Hub name. With `int8`, its int8 variant where `device` runs one (see its `int8`),
        else the exact model."""
        folder = model_folder(path)
        key = (str(folder.resolve()), device, _stamp(folder))
        return _int8_cached(*key) if int8 and int8_available(device) else _load_cached(*key)

    def with_int8_weights(self) -> FillMask:
        """This predictor with int8 copies of its masked-LM's linear layers (this one keeps its exact weights); itself
        where no layer has a width the int8 kernel takes, so that it never claims int8 weights it does not use."""
        model = int8_copy(self.model)
        if not any(isinstance(module, Int8Linear) for module in model.modules()):
            return self
        return FillMask(model, self.tokenizer, self.source, self.detector, self.untrained_head, int8=True)

    def encode(self, text: str) -> torch.Tensor:
        ids, _ = self.tokenizer.encode_text(text)  # [CLS] … [SEP] (<s> … </s>)
        masks = ids.count(self.tokenizer.mask_id)
        mask = self.tokenizer.specials.mask
        written = "[MASK]" if mask == "[MASK]" else f"[MASK] (or {mask})"
        if masks == 0:
            raise PredictError(f"The text has no {written}; write [MASK] where a word is missing.")
        if masks > MAX_MASKS:
            raise PredictError(f"The text has {masks} [MASK]s; at most {MAX_MASKS} are predicted at once.")
        return self._checked_length(ids)

    def _checked_length(self, ids: list[int]) -> torch.Tensor:
        """The ids as a (1, L) batch, refused when longer than the model reads."""
        limit = self.model.config.max_tokens()
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
        pieces = [self.tokenizer.piece_text(i) for i in ids.tolist()]
        return tuple(
            Candidate(self.tokenizer.id_to_token(i), int(i), float(s), *piece)
            for s, i, piece in zip(scores.tolist(), ids.tolist(), pieces)
        )

    def predict(self, text: str, top_k: int = 5) -> list[tuple[Candidate, ...]]:
        """Top-k candidates for each [MASK] in order, each mask scored with all the others still masked."""
        _check_top_k(top_k)
        _, probabilities = self._scores(self.encode(text))
        return [self._candidates(p, top_k) for p in probabilities]

    def as_pipeline(self, text: str, top_k: int = 5) -> list:
        """What `transformers`' `pipeline("fill-mask")` returns for `text`: for one mask a list of
        `{"score", "token", "token_str", "sequence"}`, for several a list of such lists (each sequence then
        keeps the special tokens and the other masks, as the pipeline's does)."""
        _check_top_k(top_k)
        ids = self.encode(text)
        positions, probabilities = self._scores(ids)
        single = len(positions) == 1
        decode = self.tokenizer.backend.decode
        rows = []
        for position, scores in zip(positions.tolist(), probabilities):
            row = []
            for candidate in self._candidates(scores, top_k):
                filled = ids[0].tolist()
                filled[position] = candidate.token_id
                row.append(
                    {
                        "score": candidate.score,
                        "token": candidate.token_id,
                        "token_str": decode([candidate.token_id]),
                        "sequence": decode(filled, skip_special_tokens=single),
                    }
                )
            rows.append(row)
        return rows[0] if single else rows

    def fill(self, text: str, top_k: int = 5) -> Filled:
        """Fill the most confident mask, then predict the rest again, until none is left. The text comes back
        as written, each [MASK] replaced by its word: words the vocabulary lacks are kept, not dropped."""
        _check_top_k(top_k)
        text = self.tokenizer.with_mask_token(text)
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
        return Filled(self._written_back(text, chosen), tuple(order), tuple(chosen[p] for p in sorted(chosen)))

    def _written_back(self, text: str, chosen: dict[int, tuple[Candidate, ...]]) -> str:
        """`text` with the mask at each token position replaced by the chosen piece; a piece that continues a
        word (`##ing`) joins the word before it."""
        _, offsets = self.tokenizer.encode_text(text)
        out, end = [], 0
        for position in sorted(chosen):
            start, stop = offsets[position]
            start += len(text[start:stop]) - len(text[start:stop].lstrip())  # a mask token may take the space before
            best = chosen[position][0]
            out.append(text[end:start].rstrip(" ") if best.continues else text[end:start])
            out.append(best.text)
            end = stop
        return "".join(out) + text[end:]


def check_vocabulary(tokenizer: MLMTokenizer, model: ModelConfig, source: str = "") -> None:
    """Refuse a tokenizer with more pieces than the model has embeddings: its last pieces would index past them."""
    if tokenizer.vocab_size > model.vocab_size:
        where = f"{source}: " if source else ""
        raise PredictError(
            f"{where}the tokenizer has {tokenizer.vocab_size:,} pieces but the model only {model.vocab_size:,}; this "
            "tokenizer is not the one the model was trained with"
        )


def _check_top_k(top_k: int) -> None:
    if top_k < 1:
        raise PredictError(f"top-k must be at least 1, not {top_k}")


def _stamp(path: Path) -> float:
    """Changes when a new checkpoint appears, so a cached model is reloaded."""
    try:
        checkpoints = path / "checkpoints"
        return max(path.stat().st_mtime, checkpoints.stat().st_mtime if checkpoints.exists() else 0.0)
    except OSError:
        return 0.0


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, device: str, stamp: float) -> FillMask:
    folder, run = Path(path), None
    if is_hf_folder(folder):
        imported = import_model(folder)
        untrained = imported.fresh_head
        note = " (untrained head: its predictions are random)" if untrained else ""
        model, tokenizer, source = imported.build_model(), imported.tokenizer, f"{folder.name} (Hugging Face){note}"
    else:
        run, checkpoint = resolve_checkpoint(folder)
        refuse_fine_tuned(run)
        model, tokenizer, source = build_trained(run.config), run.tokenizer, f"{run.name} / {checkpoint.name}"
        untrained = False
        load_weights(checkpoint, model)
    if run is not None:  # a Hugging Face folder's weights were checked as they were read
        _refuse_non_finite(model, run, source)
    model = model.to(device)
    detector = model.discriminator if isinstance(model, ReplacedTokenDetection) else None
    return FillMask(masked_lm_of(model), tokenizer, source, detector, untrained)


def _refuse_non_finite(model: torch.nn.Module, run: RunDir, source: str) -> None:
    broken = [name for name, value in model.state_dict().items() if not torch.isfinite(value).all()]
    if broken:
        finite = run.newest_finite_checkpoint()
        advice = (
            f"Use {finite}, the newest checkpoint with finite weights."
            if finite is not None
            else "No checkpoint of this run has finite weights."
        )
        raise PredictError(
            f"{source}: the weights hold values that are not finite numbers (in {listed(broken)}); "
            f"its predictions would be meaningless. {advice}"
        )


@functools.lru_cache(maxsize=4)
def _int8_cached(path: str, device: str, stamp: float) -> FillMask:
    return _load_cached(path, device, stamp).with_int8_weights()
