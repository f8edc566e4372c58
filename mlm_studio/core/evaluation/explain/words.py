"""A text as a model reads it and as a person reads it: its pieces between the special tokens, and the words
they make up, so that what is computed per piece can be shown per word (a word's pieces summed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from mlm_studio.core.data.tokenizer import TYPED_MASK, MLMTokenizer


@dataclass(frozen=True)
class Words:
    """`ids`: the pieces ([CLS] … [SEP]); `word_of`: each piece's word (-1 for the special tokens around the
    text); `texts` and `spans`: each word as written and its characters in `text` (the text as the model read
    it, a typed [MASK] written as the model's mask token)."""

    text: str
    ids: tuple[int, ...]
    word_of: tuple[int, ...]
    texts: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]

    @property
    def tensor(self) -> torch.Tensor:
        """The ids as a (1, L) batch."""
        return torch.tensor([self.ids])

    def per_word(self, piece_scores: np.ndarray) -> np.ndarray:
        """(L,) scores of the pieces → (W,) scores of the words: each word's pieces summed."""
        words = np.zeros(len(self.texts), dtype=np.float64)
        inside = np.asarray(self.word_of) >= 0
        np.add.at(words, np.asarray(self.word_of)[inside], np.asarray(piece_scores, dtype=np.float64)[inside])
        return words

    def pieces_of(self, word: int) -> list[int]:
        return [position for position, owner in enumerate(self.word_of) if owner == word]


def words_of(tokenizer: MLMTokenizer, text: str) -> Words:
    """The pieces and words of `text`, as the tokenizer's pre-tokenizer cuts words (a mask token is a word)."""
    text = tokenizer.with_mask_token(text)
    encoding = tokenizer.backend.encode(text, add_special_tokens=False)
    inner = words_of_encoding(text, encoding.ids, encoding.word_ids, encoding.offsets)
    return replace(inner, ids=(tokenizer.cls_id, *inner.ids, tokenizer.sep_id), word_of=(-1, *inner.word_of, -1))


def words_of_encoding(
    text: str, ids: Sequence[int], word_ids: Sequence[int | None], offsets: Sequence[Sequence[int]]
) -> Words:
    """The words of some of `text`'s pieces (no special token among them): each piece's word as the
    pre-tokenizer numbered it (`word_ids`), its characters in `text` (`offsets`)."""
    spans: list[tuple[int, int]] = []
    word_of = []
    last = None
    for word, (start, end) in zip(word_ids, offsets):
        if word is None or word != last or not spans:
            spans.append((int(start), int(end)))
        else:
            spans[-1] = (spans[-1][0], int(end))
        last = word
        word_of.append(len(spans) - 1)
    return _without_blank_words(Words(text, tuple(int(i) for i in ids), tuple(word_of), (), tuple(spans)))


def _without_blank_words(words: Words) -> Words:
    """Pieces that hold only white space (a byte-level space before a mask token) join the word after them (the
    last such, the word before)."""
    blank = [not words.text[start:end].strip() for start, end in words.spans]
    kept = [number for number, empty in enumerate(blank) if not empty]
    if not kept:
        return replace(words, texts=tuple("" for _ in blank))
    new_number = {}
    for number in range(len(blank)):
        following = next((k for k in kept if k >= number), kept[-1])
        new_number[number] = kept.index(following)
    word_of = tuple(-1 if owner < 0 else new_number[owner] for owner in words.word_of)
    spans = [list(words.spans[k]) for k in kept]
    for number, (start, end) in enumerate(words.spans):
        target = spans[new_number[number]]
        target[0], target[1] = min(target[0], start), max(target[1], end)
    texts = tuple(words.text[start:end].strip() for start, end in spans)
    return replace(words, word_of=word_of, texts=texts, spans=tuple((start, end) for start, end in spans))


def words_of_pieces(tokenizer: MLMTokenizer, ids: list[int]) -> Words:
    """The words of a block of pieces that has no text of its own (a held-out block): a piece that continues the
    word before it (`##ing`, a byte-level piece without its space) joins it; the special tokens are no word. The
    words are written one space apart, which is what `text` and `spans` hold."""
    specials = set(tokenizer.special_ids) - {tokenizer.mask_id}
    texts: list[str] = []
    word_of = []
    for piece in ids:
        if piece in specials:
            word_of.append(-1)
            continue
        written, continues = tokenizer.piece_text(piece)
        if piece == tokenizer.mask_id:
            written, continues = TYPED_MASK, False
        if continues and texts and word_of and word_of[-1] >= 0:
            texts[-1] += written
        else:
            texts.append(written)
        word_of.append(len(texts) - 1)
    spans, start = [], 0
    for written in texts:
        spans.append((start, start + len(written)))
        start += len(written) + 1
    return Words(" ".join(texts), tuple(ids), tuple(word_of), tuple(texts), tuple(spans))
