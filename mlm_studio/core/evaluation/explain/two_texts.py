"""Two texts read as one row (a classifier's pair of texts, a question and its context): their pieces where the
model read them, with their segments, and the words of each text apart, so that what is computed per piece is
shown per word, each word in its own text; and the attribution of a prediction over both."""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from mlm_studio.core.evaluation.explain.attributions import Attribution
from mlm_studio.core.evaluation.explain.words import Words
from mlm_studio.core.finetune.qa.features import PairLayout


@dataclass(frozen=True)
class TwoTexts(Words):
    """`Words` of two texts in one row: `text` is the first text and `second` the other; each word's span
    indexes its own text, `part` says which (0: the first, 1: the second); `types` are the pieces' segments."""

    second: str = ""
    part: tuple[int, ...] = ()
    types: tuple[int, ...] = ()

    @property
    def type_tensor(self) -> torch.Tensor:
        """The segments as a (1, L) batch."""
        return torch.tensor([self.types])


def joined(first: Words, second: Words, ids: tuple[int, ...], types: tuple[int, ...], at: tuple[int, int]) -> TwoTexts:
    """The words of `first` and `second` (pieces without special tokens) read in one row of `ids`, the first's
    pieces from position `at[0]`, the second's from `at[1]`."""
    word_of = [-1] * len(ids)
    for words, start, offset in ((first, at[0], 0), (second, at[1], len(first.texts))):
        for number, owner in enumerate(words.word_of):
            word_of[start + number] = owner + offset
    return TwoTexts(
        first.text,
        tuple(int(i) for i in ids),
        tuple(word_of),
        first.texts + second.texts,
        first.spans + second.spans,
        second=second.text,
        part=(0,) * len(first.texts) + (1,) * len(second.texts),
        types=tuple(int(t) for t in types),
    )


def laid_out_pair(layout: PairLayout, first: Words, second: Words) -> TwoTexts:
    """Two texts' words in the row the tokenizer lays out for a pair ([CLS] A [SEP] B [SEP] for BERT)."""
    ids = (*layout.before, *first.ids, *layout.between, *second.ids, *layout.after)
    types = (
        *layout.types[0],
        *[layout.question_type] * len(first.ids),
        *layout.types[1],
        *[layout.context_type] * len(second.ids),
        *layout.types[2],
    )
    second_at = len(layout.before) + len(first.ids) + len(layout.between)
    return joined(first, second, ids, types, (len(layout.before), second_at))


@dataclass(frozen=True)
class TwoTextAttribution(Attribution):
    """An attribution over two texts: `text` the first, `text2` the second, `parts` which of them each word is in,
    `names` what each text is ("text" and "text2", or "question" and "context"). Question answering also gives
    the `answer` explained (as the pipeline gives it) and the `window` of the context it came from."""

    text2: str = ""
    parts: tuple[int, ...] = ()
    names: tuple[str, str] = ("text", "text2")
    answer: dict | None = None
    window: str = ""

    def as_json(self) -> dict:
        """As an attribution's, each word saying which text it is in ("in": one of `names`); `answer` and `window`
        only for a question's answer."""
        values = super().as_json()
        for word, part in zip(values["words"], self.parts):
            word["in"] = self.names[part]
        values["names"] = list(self.names)
        del values["parts"]
        if self.answer is None:  # not a question's answer
            del values["answer"], values["window"]
        return values


def over_two_texts(explained: Attribution, words: TwoTexts, names: tuple[str, str], **more) -> TwoTextAttribution:
    """`explained`, computed over `words`, as an attribution over the two texts."""
    kept = {field.name: getattr(explained, field.name) for field in fields(Attribution)}
    return TwoTextAttribution(**kept, text2=words.second, parts=words.part, names=names, **more)
