"""A fill-mask prediction as the Playground shows it: each mask's candidates, timed, from a checkpoint on disk (never
the weights being trained), and in iterative mode what each mask's candidates were predicted from."""

from __future__ import annotations

import time
from dataclasses import dataclass

from mlm_studio.core.evaluation.predict import Candidate, Filled, FillMask, PredictError
from mlm_studio.ui.panels.playground.masked_text import MASK


@dataclass(frozen=True)
class Context:
    """What one mask's candidates were predicted from in iterative mode: the pieces, the masks filled before it
    holding their first candidate, and the mask's position among them."""

    pieces: tuple[int, ...]
    position: int
    filled_before: tuple[int, ...]  # the masks (0: the first) filled before this one, in the order filled


@dataclass(frozen=True)
class Prediction:
    source: str
    masks: tuple[tuple[Candidate, ...], ...]
    filled: str | None  # the text with every mask filled (iterative mode)
    milliseconds: float
    replaced: tuple[tuple[str, float], ...] = ()  # an ELECTRA model's: each token, P(replaced)
    int8: bool = False  # scored with int8 weights, not the exact ones
    contexts: tuple[Context, ...] = ()  # iterative mode: per mask, what its candidates were predicted from
    text: str = ""  # the text predicted from


def predict(path: str, text: str, top_k: int, iterative: bool, int8: bool = False) -> Prediction:
    """Load (cached) and score, timing the scoring alone; with `int8`, int8 weights where the device runs them. An
    ELECTRA model also says, of each token, how likely its discriminator finds it replaced (with or without a
    [MASK] in the text)."""
    model = FillMask.from_path(path, int8=int8)
    if MASK not in text and model.detector is None:
        raise PredictError("Write [MASK] where a word is missing (or select a word and press Ctrl+M).")
    start = time.perf_counter()
    replaced = tuple(model.replaced(text)) if model.detector is not None else ()
    contexts: tuple[Context, ...] = ()
    if MASK not in text:
        masks, filled_text = (), None
    elif iterative:
        filled = model.fill(text, top_k)
        masks, contexts, filled_text = filled.candidates, contexts_of(model, text, filled), filled.text
    else:
        masks, filled_text = tuple(model.predict(text, top_k)), None
    milliseconds = (time.perf_counter() - start) * 1000
    return Prediction(model.source, masks, filled_text, milliseconds, replaced, model.int8, contexts, text)


def contexts_of(model: FillMask, text: str, filled: Filled) -> tuple[Context, ...]:
    """Per mask of `text` (in its order), the pieces `filled`'s candidates there were predicted from."""
    pieces = model.encode(model.tokenizer.with_mask_token(text))[0].tolist()
    positions = [position for position, piece in enumerate(pieces) if piece == model.tokenizer.mask_id]
    contexts = []
    for number, position in enumerate(positions):
        before = filled.order[: filled.order.index(number)]
        context = list(pieces)
        for earlier in before:
            context[positions[earlier]] = filled.candidates[earlier][0].token_id
        contexts.append(Context(tuple(context), position, before))
    return tuple(contexts)
