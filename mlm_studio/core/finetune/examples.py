"""Labelled examples as the model reads them: token ids (and segment ids) laid out by the tokenizer's own
post-processor (BERT's `[CLS] A [SEP] B [SEP]` with segments 0 and 1, RoBERTa's `<s> A </s></s> B </s>`), the
longer text of a pair cut first to the model's length; for token classification each word's tag on its first
piece and its continuing form on the word's later pieces (as `transformers`' token-classification recipe trains
them, so that a pipeline grouping pieces finds whole words), the word scored and read on its first piece,
whatever the tokenizer's kind; kept in flat arrays (`Ragged`), a few bytes a token. Also the batches (of similar
lengths, padded only to the longest of each)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import torch
from tokenizers import Encoding, processors

from mlm_studio.core.data.labelled import Example, LabelledFile
from mlm_studio.core.data.masking import IGNORE_INDEX
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.progress import Progress

ID_TYPES = {"H": np.uint16, "i": np.int32}  # a token id as kept: 2 bytes where the vocabulary fits, else 4
REPORT_EXAMPLES = 1024  # examples encoded between two reports of progress
BUCKET_BATCHES = 50  # batches sorted by length together (enough to pad little, few enough to stay random)


@dataclass(frozen=True)
class Ragged:
    """Rows of different lengths in one flat array: row `i` is `flat[starts[i]:starts[i + 1]]` (a view)."""

    flat: np.ndarray
    starts: np.ndarray  # int64, one more than the rows

    @classmethod
    def of(cls, flat: array, lengths: array, dtype: type) -> Ragged:
        """From the rows' values written one after another (`flat`) and each row's length."""
        starts = np.zeros(len(lengths) + 1, dtype=np.int64)
        if len(lengths):
            np.cumsum(np.frombuffer(lengths, dtype=np.int32), out=starts[1:])
        return cls(np.frombuffer(flat, dtype=dtype) if len(flat) else np.zeros(0, dtype=dtype), starts)

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, row: int) -> np.ndarray:
        return self.flat[self.starts[row] : self.starts[row + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[row] for row in range(len(self)))

    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)


@dataclass(frozen=True)
class Encoded:
    """Examples as ids: each row's ids and labels (one label per example, or one per token), kept in flat arrays
    (a few bytes a token), for tasks of millions of examples."""

    ids: Ragged  # of `ID_TYPES`
    types: Ragged | None  # int8: each id's segment (None: all 0, a single text each)
    labels: Ragged  # int64, what training learns: IGNORE_INDEX where nothing is to learn
    scored: Ragged  # int64, where each example is scored: its words' first pieces, or 0 for its one label
    rows: np.ndarray  # each example's row in its file
    truncated: list[int]  # the rows of the examples cut to the model's length
    per_token: bool  # labels per token (token classification), else one per example

    def __len__(self) -> int:
        return len(self.ids)

    def lengths(self) -> np.ndarray:
        """Each example's length in tokens."""
        return self.ids.lengths()


def word_pieces(tokenizer: MLMTokenizer, words: tuple[str, ...]) -> tuple[list[int], list[int]]:
    """The words joined by spaces and encoded (no special tokens): (ids, for each id the index of the word its
    characters overlap, or -1 when it overlaps none)."""
    starts, position = [], 0
    for word in words:
        starts.append(position)
        position += len(word) + 1
    encoding = tokenizer.backend.encode(" ".join(words), add_special_tokens=False)
    word_of, word = [], 0
    for begin, end in encoding.offsets:
        while word < len(words) - 1 and begin >= starts[word] + len(words[word]):
            word += 1
        inside = end > begin and begin < starts[word] + len(words[word]) and end > starts[word]
        word_of.append(word if inside else -1)
    return list(encoding.ids), word_of


def first_pieces(word_of: list[int]) -> list[bool]:
    """Whether each piece (of `word_pieces`) is the first of its word: the one whose prediction is the word's."""
    seen, first = set(), []
    for word in word_of:
        first.append(word >= 0 and word not in seen)
        seen.add(word)
    return first


def continuing(tag: str, label_ids: dict[str, int]) -> str:
    """The tag a word's later pieces learn (`transformers`' `label_all_tokens`): I-X for B-X when the task has
    I-X, any other tag itself."""
    prefix, dash, kind = tag.partition("-")
    return f"I-{kind}" if prefix == "B" and dash and f"I-{kind}" in label_ids else tag


def with_inside_tags(labels: list[str]) -> list[str]:
    """Tags B-/I-/O with an I-X added for each B-X the task lacks one for (after the others): a word's later pieces
    learn it, so that a pipeline grouping pieces by their tags ("simple" aggregation) finds each word whole."""
    scheme = all(tag == "O" or (tag[:2] in ("B-", "I-") and len(tag) > 2) for tag in labels)
    if not scheme:
        return labels
    return labels + [f"I-{tag[2:]}" for tag in labels if tag.startswith("B-") and f"I-{tag[2:]}" not in labels]


def begin_inside(files: list[LabelledFile]) -> list[LabelledFile]:
    """Entity tags written BIOES (`E-X` ends an entity, `S-X` is one alone) as the B-/I- tags of the same entities
    (`S-X` as `B-X`, `E-X` as `I-X`): the tags a pipeline's "simple" aggregation groups as MLM Studio does, so
    that the tables, `--json` and an exported model find the same entities. Other tags are kept."""
    renamed = {"S": "B", "E": "I"}

    def tag(label: str) -> str:
        prefix, dash, kind = label.partition("-")
        return f"{renamed[prefix]}-{kind}" if dash and kind and prefix in renamed else label

    if not any(tag(label) != label for file in files for label in file.label_counts()):
        return files
    shared: dict[str, str] = {}
    return [
        replace(file, examples=[
            replace(example, labels=tuple(shared.setdefault(tag(t), tag(t)) for t in example.labels))
            for example in file.examples
        ])
        for file in files
    ]  # fmt: skip


def encode_examples(
    tokenizer: MLMTokenizer,
    examples: list[Example],
    label_ids: dict[str, int],
    task: str,
    limit: int,
    progress: Progress | None = None,
) -> Encoded:
    """Examples as ids of at most `limit` tokens, special tokens included (longer ones are cut: counted); the
    encoding reported to `progress`."""
    kind = "H" if tokenizer.vocab_size <= np.iinfo(np.uint16).max + 1 else "i"
    ids, types, labels, scored = array(kind), array("b"), array("q"), array("q")  # as `Encoded` keeps them
    lengths, label_lengths, scored_lengths, truncated = array("i"), array("i"), array("i"), []
    paired = False  # whether a segment id other than 0 was met
    budget = limit - 2
    texts: list[list[Encoding]] = []  # the texts of the next `REPORT_EXAMPLES` examples, encoded together
    for done, example in enumerate(examples):
        if done % REPORT_EXAMPLES == 0:
            if progress is not None:
                progress.check()
                progress.report(done, len(examples), f"Encoding {len(examples):,} examples")
            if task != "tokens":
                texts = _encoded_texts(tokenizer, examples[done : done + REPORT_EXAMPLES])
        if task == "tokens":
            row, targets, places, cut = tagged(tokenizer, example, label_ids, budget)
            segments: list[int] = []
            labels.extend(targets)
            scored.extend(places)
            label_lengths.append(len(row))
            scored_lengths.append(len(places))
        else:
            encoding, cut = laid_out(tokenizer, texts[done % REPORT_EXAMPLES], limit)
            row, segments = encoding.ids, encoding.type_ids
            labels.append(label_ids[example.labels[0]])
            scored.append(0)
        if cut:
            truncated.append(example.row)
        if not paired and any(segments):  # the first second text: the examples before it all segment 0
            paired = True
            types.frombytes(bytes(len(ids)))
        if paired:
            types.extend(segments)
        ids.extend(row)
        lengths.append(len(row))
    if task != "tokens":
        label_lengths = scored_lengths = array("i", [1]) * len(examples)
    return Encoded(
        Ragged.of(ids, lengths, ID_TYPES[kind]),
        Ragged.of(types, lengths, np.int8) if paired else None,
        Ragged.of(labels, label_lengths, np.int64),
        Ragged.of(scored, scored_lengths, np.int64),
        np.asarray([example.row for example in examples], dtype=np.int64),
        truncated,
        task == "tokens",
    )


def tagged(
    tokenizer: MLMTokenizer, example: Example, label_ids: dict[str, int], budget: int
) -> tuple[list[int], list[int], list[int], bool]:
    """Tagged words as ids with at most `budget` pieces between `[CLS]` and `[SEP]`: (ids, what each id learns,
    the places its words are scored, whether it was cut)."""
    pieces, word_of = word_pieces(tokenizer, example.inputs)
    first = first_pieces(word_of)[:budget]
    tags = [label_ids[tag] for tag in example.labels]
    later = [label_ids[continuing(tag, label_ids)] for tag in example.labels]
    targets = [
        IGNORE_INDEX if w < 0 else tags[w] if f else later[w] for w, f in zip(word_of[:budget], first, strict=True)
    ]
    places = [place + 1 for place, f in enumerate(first) if f]  # after [CLS]
    row = [tokenizer.cls_id, *pieces[:budget], tokenizer.sep_id]
    return row, [IGNORE_INDEX, *targets, IGNORE_INDEX], places, len(pieces) > budget


def encode_texts(tokenizer: MLMTokenizer, texts: tuple[str, ...], limit: int) -> tuple[list[int], list[int], bool]:
    """A text or a pair as the tokenizer's post-processor lays it out, in at most `limit` ids (the longer text
    cut first, as `transformers`' "longest_first"): (ids, segment ids, whether a text was cut)."""
    encoding, cut = lay_out(tokenizer, texts, limit)
    return encoding.ids, encoding.type_ids, cut


def lay_out(tokenizer: MLMTokenizer, texts: tuple[str, ...], limit: int) -> tuple[Encoding, bool]:
    """As `encode_texts`, the whole encoding (offsets and special-token mask too) and whether a text was cut."""
    return laid_out(tokenizer, [tokenizer.backend.encode(text, add_special_tokens=False) for text in texts], limit)


def _encoded_texts(tokenizer: MLMTokenizer, examples: list[Example]) -> list[list[Encoding]]:
    """Each example's texts encoded without special tokens, all in one call (which the `tokenizers` library
    spreads over the processor's cores)."""
    flat = tokenizer.backend.encode_batch(
        [text for example in examples for text in example.inputs], add_special_tokens=False
    )
    encoded, at = [], 0
    for example in examples:
        encoded.append(flat[at : at + len(example.inputs)])
        at += len(example.inputs)
    return encoded


def laid_out(tokenizer: MLMTokenizer, parts: list[Encoding], limit: int) -> tuple[Encoding, bool]:
    """A text's encoding (or a pair's two), without special tokens, laid out as `lay_out` does (cut in place)."""
    processor = tokenizer.backend.post_processor or bert_layout(tokenizer)
    room = limit - processor.num_special_tokens_to_add(len(parts) == 2)
    lengths = [len(part.ids) for part in parts]
    keep = _fit(lengths, room)
    for part, length, kept in zip(parts, lengths, keep, strict=True):
        if kept < length:
            part.truncate(kept)
    return processor.process(parts[0], parts[1] if len(parts) == 2 else None, True), keep != lengths


def bert_layout(tokenizer: MLMTokenizer) -> processors.PostProcessor:
    """BERT's layout with the tokenizer's own classification and separator tokens, for a tokenizer without one."""
    cls, sep = tokenizer.specials.cls, tokenizer.specials.sep
    return processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, tokenizer.cls_id), (sep, tokenizer.sep_id)],
    )


def _fit(lengths: list[int], room: int) -> list[int]:
    """How many ids of a text (or of each text of a pair) to keep for them to fit in `room`, as the `tokenizers`
    library's "longest_first" decides: the longer text cut to what the shorter leaves, both to half if need be."""
    room = max(room, 0)
    if sum(lengths) <= room:
        return list(lengths)
    if len(lengths) == 1:
        return [room]
    short, long = sorted(lengths)
    long = short if short > room else max(short, room - short)
    if short + long > room:
        short, long = room // 2, room // 2 + room % 2
    return [short, long] if lengths[0] <= lengths[1] else [long, short]


def batch_order(lengths: np.ndarray, batch_size: int, seed: int) -> list[np.ndarray]:
    """One epoch's batches: a seeded shuffle, then within each group of `BUCKET_BATCHES` batches the examples
    sorted by length (so a batch pads little), the batches themselves shuffled."""
    rng, lengths = np.random.default_rng(seed), np.asarray(lengths)
    order = rng.permutation(len(lengths))
    size = batch_size * BUCKET_BATCHES
    batches = []
    for start in range(0, len(order), size):
        group = order[start : start + size]
        group = group[np.argsort(lengths[group], kind="stable")]
        batches += [group[i : i + batch_size] for i in range(0, len(group), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def collate(data: Encoded, indices: np.ndarray, pad_id: int, device: torch.device):
    """(ids, attention mask, segment ids, labels) of some examples, padded to the longest; token labels padded
    with IGNORE_INDEX."""
    length = max(len(data.ids[i]) for i in indices)
    ids = np.full((len(indices), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(indices), length), dtype=np.int64)
    types = np.zeros((len(indices), length), dtype=np.int64)
    labels = np.full((len(indices), length), IGNORE_INDEX, dtype=np.int64) if data.per_token else None
    for row, i in enumerate(indices):
        n = len(data.ids[i])
        ids[row, :n] = data.ids[i]
        mask[row, :n] = 1
        if data.types is not None:
            types[row, :n] = data.types[i]
        if labels is not None:
            labels[row, :n] = data.labels[i]
    if labels is None:
        labels = np.concatenate([data.labels[i] for i in indices])
    return tuple(torch.from_numpy(array).to(device) for array in (ids, mask, types, labels))
