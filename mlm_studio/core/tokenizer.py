"""WordPiece tokenizers: train one on a corpus, or load `tokenizer.json` / a BERT `vocab.txt`; save exactly.

`MLMTokenizer` wraps a Hugging Face `tokenizers.Tokenizer` with BERT's normalizer and pre-tokenizer and the
special tokens `[PAD] [UNK] [CLS] [SEP] [MASK]`, and gives the engine what it needs: special-token ids, a
mask of special ids, batch encoding with word boundaries for whole-word masking, and a fingerprint.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from mlm_studio.core.files import atomic_write_text
from mlm_studio.core.progress import Progress
from mlm_studio.core.settings import TokenizerConfig

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# WordPiece encodes a word longer than this as [UNK]. Its trainer would spend hours on a megabyte-long word,
# and encoding one tracks every character, so such runs are taken out beforehand. A run counts when it is
# letters and digits only, as BERT's pre-tokenizer keeps them together (not CJK: BERT splits those into
# one-character words; not "_": BERT treats it as punctuation).
MAX_WORD_CHARS = 100
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ceaf\U0002f800-\U0002fa1f"
_LONG_RUN = rf"[^\W_{_CJK}]{{{MAX_WORD_CHARS + 1},}}"
_LONG_RUN_ANYWHERE = re.compile(_LONG_RUN)
_LONG_WORD = re.compile(rf"(?<!\S){_LONG_RUN}(?!\S)")  # a whole word: encodes to exactly one [UNK]


class TokenizerError(Exception):
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
    """A WordPiece tokenizer with BERT's special tokens."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        missing = [t for t in SPECIAL_TOKENS if tokenizer.token_to_id(t) is None]
        if missing:
            raise TokenizerError(f"the tokenizer lacks the special token(s) {', '.join(missing)}")
        self.backend = tokenizer
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            tokenizer.token_to_id(t) for t in SPECIAL_TOKENS
        )
        self.backend.no_padding()
        self.backend.no_truncation()

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    @property
    def special_ids(self) -> tuple[int, ...]:
        return (self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id)

    def special_mask(self) -> np.ndarray:
        """(vocab_size,) bool: True for the ids of special tokens, which masking never selects."""
        mask = np.zeros(self.vocab_size, dtype=bool)
        mask[list(self.special_ids)] = True
        return mask

    def encode_batch(self, texts: Sequence[str]) -> list[Encoded]:
        """Encode texts without special tokens, in parallel, with word boundaries from the pre-tokenizer. A text
        longer than `CHUNK_CHARS` is encoded a chunk at a time, cut at white space, so memory stays bounded."""
        short = [t if len(t) <= CHUNK_CHARS else "" for t in texts]
        out = [
            self._encoded(enc)
            for enc in self.backend.encode_batch(_without_long_words(short), add_special_tokens=False)
        ]
        for i, text in enumerate(texts):
            if len(text) > CHUNK_CHARS:
                parts = [
                    self._encoded(self.backend.encode(chunk, add_special_tokens=False))
                    for chunk in _chunks(_without_long_words([text])[0])
                ]
                out[i] = Encoded(np.concatenate([p.ids for p in parts]), np.concatenate([p.word_starts for p in parts]))
        return out

    @staticmethod
    def _encoded(enc) -> Encoded:
        ids = np.asarray(enc.ids, dtype=np.int64)
        words = np.asarray([-1 if w is None else w for w in enc.word_ids], dtype=np.int64)
        starts = np.ones(len(ids), dtype=bool)
        starts[1:] = words[1:] != words[:-1]
        return Encoded(ids, starts)

    def tokens(self, text: str) -> list[str]:
        """The word pieces of `text`, without special tokens."""
        return self.backend.encode(text, add_special_tokens=False).tokens

    def id_to_token(self, token_id: int) -> str:
        return self.backend.id_to_token(int(token_id)) or "[UNK]"

    def convert_ids(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_token(i) for i in ids]

    def stats(self, texts: Iterable[str]) -> TokenizerStats:
        """[UNK] rate and pieces per word over `texts` (words as the pre-tokenizer splits them)."""
        words = tokens = unknown = 0
        for batch in _batches(texts, 512):
            for enc in self.backend.encode_batch(_without_long_words(batch), add_special_tokens=False):
                tokens += len(enc.ids)
                unknown += enc.ids.count(self.unk_id)
                words += len({w for w in enc.word_ids if w is not None})
        return TokenizerStats(words, tokens, unknown)

    def fingerprint(self) -> str:
        """A short hash of everything that decides the ids: vocabulary, normalizer, pre-tokenizer."""
        return hashlib.sha256(self.backend.to_str().encode()).hexdigest()[:16]

    def save(self, path: str | Path) -> Path:
        """Write `tokenizer.json` (or BERT's `vocab.txt` for a `.txt` path) atomically; a folder gets
        `tokenizer.json` inside it."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        return atomic_write_text(path, vocab_txt(self) if path.suffix == ".txt" else self.backend.to_str(pretty=True))

    @classmethod
    def load(cls, path: str | Path, lowercase: bool | None = None) -> MLMTokenizer:
        """Load `tokenizer.json`, a BERT `vocab.txt`, or a folder holding either. For a `vocab.txt`,
        `lowercase` says whether text is lower-cased (None: only if no piece has an upper-case letter)."""
        path = Path(path)
        if path.is_dir():
            candidates = [path / "tokenizer.json", path / "vocab.txt"]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                raise TokenizerError(f"{path} holds neither tokenizer.json nor vocab.txt")
            path = found
        if not path.is_file():
            raise TokenizerError(f"{path} does not exist")
        if path.suffix == ".txt":
            return cls(_from_vocab_txt(path, lowercase))
        try:
            backend = Tokenizer.from_str(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError) as exc:
            raise TokenizerError(f"{path.name} cannot be read as text ({exc})") from exc
        except Exception as exc:  # the tokenizers library raises its own untyped errors for bad files
            raise TokenizerError(f"{path.name} is not a valid tokenizer.json ({_first_line(exc)})") from exc
        try:
            return cls(backend)
        except TokenizerError as exc:
            raise TokenizerError(f"{path.name}: {exc}") from exc


def train_tokenizer(
    documents: Iterable[str],
    config: TokenizerConfig = TokenizerConfig(),
    total: int = 0,
    progress: Progress | None = None,
) -> MLMTokenizer:
    """Train a WordPiece vocabulary on `documents` (`total` of them, if known, for progress).

    The result depends only on the text and `config`: the same corpus gives the same `tokenizer.json`, byte for
    byte, in every process. (The `tokenizers` WordPiece trainer does not: it numbers the `##` pieces in the
    order of a hash map, which differs per process, and ties between equally frequent merges follow those
    numbers.) So the words are counted here, every character is given two stand-in characters numbered in
    sorted order — one for the start of a word, one for a continuation, which is what `##` means — and the
    byte-pair trainer, whose alphabet is sorted, learns the merges; the pieces are then written back.
    """
    progress = progress or Progress()
    counts = _count_words(documents, config.lowercase, total, progress)
    progress.report(total, total, "Building the vocabulary")
    characters = sorted({c for word in counts for c in word})
    starts = {ord(c): chr(_STAND_IN + 2 * i) for i, c in enumerate(characters)}
    continuations = {ord(c): chr(_STAND_IN + 2 * i + 1) for i, c in enumerate(characters)}

    def stand_ins() -> Iterator[str]:
        for word, count in counts.items():
            coded = word[0].translate(starts) + word[1:].translate(continuations)
            for repeat in range(0, count, 4096):
                yield " ".join([coded] * min(4096, count - repeat))

    pairs = Tokenizer(models.BPE())
    pairs.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        min_frequency=config.min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=list(starts.values()),
        show_progress=False,
    )
    pairs.train_from_iterator(stand_ins(), trainer)
    progress.check()

    def piece(coded: str) -> str:
        if coded in SPECIAL_TOKENS:
            return coded
        numbers = [ord(c) - _STAND_IN for c in coded]
        return ("##" if numbers[0] % 2 else "") + "".join(characters[n // 2] for n in numbers)

    vocab = {piece(coded): i for coded, i in pairs.get_vocab().items()}
    wordpiece = models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=MAX_WORD_CHARS)
    backend = _bert_pipeline(Tokenizer(wordpiece), config.lowercase)
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    return MLMTokenizer(_with_post_processor(backend))


# Stand-in characters for training start above U+FFFF: no surrogates, no white space (U+10000 + 2 × 150,000
# assigned characters still fits below U+10FFFF).
_STAND_IN = 0x10000


def _count_words(documents: Iterable[str], lowercase: bool, total: int, progress: Progress) -> Counter[str]:
    """How often each word occurs, as BERT's normalizer and pre-tokenizer see words; overlong runs left out."""
    normalizer, pre_tokenizer = _bert_normalizer(lowercase), pre_tokenizers.BertPreTokenizer()
    counts: Counter[str] = Counter()
    for i, doc in enumerate(documents):
        if i % 1000 == 0:
            progress.check()
            progress.report(i, total, "Counting words")
        if len(doc) > MAX_WORD_CHARS:
            doc = _LONG_RUN_ANYWHERE.sub(" ", doc)
        counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(doc)))
    return counts


def _bert_pipeline(backend: Tokenizer, lowercase: bool) -> Tokenizer:
    backend.normalizer = _bert_normalizer(lowercase)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.decoder = decoders.WordPiece(prefix="##")
    return backend


def _bert_normalizer(lowercase: bool) -> normalizers.Normalizer:
    return normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=lowercase)


def _with_post_processor(backend: Tokenizer) -> Tokenizer:
    cls_id, sep_id = backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return backend


def _from_vocab_txt(path: Path, lowercase: bool | None = None) -> Tokenizer:
    """A BERT tokenizer from `vocab.txt`; unless told, cased unless no piece has an upper-case letter."""
    try:
        pieces = path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError) as exc:
        raise TokenizerError(f"{path.name} cannot be read as UTF-8 text ({exc})") from exc
    vocab: dict[str, int] = {}
    for line_number, piece in enumerate(pieces, start=1):
        piece = piece.rstrip("\r")
        if not piece:
            raise TokenizerError(f"{path.name} line {line_number}: empty vocabulary entry")
        if piece in vocab:
            raise TokenizerError(f"{path.name} line {line_number}: '{piece}' appears twice")
        vocab[piece] = len(vocab)
    missing = [t for t in SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise TokenizerError(f"{path.name} lacks the special token(s) {', '.join(missing)}")
    if lowercase is None:
        lowercase = not any(any(c.isupper() for c in p) for p in vocab if p not in SPECIAL_TOKENS)
    backend = _bert_pipeline(Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]")), lowercase)
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    return _with_post_processor(backend)


CHUNK_CHARS = 1 << 20  # a longer document is encoded in pieces of about this many characters


def _chunks(text: str) -> Iterator[str]:
    """`text` (its overlong words already written as [UNK]) in pieces of at most `CHUNK_CHARS`, each cut after
    white space, else after a character that is not a letter or digit, else at the limit (inside CJK text,
    whose characters are words of their own, or inside a run of letters too long to be a word)."""
    start = 0
    while len(text) - start > CHUNK_CHARS:
        end = start + CHUNK_CHARS
        cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
        if cut <= start:
            scan = range(end - 1, max(start, end - 2 * MAX_WORD_CHARS), -1)
            cut = next((k for k in scan if not text[k].isalnum()), end - 1)
        yield text[start : cut + 1]
        start = cut + 1
    yield text[start:]


def _without_long_words(texts: Sequence[str]) -> list[str]:
    """The texts with each overlong word written as [UNK], which is what it encodes to."""
    return [_LONG_WORD.sub("[UNK]", t) if len(t) > MAX_WORD_CHARS else t for t in texts]


def _batches(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def vocab_txt(tokenizer: MLMTokenizer) -> str:
    """The vocabulary as BERT's `vocab.txt`: one piece per line, in id order."""
    vocab = tokenizer.backend.get_vocab(with_added_tokens=True)
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    if [i for _, i in ordered] != list(range(len(ordered))):
        raise TokenizerError("the vocabulary ids are not contiguous; it cannot be written as vocab.txt")
    return "".join(piece + "\n" for piece, _ in ordered)
