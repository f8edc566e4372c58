"""The Playground's sentence as the user edits it, without Qt: a word masked where the cursor is, and a mask
filled with a candidate."""

from __future__ import annotations

import re

from mlm_studio.core.evaluation.predict import Candidate

MASK = "[MASK]"
WORD = re.compile(r"[\w'-]+")


def word_at(text: str, cursor: int) -> tuple[int, int] | None:
    """(start, length) of the word `cursor` is in or touches; None between words."""
    match = next((m for m in WORD.finditer(text) if m.start() <= cursor <= m.end()), None)
    return None if match is None else (match.start(), match.end() - match.start())


def with_mask(text: str, start: int, length: int) -> tuple[str, int]:
    """`text` with its `length` characters from `start` replaced by [MASK], and the cursor just after the mask."""
    return text[:start] + MASK + text[start + length :], start + len(MASK)


def with_candidate(text: str, number: int, candidate: Candidate) -> str | None:
    """`text` with `candidate` in place of the mask number `number` (counting from 0), a piece that continues a
    word joined to the word before it; None where `text` has no such mask."""
    parts = text.split(MASK)
    if number + 1 >= len(parts):
        return None
    before = MASK.join(parts[: number + 1])
    before = before.rstrip(" ") if candidate.continues else before
    return before + candidate.text + MASK.join(parts[number + 1 :])
