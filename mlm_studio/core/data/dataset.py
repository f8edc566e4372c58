"""The corpus tokenized once into memory-mapped arrays on disk, and fixed-length blocks drawn from it.

`tokenize_corpus` streams the documents through the tokenizer in batches and appends the ids (uint16 when
the vocabulary fits, else uint32) and word-start flags to files in the cache, keyed by a hash of the
sources, the reading options and the tokenizer; a second call with the same inputs reuses them. Memory
stays flat as the corpus grows: only the per-document offsets are held in memory.

`split_blocks` divides the documents deterministically into training and validation and serves blocks of
`max_seq_len` tokens: packed (`[CLS] doc [SEP] doc [SEP] … [SEP]`, no padding) or one document per block,
padded (a long document continues in the next block, nothing is cut away).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from array import array
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from mlm_studio.core.config.sections import DataConfig
from mlm_studio.core.data.corpus import Corpus, CorpusError
from mlm_studio.core.data.tokenizer import MLMTokenizer, batches
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.files import atomic_write_folder
from mlm_studio.core.storage.json_text import read_json
from mlm_studio.core.storage.user_folders import CACHE_ENV, cache_dir

log = logging.getLogger(__name__)
FORMAT_VERSION = 1
ENCODE_BATCH = 1000


@dataclass(frozen=True)
class Batch:
    """Blocks as NumPy arrays, ready to become tensors."""

    input_ids: np.ndarray  # (B, L) int64
    attention_mask: np.ndarray  # (B, L) bool, False on padding
    word_ids: np.ndarray  # (B, L) int64, -1 on special tokens and padding


class TokenizedCorpus:
    """Every document's token ids and word-start flags, memory-mapped from one cache folder."""

    def __init__(self, folder: Path) -> None:
        """Raises ValueError if the folder's files do not agree with each other (a damaged cache)."""
        try:
            meta = read_json((folder / "meta.json").read_text())
            self.tokens = int(meta["tokens"])
            dtype = np.dtype(meta["dtype"])
            sizes = [(folder / name).stat().st_size for name in ("ids.bin", "word_starts.bin")]
            if sizes != [self.tokens * dtype.itemsize, self.tokens]:
                raise ValueError(f"token files of {sizes} bytes for {self.tokens} tokens")
            self.offsets = np.load(folder / "offsets.npy")  # (D + 1,) int64
            if self.offsets.ndim != 1 or len(self.offsets) < 2 or self.offsets[-1] != self.tokens:
                raise ValueError("document offsets do not end at the token count")
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"the token cache {folder.name} is damaged ({exc})") from exc
        self.folder = folder
        self.ids = np.memmap(folder / "ids.bin", dtype=dtype, mode="r", shape=(self.tokens,))
        self.word_starts = np.memmap(folder / "word_starts.bin", dtype=np.bool_, mode="r", shape=(self.tokens,))

    @property
    def documents(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def cache_key(corpus: Corpus, tokenizer: MLMTokenizer) -> str:
    """A hash of what decides the token ids: each source (path, size, modification time), options, tokenizer."""
    sources = []
    for source in corpus.loaded_sources:
        stat = source.path.stat()
        sources.append([str(source.path.resolve()), source.encoding, stat.st_size, stat.st_mtime_ns])
    blob = json.dumps([FORMAT_VERSION, sources, asdict(corpus.options), tokenizer.fingerprint()])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def tokenize_corpus(
    corpus: Corpus, tokenizer: MLMTokenizer, progress: Progress | None = None, root: Path | None = None
) -> TokenizedCorpus:
    """The tokenized corpus from the cache, tokenizing it first if it is not there."""
    progress = progress or Progress()
    root = root or cache_dir() / "datasets"
    folder = root / cache_key(corpus, tokenizer)
    if folder.exists():
        try:
            return TokenizedCorpus(folder)
        except ValueError:
            log.warning("rebuilding the damaged token cache %s", folder.name)
            shutil.rmtree(folder, ignore_errors=True)  # ours, rebuilt below

    def fill(tmp: Path) -> None:
        _write_tokens(corpus, tokenizer, tmp, progress)
        progress.check()  # a cancel that came during the last batch is honoured too

    try:
        atomic_write_folder(folder, fill)  # a process that finished the same cache first is simply replaced
    except OSError as exc:
        raise CorpusError(
            f"Could not write the token cache {folder} ({exc.strerror or exc}); free space there, or set "
            f"{CACHE_ENV} to a folder on a disk with room."
        ) from exc
    return TokenizedCorpus(folder)


def _write_tokens(corpus: Corpus, tokenizer: MLMTokenizer, folder: Path, progress: Progress) -> None:
    dtype = np.uint16 if tokenizer.vocab_size <= 2**16 else np.uint32
    offsets = array("q", [0])
    total = corpus.documents
    with open(folder / "ids.bin", "wb") as ids_file, open(folder / "word_starts.bin", "wb") as starts_file:
        for batch in batches(corpus.iter_documents(), ENCODE_BATCH):
            encoded = tokenizer.encode_batch(batch)
            # one write per batch, through the file so that a full disk says so (NumPy's tofile gives byte counts)
            ids_file.write(np.concatenate([e.ids for e in encoded]).astype(dtype).data)
            starts_file.write(np.concatenate([e.word_starts for e in encoded]).data)
            for e in encoded:
                offsets.append(offsets[-1] + len(e.ids))
            progress.check()
            progress.report(len(offsets) - 1, total, "Tokenizing the corpus")
    if offsets[-1] == 0:
        raise CorpusError("The corpus gave no tokens with this tokenizer; check the corpus and the tokenizer.")
    np.save(folder / "offsets.npy", np.frombuffer(offsets, dtype=np.int64))
    meta = {"format": FORMAT_VERSION, "dtype": np.dtype(dtype).name, "tokens": int(offsets[-1]), "documents": total}
    (folder / "meta.json").write_text(json.dumps(meta))


class BlockSet:
    """Fixed-length blocks over some documents of a tokenized corpus."""

    def __init__(self, data: TokenizedCorpus, documents: np.ndarray, config: DataConfig, tokenizer: MLMTokenizer):
        self.data = data
        self.config = config
        self.cls_id, self.sep_id, self.pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
        self.content = config.max_seq_len - 2  # tokens per block between [CLS] and [SEP]
        self.doc_starts = data.offsets[documents]  # (D,)
        self.doc_lengths = data.offsets[documents + 1] - self.doc_starts  # (D,)
        self.documents = len(documents)
        if config.packing:
            spans = self.doc_lengths + 1  # each document is followed by [SEP] in the packed stream
            self.stream_ends = np.cumsum(spans)  # (D,)
            self.stream_starts = self.stream_ends - spans
            stream = int(self.stream_ends[-1]) if len(spans) else 0
            self.blocks = stream // self.content or (1 if stream else 0)
        else:
            pieces = np.maximum(1, -(-self.doc_lengths // self.content))  # ceil, at least one per document
            self.chunk_doc = np.repeat(np.arange(self.documents), pieces)  # (N,)
            first = np.cumsum(pieces) - pieces
            self.chunk_start = (np.arange(len(self.chunk_doc)) - first[self.chunk_doc]) * self.content
            self.blocks = len(self.chunk_doc)

    def __len__(self) -> int:
        return self.blocks

    @property
    def tokens(self) -> int:
        return int(self.doc_lengths.sum())

    def batch(self, indices: np.ndarray | list[int]) -> Batch:
        """The blocks at `indices` as (B, L) arrays."""
        indices = np.asarray(indices, dtype=np.int64)
        if self.config.packing:
            ids, starts, valid = self._packed(indices)
        else:
            ids, starts, valid = self._per_document(indices)
        rows = len(indices)
        length = self.config.max_seq_len
        input_ids = np.full((rows, length), self.pad_id, dtype=np.int64)
        word_start = np.zeros((rows, length), dtype=bool)
        input_ids[:, 0] = self.cls_id
        input_ids[:, 1:-1] = np.where(valid, ids, self.pad_id)
        word_start[:, 1:-1] = starts & valid
        word_start[:, 1] |= valid[:, 0]  # a block may begin inside a word
        ends = valid.sum(axis=1) + 1  # position of the closing [SEP]
        input_ids[np.arange(rows), ends] = self.sep_id
        special = (input_ids == self.cls_id) | (input_ids == self.sep_id) | (input_ids == self.pad_id)
        word_ids = np.where(special, -1, np.cumsum(word_start, axis=1) - 1)
        attention = np.arange(length)[None, :] <= ends[:, None]
        return Batch(input_ids, attention, word_ids)

    def _packed(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        stream_length = int(self.stream_ends[-1])
        positions = indices[:, None] * self.content + np.arange(self.content)[None, :]  # (B, C)
        valid = positions < stream_length
        positions = np.minimum(positions, stream_length - 1)
        doc = np.searchsorted(self.stream_ends, positions, side="right")  # (B, C)
        within = positions - self.stream_starts[doc]
        is_sep = within == self.doc_lengths[doc]
        source = self.doc_starts[doc] + np.minimum(within, np.maximum(self.doc_lengths[doc] - 1, 0))
        ids = np.where(is_sep, self.sep_id, self.data.ids[source])
        starts = np.where(is_sep, True, self.data.word_starts[source])
        return ids, starts, valid

    def _per_document(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        doc = self.chunk_doc[indices]  # (B,)
        offset = self.chunk_start[indices][:, None] + np.arange(self.content)[None, :]  # (B, C)
        valid = offset < self.doc_lengths[doc][:, None]
        source = self.doc_starts[doc][:, None] + np.where(valid, offset, 0)
        source = np.minimum(source, max(self.data.tokens - 1, 0))
        return self.data.ids[source], self.data.word_starts[source], valid


def split_documents(documents: int, config: DataConfig) -> tuple[np.ndarray, np.ndarray]:
    """Training and validation document indices: each document is held out with the configured chance,
    decided by the split seed alone, with at least one document on each side when there are two."""
    held_out = np.random.default_rng(config.split_seed).random(documents) < config.validation_fraction
    if documents >= 2 and config.validation_fraction > 0:
        if not held_out.any():
            held_out[-1] = True
        if held_out.all():
            held_out[0] = False
    return np.flatnonzero(~held_out), np.flatnonzero(held_out)


def split_blocks(data: TokenizedCorpus, config: DataConfig, tokenizer: MLMTokenizer) -> tuple[BlockSet, BlockSet]:
    """Training and validation blocks of a tokenized corpus."""
    train, validation = split_documents(data.documents, config)
    return BlockSet(data, train, config, tokenizer), BlockSet(data, validation, config, tokenizer)


class BlockOrder:
    """The blocks of each micro-batch of one process: a slice of an endless stream of epoch permutations, each
    decided by the seed and the epoch alone, so a resumed run goes on in the same order."""

    def __init__(self, blocks: int, batch_size: int, seed: int, rank: int = 0, world_size: int = 1) -> None:
        self.blocks, self.batch_size, self.seed = blocks, batch_size, seed
        self.rank, self.world_size = rank, world_size
        self._permutations: dict[int, np.ndarray] = {}

    def __call__(self, micro_batch: int) -> np.ndarray:
        size = self.batch_size
        start = (micro_batch * self.world_size + self.rank) * size
        epochs, within = np.divmod(np.arange(start, start + size), self.blocks)
        out = np.empty(size, dtype=np.int64)
        for epoch in np.unique(epochs).tolist():
            out[epochs == epoch] = self._permutation(epoch)[within[epochs == epoch]]
        return out

    def _permutation(self, epoch: int) -> np.ndarray:
        if epoch not in self._permutations:
            self._permutations = {e: p for e, p in self._permutations.items() if e >= epoch - 1}
            self._permutations[epoch] = np.random.default_rng([self.seed, epoch]).permutation(self.blocks)
        return self._permutations[epoch]
