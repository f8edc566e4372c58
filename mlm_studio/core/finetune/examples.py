"""Labelled examples as the model reads them: token ids (and segment ids) laid out by the tokenizer's own
post-processor (BERT's `[CLS] A [SEP] B [SEP]` with segments 0 and 1, RoBERTa's `<s> A </s></s> B </s>`), the
longer text of a pair cut first to the model's length; for token classification each word's tag on its first
piece and its continuing form on the word's later pieces (as `transformers`' token-classification recipe trains
them, so that a pipeline grouping pieces finds whole words), the word scored and read on its first piece,
whatever the tokenizer's kind. Also the stratified split and the batches (of similar lengths, padded only to the
longest of each)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
from tokenizers import Encoding, processors

from mlm_studio.core.data.labelled import Example, LabelledFile, TaskError
from mlm_studio.core.data.masking import IGNORE_INDEX
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.progress import Progress
from mlm_studio.core.shown import shown

SPLIT_SHARES = (0.8, 0.1, 0.1)  # training, validation, test
ID_TYPE = np.int32  # a token id as an encoded example keeps it (vocabularies are far smaller than 2**31)
REPORT_EXAMPLES = 1024  # examples encoded between two reports of progress
BUCKET_BATCHES = 50  # batches sorted by length together (enough to pad little, few enough to stay random)


@dataclass(frozen=True)
class Encoded:
    """Examples as ids: each row's ids and labels (one label per example, or one per token)."""

    ids: list[np.ndarray]  # of `ID_TYPE`
    types: list[np.ndarray]  # int8: each id's segment (0 for the first text, as the tokenizer says for a pair's second)
    labels: list[np.ndarray]  # what training learns: IGNORE_INDEX where nothing is to learn
    scored: list[np.ndarray]  # where each example is scored: its words' first pieces, or 0 for its one label
    rows: list[int]  # each example's row in its file
    truncated: list[int]  # the rows of the examples cut to the model's length
    per_token: bool  # labels per token (token classification), else one per example

    def __len__(self) -> int:
        return len(self.ids)


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
    encoding reported to `progress`. Kept compact, for tasks of millions of examples: ids as `ID_TYPE`, and what
    many examples hold alike (a single text's segment ids, a label, the one place it is scored) one shared array."""
    ids, types, labels, scored, truncated = [], [], [], [], []
    budget = limit - 2
    single: dict[int, np.ndarray] = {}  # a single text's segment ids (zeros), by length
    label_of = {i: np.asarray([i], dtype=np.int64) for i in label_ids.values()}  # shared, never written to
    first_place = np.zeros(1, dtype=np.int64)
    texts: list[list[Encoding]] = []  # the texts of the next `REPORT_EXAMPLES` examples, encoded together
    for done, example in enumerate(examples):
        if done % REPORT_EXAMPLES == 0:
            if progress is not None:
                progress.check()
                progress.report(done, len(examples), f"Encoding {len(examples):,} examples")
            if task != "tokens":
                texts = _encoded_texts(tokenizer, examples[done : done + REPORT_EXAMPLES])
        if task == "tokens":
            pieces, word_of = word_pieces(tokenizer, example.inputs)
            first = first_pieces(word_of)[:budget]
            tags = [label_ids[tag] for tag in example.labels]
            later = [label_ids[continuing(tag, label_ids)] for tag in example.labels]
            targets = [
                IGNORE_INDEX if w < 0 else tags[w] if f else later[w]
                for w, f in zip(word_of[:budget], first, strict=True)
            ]
            if len(pieces) > budget:
                truncated.append(example.row)
            row = [tokenizer.cls_id, *pieces[:budget], tokenizer.sep_id]
            segments = [0] * len(row)
            labels.append(np.asarray([IGNORE_INDEX, *targets, IGNORE_INDEX], dtype=np.int64))
            scored.append(np.flatnonzero(first) + 1)  # after [CLS]
        else:
            encoding, cut = laid_out(tokenizer, texts[done % REPORT_EXAMPLES], limit)
            row, segments = encoding.ids, encoding.type_ids
            if cut:
                truncated.append(example.row)
            labels.append(label_of[label_ids[example.labels[0]]])
            scored.append(first_place)
        ids.append(np.asarray(row, dtype=ID_TYPE))
        if any(segments):
            types.append(np.asarray(segments, dtype=np.int8))
        else:
            types.append(single.setdefault(len(segments), np.zeros(len(segments), dtype=np.int8)))
    return Encoded(ids, types, labels, scored, [e.row for e in examples], truncated, task == "tokens")


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


def as_written(text: str) -> str:
    return text


Normalise = Callable[[str], str]  # a text as the model reads it: `MLMTokenizer.normalised`, or `as_written`


def text_key(example: Example, normalise: Normalise = as_written) -> tuple[str, ...]:
    """What makes two examples copies of each other: their texts (or words) as `normalise` gives them (as the
    model's tokenizer reads them: an uncased one's "The" is "the"), spacing aside."""
    return tuple(" ".join(normalise(text).split()) for text in example.inputs)


def copy_key(example: Example, normalise: Normalise = as_written) -> bytes:
    """`text_key` as 16 bytes of its hash: a task of millions of examples holds these, not a copy of each text."""
    joined = "\0".join(text_key(example, normalise))
    return hashlib.blake2b(joined.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def copy_groups(examples: list[Example], normalise: Normalise = as_written) -> list[list[int]]:
    """The examples' indices grouped by text (`copy_key`), each group in the order of its first member."""
    groups: dict[bytes, list[int]] = {}
    for index, example in enumerate(examples):
        groups.setdefault(copy_key(example, normalise), []).append(index)
    return list(groups.values())


def stratified_split(
    examples: list[Example], seed: int, task: str, normalise: Normalise = as_written
) -> tuple[list[int], list[int], list[int]]:
    """Indices of training, validation and test (`SPLIT_SHARES`): for classification, each label in that
    proportion, at least one example of it in each part; for tokens, a seeded shuffle. Copies of a text stay
    together on one side (a test text that is also a training text would score what was learned by heart): the
    shares are of distinct texts (`text_key` by `normalise`), each counted under the label of its first copy."""
    rng = np.random.default_rng(seed)
    groups = copy_groups(examples, normalise)
    if task == "tokens":
        if len(groups) < 3:
            raise TaskError(f"{len(groups)} distinct sentence(s) cannot be split into training, validation and test")
        order = rng.permutation(len(groups)).tolist()
        held = max(1, round(len(groups) * SPLIT_SHARES[1]))
        return (
            _members(groups, order[2 * held :]),
            _members(groups, order[:held]),
            _members(groups, order[held : 2 * held]),
        )
    by_label: dict[str, list[int]] = {}
    for number, group in enumerate(groups):
        by_label.setdefault(examples[group[0]].labels[0], []).append(number)
    parts: tuple[list[int], list[int], list[int]] = ([], [], [])
    for label in sorted(by_label):
        members = by_label[label]
        if len(members) < 3:
            distinct = " distinct" if len(groups) < len(examples) else ""
            raise TaskError(
                f"the label {shown(label)} has only {len(members)}{distinct} example(s); a split into training, "
                "validation and test needs at least 3 of each (or give your own validation and test files)"
            )
        shuffled = [members[i] for i in rng.permutation(len(members))]
        held = max(1, round(len(members) * SPLIT_SHARES[1]))
        parts[1].extend(shuffled[:held])
        parts[2].extend(shuffled[held : 2 * held])
        parts[0].extend(shuffled[2 * held :])
    return _members(groups, parts[0]), _members(groups, parts[1]), _members(groups, parts[2])


def copies_said(
    names: list[str],
    parts: tuple[list[Example], list[Example], list[Example]],
    split: bool,
    normalise: Normalise = as_written,
) -> list[str]:
    """What the task's repeated texts (`text_key` by `normalise`) mean, in words: copies within the file that was
    `split` (kept on one side), or, for files given apart (`names`: training, validation, test), validation and
    test texts that are also training texts, whose scores are then measured on what the model trained on."""
    if split:
        examples = [example for part in parts for example in part]
        copies = len(examples) - len(copy_groups(examples, normalise))
        if not copies:
            return []
        return [
            f"{names[0]}: {copies:,} of its {len(examples):,} examples repeat the text of another; the split keeps "
            "each text's copies on one side, so no validation or test text is a training text"
        ]
    said = []
    for name, part, kind in zip(names[1:], parts[1:], ("validation", "test"), strict=True):
        seen = seen_in_training(parts[0], part, normalise)
        if seen:
            said.append(
                f"{name}: {seen:,} of its {len(part):,} {kind} examples have a text that is also in the training file "
                f"({names[0]}): their {kind} scores are measured on texts the model trained on, not on unseen ones"
            )
    return said


def seen_in_training(train: list[Example], part: list[Example], normalise: Normalise = as_written) -> int:
    """How many examples of `part` have a text that is also a training text (`text_key` by `normalise`)."""
    trained = {copy_key(example, normalise) for example in train}
    return sum(copy_key(example, normalise) in trained for example in part)


def _members(groups: list[list[int]], numbers: list[int]) -> list[int]:
    return sorted(index for number in numbers for index in groups[number])


def batch_order(lengths: list[int], batch_size: int, seed: int) -> list[np.ndarray]:
    """One epoch's batches: a seeded shuffle, then within each group of `BUCKET_BATCHES` batches the examples
    sorted by length (so a batch pads little), the batches themselves shuffled."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(lengths))
    size = batch_size * BUCKET_BATCHES
    batches = []
    for start in range(0, len(order), size):
        group = order[start : start + size]
        group = group[np.argsort([lengths[i] for i in group], kind="stable")]
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
        types[row, :n] = data.types[i]
        if labels is not None:
            labels[row, :n] = data.labels[i]
    if labels is None:
        labels = np.concatenate([data.labels[i] for i in indices])
    return tuple(torch.from_numpy(array).to(device) for array in (ids, mask, types, labels))
