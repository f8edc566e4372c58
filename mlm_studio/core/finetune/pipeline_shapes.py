"""A fine-tuned model's answers in the shapes `transformers`' pipelines return, so that what MLM Studio shows, prints
and writes as JSON is what the exported model gives there: `text-classification`'s labels with their scores, best
first; `token-classification`'s tagged tokens (`aggregation_strategy="none"`) and its entities grouped as
`"first"` groups them (each word tagged as its first piece is, the piece the model is trained and scored on; then
neighbouring words of one type, a `B-` tag starting a new one), with character offsets into the text: the one list
of entities the window, the command line's table and its --json show, which never splits a word. `"simple"`
(every piece grouped by its own tag) is given too; where a word's later pieces are tagged otherwise it can split
the word, so each word's tag is marked there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mlm_studio.core.errors import UserError

if TYPE_CHECKING:  # the command line's parser reads AGGREGATIONS without loading the tokenizer
    from tokenizers import Encoding

    from mlm_studio.core.data.tokenizer import MLMTokenizer

AGGREGATIONS = ("first", "simple", "none")  # the token-classification pipeline's strategies given here (first: ours)
IGNORED = ("O",)  # the tag the token-classification pipeline leaves out: outside any entity


@dataclass(frozen=True)
class Reading:
    """How much of a text (or of each text of a pair) the model read: all of it, or as much as fits its length."""

    limit: int  # the most tokens the model reads, special ones included
    lengths: tuple[int, ...]  # each text's characters
    read: tuple[int, ...]  # the characters read of each: up to the end of its last token read

    @property
    def whole(self) -> bool:
        return self.read == self.lengths

    def describe(self) -> str:
        """ "" when the whole text was read, else what was: "the model reads 128 tokens: it read the first 412 of
        2,000 characters" (of each text of a pair)."""
        if self.whole:
            return ""
        parts = [f"the first {read:,} of {length:,}" for read, length in zip(self.read, self.lengths, strict=True)]
        said = parts[0] if len(parts) == 1 else f"{parts[0]} (first text) and {parts[1]} (second text)"
        return f"the model reads {self.limit:,} tokens: it read {said} characters"


@dataclass(frozen=True)
class QuestionReading:
    """How much of a question the model read: a question-answering model reads at most `limit` of its tokens."""

    limit: int  # the most tokens of a question the model reads
    tokens: int  # the question's tokens
    read: int  # the characters read of it: up to the end of its last token read
    length: int  # its characters

    @property
    def whole(self) -> bool:
        return self.tokens <= self.limit

    def describe(self) -> str:
        """ "" when the whole question was read, else what was: "the model reads 16 tokens of a question: it read
        the first 16 of its 40 tokens (the first 52 of 131 characters)"."""
        if self.whole:
            return ""
        return (
            f"the model reads {self.limit:,} tokens of a question: it read the first {self.limit:,} of its "
            f"{self.tokens:,} tokens (the first {self.read:,} of {self.length:,} characters)"
        )


def question_reading(tokenizer: MLMTokenizer, question: str, limit: int) -> QuestionReading:
    """What a model reading at most `limit` tokens of a question reads of `question`."""
    encoding = tokenizer.backend.encode(question, add_special_tokens=False)
    read = encoding.offsets[limit - 1][1] if len(encoding.ids) > limit else len(question)
    return QuestionReading(limit, len(encoding.ids), read, len(question))


def reading(encoding: Encoding, texts: Sequence[str], cut: bool, limit: int) -> Reading:
    """What `encoding` (laid out from `texts`, cut or not to `limit` tokens) read of each text. A pair's first
    text, once cut, comes out of the `tokenizers` layout with no sequence number: its words are the unnumbered
    ones."""
    lengths = tuple(len(text) for text in texts)
    if not cut:
        return Reading(limit, lengths, lengths)
    ends = [0] * len(texts)
    for sequence, (_, end), special in zip(encoding.sequence_ids, encoding.offsets, encoding.special_tokens_mask):
        if not special:
            text = 0 if sequence is None else sequence
            ends[text] = max(ends[text], end)
    return Reading(limit, lengths, tuple(ends))


def label_scores(probabilities: Sequence[float], labels: Sequence[str], top_k: int | None = None) -> list[dict]:
    """`[{"label", "score"}]` for every label, the most probable first (ties in the labels' order), the first
    `top_k` of them when given."""
    found = [{"label": label, "score": float(p)} for label, p in zip(labels, probabilities, strict=True)]
    found.sort(key=lambda answer: answer["score"], reverse=True)
    return found if top_k is None else found[:top_k]


def tagged_tokens(
    text: str, encoding: Encoding, probabilities: np.ndarray, labels: Sequence[str], tokenizer: MLMTokenizer
) -> list[dict]:
    """Every token of `text` but the special ones: `{"entity", "score", "index", "word", "start", "end"}`, its most
    probable tag (its row of `probabilities`, (L, labels)), its index among the encoding's tokens, the token as
    the vocabulary writes it (an unknown one: its characters) and its characters in `text`."""
    tokens = []
    for index, (token_id, (start, end), special) in enumerate(
        zip(encoding.ids, encoding.offsets, encoding.special_tokens_mask, strict=True)
    ):
        if special:
            continue
        best = int(probabilities[index].argmax())
        word = text[start:end] if token_id == tokenizer.unk_id else tokenizer.id_to_token(token_id)
        tokens.append(
            {
                "entity": labels[best],
                "score": float(probabilities[index, best]),
                "index": index,
                "word": word,
                "start": start,
                "end": end,
            }
        )
    return tokens


def without_ignored(found: list[dict], key: str = "entity") -> list[dict]:
    return [answer for answer in found if answer[key] not in IGNORED]


def word_groups(encoding: Encoding, tokens: list[dict]) -> list[list[dict]]:
    """The tagged tokens of each word of the text (as the tokenizer's pre-tokenizer splits it), in order."""
    by_index = {token["index"]: token for token in tokens}
    words: dict[int, list[dict]] = {}
    for index, word in enumerate(encoding.word_ids):
        if word is not None and index in by_index:
            words.setdefault(word, []).append(by_index[index])
    return list(words.values())


def scored_piece(text: str, pieces: list[dict]) -> dict:
    """The tagged token a word is tagged on: its first, past any of white space alone before it (a byte-level or
    Unigram tokenizer's lone Ġ or ▁), which training leaves out of the word (`examples.word_pieces`)."""
    return next((piece for piece in pieces if text[piece["start"] : piece["end"]].strip()), pieces[0])


def piece_entities(tokens: list[dict], tokenizer: MLMTokenizer) -> list[dict]:
    """The entities of the pipeline's "simple" aggregation: every piece grouped by its own tag."""
    return grouped_entities([{**token, "pieces": [token["word"]]} for token in tokens], tokenizer)


def word_entities(text: str, words: list[list[dict]], tokenizer: MLMTokenizer) -> list[dict]:
    """The entities of the pipeline's "first" aggregation: each word tagged as its first piece is (`scored_piece`),
    with that piece's score, the words then grouped by their tags."""
    scored = [scored_piece(text, pieces) for pieces in words]
    return grouped_entities(
        [
            {"entity": first["entity"], "score": first["score"], "pieces": [t["word"] for t in pieces],
             "start": first["start"], "end": pieces[-1]["end"]}
            for first, pieces in zip(scored, words, strict=True)
        ],
        tokenizer,
    )  # fmt: skip


def grouped_entities(items: list[dict], tokenizer: MLMTokenizer) -> list[dict]:
    """Tagged items (pieces or words, "O" ones included: `{"entity", "score", "pieces", "start", "end"}`) grouped as
    the pipeline groups them: `{"entity_group", "score", "word", "start", "end"}`, the type without its B-/I-
    prefix, the items' mean score, their pieces joined by the tokenizer's decoder, from the first one's start to
    the last one's end; groups of "O" left out."""
    groups: list[list[dict]] = []
    for token in items:
        begins, kind = _prefix_and_type(token["entity"])
        if groups and begins != "B" and kind == _prefix_and_type(groups[-1][-1]["entity"])[1]:
            groups[-1].append(token)
        else:
            groups.append([token])
    decoder = tokenizer.backend.decoder
    found = []
    for group in groups:
        pieces = [piece for token in group for piece in token["pieces"]]
        found.append(
            {
                "entity_group": group[0]["entity"].split("-", 1)[-1],
                "score": float(np.mean([token["score"] for token in group])),
                "word": decoder.decode(pieces) if decoder is not None else " ".join(pieces),
                "start": group[0]["start"],
                "end": group[-1]["end"],
            }
        )
    return without_ignored(found, "entity_group")


def _prefix_and_type(tag: str) -> tuple[str, str]:
    """ "B-PER" → ("B", "PER"); a tag without B-/I- continues whatever came before it of its type."""
    if tag.startswith(("B-", "I-")):
        return tag[0], tag[2:]
    return "I", tag


def word_tags(text: str, words: list[list[dict]]) -> list[dict]:
    """Each word of `text` (its tagged tokens, from `word_groups`; white space left out) with the tag and score of
    its first piece (`scored_piece`: where the model was trained to tag it): `{"entity", "score", "word", "start",
    "end", "pieces_differ"}`, "O" ones included; `pieces_differ` when a later piece is not tagged as the model
    learned a word's later pieces (the first piece's type, not begun again: B-X then I-X, O then O)."""
    scored = [scored_piece(text, pieces) for pieces in words]
    found = [
        {"entity": first["entity"], "score": first["score"], "word": "", "start": first["start"],
         "end": pieces[-1]["end"],
         "pieces_differ": any(not _continues(first["entity"], later["entity"])
                              for later in pieces[pieces.index(first) + 1 :])}
        for first, pieces in zip(scored, words, strict=True)
    ]  # fmt: skip
    return [_trimmed(text, word) for word in found if text[word["start"] : word["end"]].strip()]


def _continues(first: str, later: str) -> bool:
    """Whether a word's later piece tagged `later` goes on with its first piece's `first`, as the pieces are trained
    and as the pipeline groups them: the same type, not begun again."""
    begins, kind = _prefix_and_type(later)
    return begins != "B" and kind == _prefix_and_type(first)[1]


def _trimmed(text: str, word: dict) -> dict:
    """A word's span without the white space a byte-level piece carries (" the" → "the")."""
    start, end = word["start"], word["end"]
    start += len(text[start:end]) - len(text[start:end].lstrip())
    end -= len(text[start:end]) - len(text[start:end].rstrip())
    return {**word, "word": text[start:end], "start": start, "end": end}


@dataclass(frozen=True)
class Labelled:
    """A text's (or a pair's) labels, the most probable first, and how much of it was read."""

    scores: list[dict]  # {"label", "score"} for every label
    reading: Reading

    def as_pipeline(self, top_k: int | None = None) -> list[dict]:
        """What `pipeline("text-classification", top_k=top_k)` returns (every label for None)."""
        return self.scores if top_k is None else self.scores[:top_k]


@dataclass(frozen=True)
class Answered:
    """A question's answers in a context, the best first, and how much of the question was read."""

    answers: list[dict]  # {"score", "start", "end", "answer"}
    question: QuestionReading

    def as_pipeline(self) -> list[dict]:
        """What the question-answering pipeline returns, for its `top_k` answers."""
        return self.answers


@dataclass(frozen=True)
class Tagged:
    """A text's tags: every token's (with "O"), every word's (on its first piece), the entities (the words grouped
    as the pipeline's "first" aggregation groups them: what every view of them shows), the pieces grouped by their
    own tags ("simple") and how much was read."""

    text: str
    tokens: list[dict]  # {"entity", "score", "index", "word", "start", "end"}
    words: list[dict]  # {"entity", "score", "word", "start", "end", "pieces_differ"}
    entities: list[dict]  # {"entity_group", "score", "word", "start", "end"}: the pipeline's "first"
    piece_entities: list[dict]  # the same shape: the pipeline's "simple"
    reading: Reading

    def as_pipeline(self, aggregation: str = "first") -> list[dict]:
        """What `pipeline("token-classification", aggregation_strategy=aggregation)` returns, for "none" (the
        tagged tokens, "O" left out), "first" (the entities) or "simple" (the pieces grouped by their own tags)."""
        if aggregation not in AGGREGATIONS:
            raise UserError(f"aggregation is one of {', '.join(AGGREGATIONS)}, not {aggregation[:80]!r}")
        if aggregation == "none":
            return without_ignored(self.tokens)
        return self.entities if aggregation == "first" else self.piece_entities
