"""BERT's WordPiece: a vocabulary trained on a corpus, the same in every process, and BERT's `vocab.txt` read
and written. What this module builds is a `tokenizers.Tokenizer` with BERT's normalizer, pre-tokenizer, special
tokens and `[CLS] … [SEP]` template; `tokenizer.MLMTokenizer` wraps it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from mlm_studio.core.config.sections import TokenizerConfig
from mlm_studio.core.errors import UserError
from mlm_studio.core.progress import Progress

BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# WordPiece encodes a word longer than this as [UNK]. Its trainer would spend hours on a megabyte-long word,
# and encoding one tracks every character, so such runs are taken out beforehand. A run counts when it is
# letters and digits only, as BERT's pre-tokenizer keeps them together (not CJK: BERT splits those into
# one-character words; not "_": BERT treats it as punctuation).
MAX_WORD_CHARS = 100
CHUNK_CHARS = 1 << 20  # a longer text is read in pieces of about this many characters
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ceaf\U0002f800-\U0002fa1f"
_LONG_RUN = rf"[^\W_{_CJK}]{{{MAX_WORD_CHARS + 1},}}"
LONG_RUN_ANYWHERE = re.compile(_LONG_RUN)
LONG_WORD = re.compile(rf"(?<!\S){_LONG_RUN}(?!\S)")  # a whole word: encodes to exactly one unknown token


def train_wordpiece(documents: Iterable[str], config: TokenizerConfig, total: int, progress: Progress) -> Tokenizer:
    """Train a WordPiece vocabulary on `documents` (`total` of them, if known, for progress).

    The result depends only on the text and `config`: the same corpus gives the same `tokenizer.json`, byte for
    byte, in every process. (The `tokenizers` WordPiece trainer does not: it numbers the `##` pieces in the
    order of a hash map, which differs per process, and ties between equally frequent merges follow those
    numbers.) So the words are counted here, every character is given two stand-in characters numbered in
    sorted order — one for the start of a word, one for a continuation, which is what `##` means — and the
    byte-pair trainer, whose alphabet is sorted, learns the merges; the pieces are then written back.
    """
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
        special_tokens=list(BERT_SPECIAL_TOKENS),
        initial_alphabet=list(starts.values()),
        show_progress=False,
    )
    pairs.train_from_iterator(stand_ins(), trainer)
    progress.check()

    def piece(coded: str) -> str:
        if coded in BERT_SPECIAL_TOKENS:
            return coded
        numbers = [ord(c) - _STAND_IN for c in coded]
        return ("##" if numbers[0] % 2 else "") + "".join(characters[n // 2] for n in numbers)

    vocab = {piece(coded): i for coded, i in pairs.get_vocab().items()}
    wordpiece = models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=MAX_WORD_CHARS)
    backend = _bert_pipeline(Tokenizer(wordpiece), config.lowercase)
    backend.add_special_tokens(list(BERT_SPECIAL_TOKENS))
    return _with_post_processor(backend)


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
            doc = LONG_RUN_ANYWHERE.sub(" ", doc)
        for piece in chunks(doc):
            counts.update(word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(piece)))
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


def from_vocab_txt(path: Path, lowercase: bool | None = None) -> Tokenizer:
    """A BERT tokenizer from `vocab.txt`; unless told, cased unless no piece has an upper-case letter. Raises
    ValueError saying what is wrong with the file."""
    try:
        pieces = path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError) as exc:
        raise UserError(f"{path.name} cannot be read as UTF-8 text ({exc})") from exc
    vocab: dict[str, int] = {}
    for line_number, piece in enumerate(pieces, start=1):
        piece = piece.rstrip("\r")
        if not piece:
            raise UserError(f"{path.name} line {line_number}: empty vocabulary entry")
        if piece in vocab:
            raise UserError(f"{path.name} line {line_number}: '{piece}' appears twice")
        vocab[piece] = len(vocab)
    missing = [t for t in BERT_SPECIAL_TOKENS if t not in vocab]
    if missing:
        raise UserError(f"{path.name} lacks the special token(s) {', '.join(missing)}")
    if lowercase is None:
        lowercase = not any(any(c.isupper() for c in p) for p in vocab if p not in BERT_SPECIAL_TOKENS)
    backend = _bert_pipeline(Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]")), lowercase)
    backend.add_special_tokens(list(BERT_SPECIAL_TOKENS))
    return _with_post_processor(backend)


def vocab_txt(backend: Tokenizer) -> str:
    """The vocabulary as BERT's `vocab.txt`: one piece per line, in id order (ValueError if the ids have gaps)."""
    ordered = sorted(backend.get_vocab(with_added_tokens=True).items(), key=lambda item: item[1])
    if [i for _, i in ordered] != list(range(len(ordered))):
        raise UserError("the vocabulary ids are not contiguous; it cannot be written as vocab.txt")
    return "".join(piece + "\n" for piece, _ in ordered)


def chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """`text` (its overlong words already replaced) in pieces of at most `size`, each cut after
    white space, else after a character that is not a letter or digit, else at the limit (inside CJK text,
    whose characters are words of their own, or inside a run of letters too long to be a word)."""
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
        if cut <= start:
            scan = range(end - 1, max(start, end - 2 * MAX_WORD_CHARS), -1)
            cut = next((k for k in scan if not text[k].isalnum()), end - 1)
        yield text[start : cut + 1]
        start = cut + 1
    yield text[start:]
