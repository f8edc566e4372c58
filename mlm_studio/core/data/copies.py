"""Repeated texts and the split that keeps them on one side: two examples are copies when the model reads their
texts alike (as its tokenizer normalises them, spacing aside); each example is known by a 16-byte hash of that
(a task of millions holds these, computed once, not a copy of each text); a split of one file puts every text's
copies in one part, and the copies within a file, or the validation and test texts that are also training texts
of files given apart, are said in words."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from mlm_studio.core.data.labelled import Example, TaskError
from mlm_studio.core.progress import Progress
from mlm_studio.core.shown import shown

SPLIT_SHARES = (0.8, 0.1, 0.1)  # training, validation, test
KEY = np.dtype([("high", "<u8"), ("low", "<u8")])  # a `copy_key` as one comparable array element
REPORT_KEYS = 65_536  # examples hashed between two reports of progress

Normalise = Callable[[str], str]  # a text as the model reads it: `MLMTokenizer.normalised`, or `as_written`


def as_written(text: str) -> str:
    return text


def text_key(example: Example, normalise: Normalise = as_written) -> tuple[str, ...]:
    """What makes two examples copies of each other: their texts (or words) as `normalise` gives them (as the
    model's tokenizer reads them: an uncased one's "The" is "the"), spacing aside."""
    return tuple(" ".join(normalise(text).split()) for text in example.inputs)


def copy_key(example: Example, normalise: Normalise = as_written) -> bytes:
    """`text_key` as 16 bytes of its hash."""
    joined = "\0".join(text_key(example, normalise))
    return hashlib.blake2b(joined.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def copy_keys(
    examples: list[Example], normalise: Normalise = as_written, progress: Progress | None = None
) -> np.ndarray:
    """Each example's `copy_key`, in one array of `KEY` (16 bytes an example); the hashing reported to
    `progress`."""
    keys = bytearray(KEY.itemsize * len(examples))
    for index, example in enumerate(examples):
        if progress is not None and index % REPORT_KEYS == 0:
            progress.check()
            progress.report(index, len(examples), f"Finding repeated texts among {len(examples):,} examples")
        keys[KEY.itemsize * index : KEY.itemsize * (index + 1)] = copy_key(example, normalise)
    return np.frombuffer(keys, dtype=KEY)


@dataclass(frozen=True)
class Copies:
    """Examples grouped by text: each example's group, the groups numbered in the order of their first members."""

    group_of: np.ndarray  # per example
    firsts: np.ndarray  # per group: its first example

    @classmethod
    def of(cls, keys: np.ndarray) -> Copies:
        _, firsts, inverse = np.unique(keys, return_index=True, return_inverse=True)
        order = np.argsort(firsts, kind="stable")
        number = np.empty(len(firsts), dtype=np.int64)
        number[order] = np.arange(len(firsts))
        return cls(number[inverse.reshape(-1)], firsts[order])

    def __len__(self) -> int:
        return len(self.firsts)

    def members(self, groups: list[int]) -> list[int]:
        """The examples of `groups`, in order."""
        chosen = np.zeros(len(self), dtype=bool)
        chosen[groups] = True
        return np.flatnonzero(chosen[self.group_of]).tolist()


def stratified_split(
    examples: list[Example], seed: int, task: str, keys: np.ndarray | None = None
) -> tuple[list[int], list[int], list[int]]:
    """Indices of training, validation and test (`SPLIT_SHARES`): for classification, each label in that
    proportion, at least one example of it in each part; for tokens, a seeded shuffle. Copies of a text stay
    together on one side (a test text that is also a training text would score what was learned by heart): the
    shares are of distinct texts (by `keys`, the examples' `copy_keys`: as written when not given), each counted
    under the label of its first copy."""
    rng = np.random.default_rng(seed)
    groups = Copies.of(copy_keys(examples) if keys is None else keys)
    if task == "tokens":
        if len(groups) < 3:
            raise TaskError(f"{len(groups)} distinct sentence(s) cannot be split into training, validation and test")
        order = rng.permutation(len(groups)).tolist()
        held = max(1, round(len(groups) * SPLIT_SHARES[1]))
        return groups.members(order[2 * held :]), groups.members(order[:held]), groups.members(order[held : 2 * held])
    by_label: dict[str, list[int]] = {}
    for number, first in enumerate(groups.firsts.tolist()):
        by_label.setdefault(examples[first].labels[0], []).append(number)
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
    return groups.members(parts[0]), groups.members(parts[1]), groups.members(parts[2])


def seen_in_training(train_keys: np.ndarray, keys: np.ndarray) -> int:
    """How many of the examples of `keys` have a text that is also a training text (both `copy_keys`)."""
    return int(np.isin(keys, train_keys).sum())


@dataclass(frozen=True)
class Split:
    """The training, validation and test examples (iterated and indexed as those three parts), each part's
    `copy_keys`, and whether they are a split of one file (else files given apart)."""

    parts: tuple[list[Example], list[Example], list[Example]]
    keys: tuple[np.ndarray, np.ndarray, np.ndarray]
    of_one_file: bool

    @classmethod
    def of(cls, examples: list[Example], seed: int, task: str, keys: np.ndarray) -> Split:
        """`examples` split by `stratified_split`."""
        indices = stratified_split(examples, seed, task, keys)
        return cls(tuple([examples[i] for i in part] for part in indices), tuple(keys[part] for part in indices), True)

    def __iter__(self) -> Iterator[list[Example]]:
        return iter(self.parts)

    def __getitem__(self, part):
        return self.parts[part]

    def __len__(self) -> int:
        return len(self.parts)

    def repeats(self) -> int:
        """How many examples repeat the text of an earlier one."""
        keys = np.concatenate(self.keys)
        return len(keys) - len(np.unique(keys))

    def seen_in_training(self, part: int = 2) -> int:
        """How many examples of `part` (by default the test) have a text that is also a training text."""
        return seen_in_training(self.keys[0], self.keys[part])


def copies_said(names: list[str], split: Split) -> list[str]:
    """What the task's repeated texts mean, in words: copies within the file that was split (kept on one side), or,
    for files given apart (`names`: training, validation, test), validation and test texts that are also
    training texts, whose scores are then measured on what the model trained on."""
    if split.of_one_file:
        copies, examples = split.repeats(), sum(len(part) for part in split)
        if not copies:
            return []
        return [
            f"{names[0]}: {copies:,} of its {examples:,} examples repeat the text of another; the split keeps "
            "each text's copies on one side, so no validation or test text is a training text"
        ]
    said = []
    for number, (name, kind) in enumerate(zip(names[1:], ("validation", "test"), strict=True), start=1):
        seen = split.seen_in_training(number)
        if seen:
            said.append(
                f"{name}: {seen:,} of its {len(split[number]):,} {kind} examples have a text that is also in the "
                f"training file ({names[0]}): their {kind} scores are measured on texts the model trained on, not "
                "on unseen ones"
            )
    return said
