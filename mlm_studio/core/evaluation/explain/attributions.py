"""Why a masked-LM predicted a candidate at a `[MASK]`: each word's attribution to that candidate's logit
(gradient × input, integrated gradients) or probability (occlusion), signed, per word (its pieces summed)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.errors import UserError
from mlm_studio.core.evaluation.explain.choices import BASELINES, DEFAULT_METHOD, DEFAULT_STEPS, MAX_STEPS, METHODS
from mlm_studio.core.evaluation.explain.methods import Outputs, gradient_x_input, integrated_gradients, occlusion
from mlm_studio.core.evaluation.explain.words import Words, words_of, words_of_pieces
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.shown import shown

COMPLETE_WITHIN = 0.01  # a sum of attributions further than this share from the logit's change is said to miss it
TINY_GAP = 1e-2  # logits: a smaller change is compared as this much (float32 cannot resolve a share of it)
# the least a word's full colour stands for, by unit: a logit moved by 1 multiplies the odds by e; a probability
# moved by 0.1 is ten points. A prediction nothing carried is then drawn pale, not scaled up to its own noise.
SMALLEST_SCALE = {"logit": 1.0, "probability": 0.1}
FAINT = 0.1  # a word that moved the prediction by less than this share of the scale is drawn too pale to read


class ExplainError(UserError):
    """A prediction cannot be explained as asked (no [MASK], too long, an unknown candidate…); says what to do."""


class OutputNotFinite(ExplainError):
    """A model whose weights are finite numbers but whose output at the position explained is not."""


@dataclass(frozen=True)
class Attribution:
    """Each word's share in one prediction. `scores` are signed, in `unit`s (positive: the word supported the
    candidate); `shares` puts them on the scale of what they explain, for display. Integrated gradients also give
    `total` (the scores' sum) and `gap` (the logit at the input minus at the baseline), which completeness says
    are equal."""

    method: str
    unit: str  # "logit" or "probability"
    text: str  # as the model read it (a typed [MASK] as its mask token); `spans` index it
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    scores: tuple[float, ...]
    mask: int  # which [MASK] of the text, 0 for the first (a tagger's: which word)
    candidate: str
    candidate_id: int
    probability: float  # the candidate's probability at that mask
    source: str = ""  # the model explained
    steps: int | None = None
    baseline: str | None = None
    total: float | None = None
    gap: float | None = None
    target: str = ""  # what was explained, in words ("at [MASK] 1", "of the text", "the answer …")

    def completeness_error(self) -> float | None:
        """How far the scores' sum misses the logit's change, as a share of that change (integrated gradients
        alone; None for the other methods)."""
        if self.total is None or self.gap is None:
            return None
        return abs(self.total - self.gap) / max(abs(self.gap), TINY_GAP)

    def ranked(self) -> list[int]:
        """The words' numbers, most supporting first."""
        return sorted(range(len(self.scores)), key=lambda number: -self.scores[number])

    def explained(self) -> float:
        """The size of what the words explain: the logit's change from the baseline (integrated gradients), the
        scores' sum (gradient × input's account of the logit), the candidate's probability (occlusion: the most
        that hiding a word can take away)."""
        if self.gap is not None:
            return abs(self.gap)
        return self.probability if self.unit == "probability" else abs(sum(self.scores))

    def scale(self) -> float:
        """The score a word's full colour stands for: what the words explain, and at least the unit's
        `SMALLEST_SCALE`, so that a prediction nothing moved reads as pale, whatever its own largest score."""
        return max(self.explained(), SMALLEST_SCALE[self.unit])

    def shares(self, scale: float | None = None) -> tuple[float, ...]:
        """Each score as a share of `scale` (by default its own `scale()`), in [-1, 1]."""
        scale = scale or self.scale()
        return tuple(max(-1.0, min(1.0, score / scale)) for score in self.scores)

    def largest(self) -> float:
        """The largest magnitude among the scores (0 for no word)."""
        return max((abs(score) for score in self.scores), default=0.0)

    def carried(self, scale: float | None = None) -> bool:
        """Whether some word moved the prediction by at least `FAINT` of the scale: drawn strongly enough to read."""
        return self.largest() >= FAINT * (scale or self.scale())

    def uncarried(self, scale: float | None = None) -> str:
        """When no word carried the prediction, that in words ("no word moved this prediction by more than
        0.000284 logits"); "" when one did."""
        if self.carried(scale):
            return ""
        return f"no word moved this prediction by more than {amount(self.largest(), self.unit)}"

    def as_json(self) -> dict:
        values = asdict(self)
        values["words"] = [
            {"word": word, "start": start, "end": end, "score": score, "share": share}
            for word, (start, end), score, share in zip(self.words, self.spans, self.scores, self.shares())
        ]
        del values["spans"], values["scores"]
        values.update(scale=self.scale(), carried=self.carried())
        return values


class Explainer:
    """A masked-LM and its tokenizer, ready to explain its predictions. It puts the model in eval mode (dropout
    off), and leaves it there; it never changes its weights."""

    def __init__(self, model: torch.nn.Module, tokenizer: MLMTokenizer, source: str = "") -> None:
        broken = [name for name, value in model.named_parameters() if not torch.isfinite(value).all()]
        if broken:
            raise ExplainError(
                f"{source or 'the model'}: its weights hold values that are not finite numbers (in "
                f"{shown(broken[0])}); an explanation of its predictions would be meaningless"
            )
        self.model = model.eval()  # dropout off: an explanation is of the model's prediction, not of a draw
        self.tokenizer = tokenizer
        self.source = source
        self.device = next(model.parameters()).device
        self.check: Callable[[], None] = lambda: None  # called between integrated gradients' batches: raises to stop

    @classmethod
    def of(cls, predictor: FillMask) -> Explainer:
        """The explainer of a fill-mask predictor's exact model (an ELECTRA run's generator: the discriminator
        predicts no word, it only tells which tokens were replaced)."""
        if predictor.int8:
            raise ExplainError(f"{predictor.source}: its int8 weights have no gradients; explain its exact model")
        source = f"{predictor.source}, its generator" if predictor.detector is not None else predictor.source
        return cls(predictor.model, predictor.tokenizer, source)

    def read(self, text: str) -> Words:
        """The text's pieces and words, refused when longer than the model reads."""
        words = words_of(self.tokenizer, text)
        limit = self.model.config.max_tokens()
        if len(words.ids) > limit:
            raise ExplainError(f"The text is {len(words.ids)} tokens long; this model reads at most {limit}.")
        return words

    def mask_positions(self, words: Words) -> list[int]:
        return [position for position, piece in enumerate(words.ids) if piece == self.tokenizer.mask_id]

    def explain(
        self,
        text: str,
        candidate: int | str | None = None,
        mask: int = 0,
        method: str = DEFAULT_METHOD,
        steps: int = DEFAULT_STEPS,
        baseline: str = "mask",
    ) -> Attribution:
        """Attribute the prediction of `candidate` (a piece's id or its spelling in the vocabulary; by default the
        most likely) at the `mask`-th [MASK] of `text` (0: the first) to the text's words. The other masks stay
        masks; they are words like the others."""
        check_choices(method, steps, baseline)
        words = self.read(text)
        masks = self.mask_positions(words)
        if not masks:
            raise ExplainError("The text has no [MASK]; write [MASK] where the word to explain is missing.")
        if not 0 <= mask < len(masks):
            raise ExplainError(f"The text has {len(masks)} [MASK]s; there is no mask number {mask + 1} to explain.")
        return self._attribute(words, masks[mask], mask, candidate, method, steps, baseline)

    def explain_pieces(
        self,
        ids: Sequence[int],
        position: int,
        candidate: int | str | None = None,
        method: str = DEFAULT_METHOD,
        steps: int = DEFAULT_STEPS,
        baseline: str = "mask",
        mask: int = 0,
    ) -> Attribution:
        """The same for the prediction at piece `position` of a block of pieces ([CLS] … [SEP], padding after it
        left out) as the model was shown it: a held-out block's [MASK], random or kept token; `mask` numbers it."""
        check_choices(method, steps, baseline)
        words = self.read_pieces(ids)
        if not 0 <= position < len(words.ids):
            raise ExplainError(f"the block has {len(words.ids)} pieces; there is no piece {position} to explain")
        return self._attribute(words, position, mask, candidate, method, steps, baseline)

    def read_pieces(self, ids: Sequence[int]) -> Words:
        """A block's pieces (the padding after them left out) and their words, refused when longer than the
        model reads."""
        pieces = [int(piece) for piece in ids]
        while pieces and pieces[-1] == self.tokenizer.pad_id:
            pieces.pop()
        limit = self.model.config.max_tokens()
        if len(pieces) > limit:
            raise ExplainError(f"The block is {len(pieces)} tokens long; this model reads at most {limit}.")
        return words_of_pieces(self.tokenizer, pieces)

    def _attribute(
        self,
        words: Words,
        where: int,
        mask: int,
        candidate: int | str | None,
        method: str,
        steps: int,
        baseline: str,
        outputs: Outputs | None = None,
    ) -> Attribution:
        """`outputs`: how the model's logits are read (by default `_outputs`)."""
        outputs = outputs or self._outputs
        ids = words.tensor.to(self.device)
        with torch.no_grad():
            probabilities = outputs(ids, None, torch.tensor([where], device=self.device)).float().softmax(-1)[0]
        if not torch.isfinite(probabilities).all():
            raise OutputNotFinite(
                f"{self.source or 'the model'}: its output at this position is not a finite number (its finite "
                "weights overflow), so no word's share of it can be told"
            )
        label = int(probabilities.argmax()) if candidate is None else self._candidate_id(candidate)
        common = dict(
            text=words.text, words=words.texts, spans=words.spans, mask=mask, candidate_id=label,
            candidate=self._label_name(label), probability=float(probabilities[label]), source=self.source,
            target=self._target(words, mask),
        )  # fmt: skip
        name, unit = method, METHODS[method][1]
        if method == "gradxinput" and self.model.config.family == "modernbert":
            raise ExplainError(
                "gradient × input is zero for every word of a ModernBERT model (it normalises each word's embedding "
                "alone, which ignores its scale); use ig or occlusion"
            )
        if method == "gradxinput":
            pieces = gradient_x_input(self.model, outputs, ids, where, label)
            return Attribution(name, unit, scores=_floats(words.per_word(pieces)), **common)
        if method == "ig":
            start = self._baseline_ids(words, baseline).to(self.device)
            pieces, gap = integrated_gradients(self.model, outputs, ids, start, where, label, steps, self.check)
            scores, total = _floats(words.per_word(pieces)), float(pieces.sum())
            return Attribution(name, unit, scores=scores, steps=steps, baseline=baseline, total=total, gap=gap,
                               **common)  # fmt: skip
        own = words.word_of[where]
        groups = [words.pieces_of(word) if word != own else [] for word in range(len(words.texts))]
        changes = occlusion(outputs, ids, groups, where, label)
        return Attribution(name, unit, scores=_floats(changes), **common)

    def _outputs(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, where: torch.Tensor) -> torch.Tensor:
        """(B, V) logits at each row's piece `where` (the last layer runs there alone)."""
        keep = torch.zeros(ids.shape, dtype=torch.bool, device=ids.device)
        keep[torch.arange(len(ids), device=ids.device), where] = True
        return self.model.logits(self.model.hidden(ids, attention_mask, keep=keep))

    def _target(self, words: Words, mask: int) -> str:
        return f"at [MASK] {mask + 1}"

    def _label_name(self, label: int) -> str:
        return self.tokenizer.id_to_token(label)

    def _candidate_id(self, candidate: int | str) -> int:
        if isinstance(candidate, str):
            found = self.tokenizer.backend.token_to_id(candidate)
            if found is None:
                raise ExplainError(f"{shown(candidate)} is not a piece of this model's vocabulary; give one it has.")
            return found
        if not 0 <= candidate < self.model.config.vocab_size:
            raise ExplainError(f"{candidate} is not a piece's id; this model has {self.model.config.vocab_size:,}.")
        return int(candidate)

    def _baseline_ids(self, words: Words, baseline: str) -> torch.Tensor:
        """The text with every word's pieces replaced by the mask token (or padding), a word read as the unknown
        piece too; the other special tokens (typed [CLS], [SEP] or [PAD] among them) and the masks are kept, so
        they get no attribution."""
        replacement = self.tokenizer.mask_id if baseline == "mask" else self.tokenizer.pad_id
        specials = set(self.tokenizer.special_ids) - {self.tokenizer.unk_id}
        return torch.tensor([[piece if piece in specials else replacement for piece in words.ids]])


def check_choices(method: str, steps: int, baseline: str) -> None:
    if method not in METHODS:
        raise ExplainError(f"unknown method {shown(method)}; choose one of {', '.join(METHODS)}")
    if not 1 <= steps <= MAX_STEPS:
        raise ExplainError(f"integrated gradients take 1 to {MAX_STEPS} steps, not {steps}")
    if baseline not in BASELINES:
        raise ExplainError(f"unknown baseline {shown(baseline)}; choose one of {', '.join(BASELINES)}")


def amount(value: float, unit: str) -> str:
    """A score and its unit, to three significant figures whatever its size: "0.000123 logits", "1 logit",
    "0.25 in probability"."""
    if unit == "probability":
        return f"{value:.3g} in probability"
    return f"{value:.3g} {unit}{'' if value == 1 else 's'}"


def _floats(values: np.ndarray) -> tuple[float, ...]:
    return tuple(float(v) for v in values)
