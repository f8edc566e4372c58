"""The tokenizer of a run or an imported model: a Hugging Face `tokenizers.Tokenizer` of any kind (WordPiece,
byte-level BPE, SentencePiece Unigram) and the special tokens a masked-LM needs, found by their role.

`MLMTokenizer` gives the engine special-token ids, a mask of special ids, batch encoding with word boundaries for
whole-word masking, the text of a predicted piece, and a fingerprint. A new vocabulary is BERT's WordPiece
(`wordpiece.py`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import astuple, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from mlm_studio.core.config.sections import TokenizerConfig
from mlm_studio.core.data.wordpiece import (
    BERT_SPECIAL_TOKENS,
    CHUNK_CHARS,
    LONG_WORD,
    MAX_WORD_CHARS,
    chunks,
    from_vocab_txt,
    train_wordpiece,
    vocab_txt,
)
from mlm_studio.core.errors import UserError
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.files import atomic_write_json, atomic_write_text
from mlm_studio.core.storage.json_text import read_json

TYPED_MASK = "[MASK]"  # what a person writes for a mask, whatever the model's own mask token
BATCH_CHARS = 1 << 22  # texts encoded together hold at most about this many characters


@dataclass(frozen=True)
class SpecialTokens:
    """The text of each special token by its role (RoBERTa's `<s>` is the classification token)."""

    pad: str
    unk: str
    cls: str
    sep: str
    mask: str

    def as_map(self) -> dict[str, str]:
        """`special_tokens_map.json`'s names for them."""
        return {f"{f.name}_token": getattr(self, f.name) for f in fields(self)}


BERT_STYLE = SpecialTokens(*BERT_SPECIAL_TOKENS)
ROBERTA_STYLE = SpecialTokens("<pad>", "<unk>", "<s>", "</s>", "<mask>")  # RoBERTa, CamemBERT, XLM-R
_ALSO_NAMED = {"cls": "bos_token", "sep": "eos_token"}  # what a tokenizer file may call them instead


class TokenizerError(UserError):
    """A tokenizer file cannot be used; the message says why."""


@dataclass(frozen=True)
class Encoded:
    """Token ids of one text (no special tokens) and, for each token, whether it starts a word."""

    ids: np.ndarray  # (T,) int64
    word_starts: np.ndarray  # (T,) bool


@dataclass(frozen=True)
class TokenizerStats:
    """How well a vocabulary covers some text."""

    words: int
    tokens: int
    unknown: int

    @property
    def unknown_rate(self) -> float:
        return self.unknown / self.tokens if self.tokens else 0.0

    @property
    def pieces_per_word(self) -> float:
        return self.tokens / self.words if self.words else 0.0


class MLMTokenizer:
    """A tokenizer and its special tokens; `named` gives roles by name (`mask_token`: "<mask>", as
    `special_tokens_map.json` does), the rest are BERT's or RoBERTa's, whichever the vocabulary holds."""

    def __init__(self, tokenizer: Tokenizer, named: dict[str, str] | None = None) -> None:
        self.backend = tokenizer
        self.specials = _special_tokens(tokenizer, named or {})
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            tokenizer.token_to_id(t) for t in astuple(self.specials)
        )
        model = json.loads(tokenizer.to_str()).get("model", {})
        self.kind: str = model.get("type") or "unknown"  # WordPiece, BPE, Unigram…
        self._continuing = model.get("continuing_subword_prefix") if self.kind == "WordPiece" else None
        self.backend.no_padding()
        self.backend.no_truncation()

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    @property
    def special_ids(self) -> tuple[int, ...]:
        """The five roles' ids and those of any other special token the tokenizer declares."""
        declared = [i for i, token in self.backend.get_added_tokens_decoder().items() if token.special]
        return tuple(sorted({self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id, *declared}))

    def normalised(self, text: str) -> str:
        """`text` as the model reads it before cutting it into pieces: the tokenizer's normaliser applied (lower
        case, accents stripped, as it is set); `text` itself when it has none."""
        normalizer = self.backend.normalizer
        return text if normalizer is None else normalizer.normalize_str(text)

    def special_mask(self) -> np.ndarray:
        """(vocab_size,) bool: True for the ids of special tokens, which masking never selects."""
        mask = np.zeros(self.vocab_size, dtype=bool)
        mask[list(self.special_ids)] = True
        return mask

    def encode_batch(self, texts: Sequence[str]) -> list[Encoded]:
        """Encode texts without special tokens, in parallel, with word boundaries from the pre-tokenizer. A text
        longer than `CHUNK_CHARS` is encoded a chunk at a time, cut at white space, so memory stays bounded."""
        short = self._short_words([t if len(t) <= CHUNK_CHARS else "" for t in texts])
        if self._continuing:  # WordPiece marks every piece after a word's first: no offsets or word ids needed
            continues = self._continues
            fast = self.backend.encode_batch_fast(short, add_special_tokens=False)
            out = [Encoded(ids, ~continues[ids]) for ids in (np.asarray(e.ids, dtype=np.int64) for e in fast)]
        else:
            out = [self._encoded(enc) for enc in self.backend.encode_batch(short, add_special_tokens=False)]
        for i, text in enumerate(texts):
            if len(text) > CHUNK_CHARS:
                parts = [
                    self._encoded(self.backend.encode(chunk, add_special_tokens=False))
                    for chunk in chunks(self._short_words([text])[0], CHUNK_CHARS)
                ]
                out[i] = Encoded(np.concatenate([p.ids for p in parts]), np.concatenate([p.word_starts for p in parts]))
        return out

    @functools.cached_property
    def _continues(self) -> np.ndarray:
        """(vocab_size,) bool: True for WordPiece's pieces that continue a word (`##ing`; `##` alone does not)."""
        prefix = self._continuing
        mask = np.zeros(self.vocab_size, dtype=bool)
        for token, index in self.backend.get_vocab(with_added_tokens=False).items():
            mask[index] = token.startswith(prefix) and len(token) > len(prefix)
        return mask

    @staticmethod
    def _encoded(enc) -> Encoded:
        ids = np.asarray(enc.ids, dtype=np.int64)
        words = np.asarray([-1 if w is None else w for w in enc.word_ids], dtype=np.int64)
        starts = np.ones(len(ids), dtype=bool)
        starts[1:] = words[1:] != words[:-1]
        return Encoded(ids, starts)

    def _short_words(self, texts: Sequence[str]) -> list[str]:
        """The texts with each overlong word written as the unknown token, which is what WordPiece makes of it
        (and what keeps any tokenizer's time and memory bounded)."""
        return [LONG_WORD.sub(self.specials.unk, t) if len(t) > MAX_WORD_CHARS else t for t in texts]

    def encode_text(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids of one text between the classification and separator tokens, and each token's character span in
        `text`; a typed [MASK] is read as the model's mask token."""
        text = self.with_mask_token(text)
        encoding = self.backend.encode(text, add_special_tokens=False)
        ids = [self.cls_id, *encoding.ids, self.sep_id]
        return ids, [(0, 0), *encoding.offsets, (len(text), len(text))]

    def with_mask_token(self, text: str) -> str:
        """`text` with each typed [MASK] written as this tokenizer's mask token (`<mask>` for RoBERTa)."""
        return text.replace(TYPED_MASK, self.specials.mask)

    def piece_text(self, token_id: int) -> tuple[str, bool]:
        """How a predicted piece is written into text, and whether it continues the word before it (WordPiece's
        `##ing`; a byte-level or SentencePiece piece without its leading space)."""
        token = self.id_to_token(token_id)
        if self._continuing is not None:
            continues = token.startswith(self._continuing) and token != self._continuing
            return (token[len(self._continuing) :], True) if continues else (token, False)
        text = self.backend.decode([int(token_id)], skip_special_tokens=False)
        return (text.lstrip(), False) if text[:1].isspace() else (text, True)

    def tokens(self, text: str) -> list[str]:
        """The pieces of `text`, without special tokens."""
        return self.backend.encode(text, add_special_tokens=False).tokens

    def id_to_token(self, token_id: int) -> str:
        return self.backend.id_to_token(int(token_id)) or self.specials.unk

    def convert_ids(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_token(i) for i in ids]

    def stats(self, texts: Iterable[str]) -> TokenizerStats:
        """[UNK] rate and pieces per word over `texts` (words as the pre-tokenizer splits them)."""
        words = tokens = unknown = 0
        for batch in batches((text[:CHUNK_CHARS] for text in texts), 512):  # a long text's start stands for it
            for enc in self.backend.encode_batch(self._short_words(batch), add_special_tokens=False):
                tokens += len(enc.ids)
                unknown += enc.ids.count(self.unk_id)
                words += len({w for w in enc.word_ids if w is not None})
        return TokenizerStats(words, tokens, unknown)

    def fingerprint(self) -> str:
        """A short hash of everything that decides the ids: vocabulary, normalizer, pre-tokenizer."""
        return hashlib.sha256(self.backend.to_str().encode()).hexdigest()[:16]

    def save(self, path: str | Path) -> Path:
        """Write `tokenizer.json` (or BERT's `vocab.txt` for a `.txt` path) atomically; a folder gets
        `tokenizer.json` inside it. Special tokens that are neither BERT's nor RoBERTa's are named in a
        `special_tokens_map.json` beside it, which `load` reads."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        if path.suffix == ".txt":
            return atomic_write_text(path, self.vocab_txt())
        if self.specials not in (BERT_STYLE, ROBERTA_STYLE):
            atomic_write_json(path.parent / "special_tokens_map.json", self.specials.as_map())
        return atomic_write_text(path, self.backend.to_str(pretty=True))

    def vocab_txt(self) -> str:
        """The vocabulary as BERT's `vocab.txt`, one piece per line in id order."""
        try:
            return vocab_txt(self.backend)
        except ValueError as exc:
            raise TokenizerError(str(exc)) from exc

    @classmethod
    def load(cls, path: str | Path) -> MLMTokenizer:
        """Load `tokenizer.json`, a BERT `vocab.txt`, or a folder holding either, with the special tokens and
        lower-casing that a `special_tokens_map.json` or `tokenizer_config.json` beside it names. For a
        `vocab.txt` without `do_lower_case`, text is lower-cased only if no piece has an upper-case letter."""
        path = Path(path)
        if path.is_dir():
            candidates = [path / "tokenizer.json", path / "vocab.txt"]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                raise TokenizerError(f"{path} holds neither tokenizer.json nor vocab.txt")
            path = found
        if not path.is_file():
            raise TokenizerError(f"{path} does not exist")
        settings = _settings_beside(path)
        try:
            if path.suffix == ".txt":
                lowercase = settings.get("do_lower_case")
                backend = from_vocab_txt(path, lowercase if isinstance(lowercase, bool) else None)
            else:
                backend = Tokenizer.from_str(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError) as exc:
            raise TokenizerError(f"{path.name} cannot be read as text ({exc})") from exc
        except ValueError as exc:
            raise TokenizerError(str(exc)) from exc
        except Exception as exc:  # the tokenizers library raises its own untyped errors for bad files
            raise TokenizerError(f"{path.name} is not a valid tokenizer.json ({_first_line(exc)})") from exc
        try:
            return cls(backend, _named_tokens(settings))
        except TokenizerError as exc:
            raise TokenizerError(f"{path.name}: {exc}") from exc


def train_tokenizer(
    documents: Iterable[str],
    config: TokenizerConfig = TokenizerConfig(),
    total: int = 0,
    progress: Progress | None = None,
) -> MLMTokenizer:
    """A WordPiece vocabulary trained on `documents` (`total` of them, if known, for progress); the same corpus
    gives the same `tokenizer.json`, byte for byte, in every process."""
    return MLMTokenizer(train_wordpiece(documents, config, total, progress or Progress()))


def _special_tokens(backend: Tokenizer, named: dict[str, str]) -> SpecialTokens:
    """The special tokens by role: those `named`, the others BERT's or RoBERTa's, whichever the vocabulary has."""
    lacking = []
    for style in (BERT_STYLE, ROBERTA_STYLE):
        candidate = replace(style, **named)
        missing = [t for t in astuple(candidate) if backend.token_to_id(t) is None]
        if not missing:
            return candidate
        lacking.append(", ".join(missing))
    raise TokenizerError(
        f"the tokenizer lacks the special token(s) {lacking[0]} (or, RoBERTa's way, {lacking[1]}); name its own "
        "in special_tokens_map.json beside it"
    )


def _settings_beside(path: Path) -> dict[str, Any]:
    """`tokenizer_config.json` and `special_tokens_map.json` from the tokenizer's folder, merged (the second
    wins); empty where there are none. A damaged file is an error, not silently ignored."""
    settings: dict[str, Any] = {}
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        beside = path.parent / name
        if not beside.is_file():
            continue
        try:
            values = read_json(beside.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise TokenizerError(f"{name} beside {path.name} cannot be read as JSON ({exc})") from exc
        if isinstance(values, dict):
            settings.update(values)
    return settings


def _named_tokens(settings: dict[str, Any]) -> dict[str, str]:
    """Roles named in tokenizer settings (`"mask_token": "<mask>"` or `{"content": "<mask>", …}`)."""
    named = {}
    for role in ("pad", "unk", "cls", "sep", "mask"):
        value = settings.get(f"{role}_token", settings.get(_ALSO_NAMED.get(role, "")))
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str) and value:
            named[role] = value
    return named


def batches(texts: Iterable[str], size: int, characters: int = BATCH_CHARS) -> Iterator[list[str]]:
    """`texts` in lists of `size`, or fewer where they would hold more than `characters` together."""
    batch: list[str] = []
    held = 0
    for text in texts:
        batch.append(text)
        held += len(text)
        if len(batch) == size or held >= characters:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
