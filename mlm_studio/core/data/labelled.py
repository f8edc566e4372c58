"""Labelled files for fine-tuning, read by the corpus reader: texts (or text pairs) with a label for sequence
classification; words with a tag each, as JSON Lines / table rows or CoNLL-2003 columns, for token
classification. Column names are found among the usual ones unless given; every problem that makes a file
unusable is one sentence naming the file and its row or line."""

from __future__ import annotations

import csv
import hashlib
import heapq
import io
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mlm_studio.core.data.columnar import schema_names
from mlm_studio.core.data.compressed import opened
from mlm_studio.core.data.corpus import SourceReport
from mlm_studio.core.data.formats import TABLE_FORMATS, TABLE_KINDS, kind_of, read_decoded, records, sniff_encoding
from mlm_studio.core.data.rows import MAX_VALUE_CHARS, IssueLog, SourceSkipped, clipped, too_long
from mlm_studio.core.errors import UserError
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.json_text import read_json

ROW = "\0row"  # the key under which the reader gives each row's number
# the names looked for, in order, when a column is not given
TEXT_NAMES = ("text", "sentence", "sentence1", "premise", "question", "document", "content", "review")
PAIR_NAMES = ("text_pair", "sentence2", "hypothesis", "text2")
LABEL_NAMES = ("label", "labels", "category", "class", "target", "intent", "sentiment")
WORD_NAMES = ("tokens", "words")
TAG_NAMES = ("tags", "ner_tags", "labels", "tag")
DOCSTART = "-DOCSTART-"


class TaskError(UserError):
    """A labelled file (or the task made of it) cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Example:
    """One labelled example: a text (and its pair) with one label, or words with one tag each (a file's examples
    share one string for each label: a large file holds its texts, not a copy of a label per row)."""

    row: int  # its line or row in the file (a CoNLL sentence: its first line)
    inputs: tuple[str, ...]
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Columns:
    """The columns read: the text (or words), the label (or tags), and a second text for pairs ("" for none)."""

    text: str
    label: str
    pair: str = ""


@dataclass(frozen=True)
class LabelledFile:
    path: Path
    task: str  # "classification" | "tokens"
    examples: list[Example]
    columns: Columns | None  # None for a CoNLL file
    issues: IssueLog  # the rows left out
    encoding: str = ""
    encoding_note: str = ""  # why it was read in a fallback encoding ("" when it was not)
    sampled_from: int = 0  # when `examples` are a `Sample` of the file's: how many usable rows it has, else 0
    repeats: Repeats | None = None  # of a table read as a `Sample`: the rows whose text was read before

    def label_counts(self) -> Counter[str]:
        return Counter(label for example in self.examples for label in example.labels)

    @property
    def read_once(self) -> int:
        """The rows whose text was read before, read once (0 when the file was read whole)."""
        return self.repeats.rows if self.repeats is not None else 0

    @property
    def skipped(self) -> str:
        """The rows left out, in words ("" for none)."""
        return self.issues.summary()

    @property
    def texts(self) -> list[str]:
        """Each example's (first) text."""
        return [example.inputs[0] for example in self.examples]

    @property
    def labels(self) -> list[str]:
        """Each example's (first) label."""
        return [example.labels[0] for example in self.examples]

    @property
    def report(self) -> SourceReport:
        """What happened reading it, as a corpus source says it: its encoding and the rows left out."""
        return SourceReport(self.path, kind_of(self.path), True, encoding=self.encoding,
                            encoding_note=self.encoding_note, documents=len(self.examples),
                            issues=tuple(self.issues.kept), issue_count=self.issues.count)  # fmt: skip


def read_labelled_file(
    path: str | Path,
    task: str,
    columns: Columns | None = None,
    max_chars: int = MAX_VALUE_CHARS,
    progress: Progress | None = None,
    sample: int = 0,
) -> LabelledFile:
    """The examples of a labelled file, each text kept up to `max_chars`; `columns` overrides the names found.
    With `sample`, a table keeps at most that many distinct texts (a `Sample`), whatever the file's size. A
    table's reading is reported to `progress` (and stops when it is cancelled). TaskError says why it cannot
    serve."""
    path = Path(path)
    if path.is_dir():
        raise TaskError(f"{path}: a folder, not a labelled file; give the file itself")
    if not path.exists():
        raise TaskError(f"{path}: no such file")
    if not path.is_file():
        raise TaskError(f"{path}: not a regular file (a device or a pipe); give a labelled file")
    if path.stat().st_size == 0:
        raise TaskError(f"{path}: the file is empty; give a file with a header line and labelled rows")
    kind = kind_of(path)
    try:
        if task == "tokens" and kind not in ("jsonl", "parquet", "arrow"):
            (examples, encoding, note), issues = _conll(path, progress), IssueLog()
            found, usable = None, 0
        elif kind in TABLE_KINDS:
            found = _columns(path, kind, task, columns)
            (examples, issues, usable), encoding, note = _table_examples(
                path, kind, task, found, max_chars, progress, sample
            )
        else:
            raise TaskError(f"{path.name}: a labelled file for classification is {TABLE_FORMATS}")
    except SourceSkipped as exc:
        raise TaskError(f"{path.name}: {exc}") from None
    except OSError as exc:
        raise TaskError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    kept = examples.examples() if isinstance(examples, Sample) else examples
    if not kept:
        raise TaskError(f"{path.name} has no usable rows" + (f" ({issues.summary()})" if issues.count else ""))
    repeats = examples.repeats if isinstance(examples, Sample) else None
    sampled_from = usable if repeats is not None and repeats.overflowed else 0
    return LabelledFile(path, task, kept, found, issues, encoding, note, sampled_from, repeats)


@dataclass
class Repeats:
    """The rows of a table whose text (spacing aside) was read before: read once, under the first copy's label."""

    rows: int = 0
    mixed: int = 0  # texts a later copy gives another label
    named: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # the first of those: (row, label) each
    overflowed: bool = False  # distinct texts were left out of the sample: it is a sample, not the whole file

    def note(self, name: str) -> str:
        """These repeats in words ("" for none)."""
        if not self.rows:
            return ""
        said = f"{name}: {self.rows:,} repeated texts counted once"
        if self.mixed:
            shown = "; ".join(f"'{clipped(text, 40)}' ({_labels_in(rows)})" for text, rows in self.named.items())
            said += f", {self.mixed:,} of them with more than one label, read under the first: {shown}"
        return said

    def mixed_copy(self, text: str, first: Example, example: Example, again: bool) -> None:
        """A copy of `first`'s text under another label (`again`: not the text's first such copy): counted once per
        text, the first such texts' labels named with the row of each label's first copy."""
        if not again:
            self.mixed += 1
            if len(self.named) < NAMED_REPEATS:
                self.named[text] = [(first.row, first.labels[0])]
        rows = self.named.get(text)
        if rows is not None and all(label != example.labels[0] for _, label in rows):
            rows.append((example.row, example.labels[0]))


def _labels_in(rows: list[tuple[int, str]]) -> str:
    """'rows 3 and 9' for two labels, 'rows 3, 9 and 12: 3 labels' for more (the rows of each label's first copy)."""
    numbers = [str(row) for row, _ in rows[:MAX_ROWS_NAMED]]
    listed = f"{', '.join(numbers[:-1])} and {numbers[-1]}" + (", …" if len(rows) > MAX_ROWS_NAMED else "")
    return f"rows {listed}" + (f": {len(rows)} labels" if len(rows) > 2 else "")


NAMED_REPEATS = 3  # texts with more than one label named
MAX_ROWS_NAMED = 5  # rows named of one such text


class Sample:
    """At most `size` distinct texts (spacing aside) of those offered, the same whatever their order: those whose
    hash ranks lowest, each under its first copy's label; memory holds these alone, however many are offered."""

    def __init__(self, size: int) -> None:
        self.size, self.offered, self.repeats = size, 0, Repeats()
        self._ranked: list[tuple[int, tuple[str, ...]]] = []  # a heap of (-rank, text): the highest rank first
        self._kept: dict[tuple[str, ...], Example] = {}
        self._mixed: set[tuple[str, ...]] = set()  # texts of more than one label

    def append(self, example: Example) -> None:
        self.offered += 1
        key = tuple(" ".join(text.split()) for text in example.inputs)
        first = self._kept.get(key)
        if first is not None:
            self.repeats.rows += 1
            if first.labels != example.labels:
                self.repeats.mixed_copy(" | ".join(key), first, example, again=key in self._mixed)
                self._mixed.add(key)
            return
        self.repeats.overflowed |= len(self._ranked) >= self.size
        digest = hashlib.blake2b("\0".join(key).encode("utf-8", "surrogatepass"), digest_size=8).digest()
        rank = int.from_bytes(digest, "big")
        if len(self._ranked) < self.size:
            heapq.heappush(self._ranked, (-rank, key))
        elif rank < -self._ranked[0][0]:
            del self._kept[heapq.heapreplace(self._ranked, (-rank, key))[1]]
        else:
            return
        self._kept[key] = example

    def examples(self) -> list[Example]:
        """The texts kept, in the file's order."""
        return sorted(self._kept.values(), key=lambda example: example.row)


def _columns(path: Path, kind: str, task: str, given: Columns | None) -> Columns:
    """The columns given, or those of the usual names the file's header holds."""
    if given is not None and given.text and given.text == given.label:
        raise TaskError(f"{path.name}: the text and label columns must differ, not both '{clipped(given.text, 40)}'")
    if given is not None and given.text and given.label:
        return given
    names = column_names(path, kind)
    text_names, label_names = (TEXT_NAMES, LABEL_NAMES) if task == "classification" else (WORD_NAMES, TAG_NAMES)
    text = (given.text if given else "") or next((n for n in text_names if n in names), "")
    label = (given.label if given else "") or next((n for n in label_names if n in names and n != text), "")
    pair = (given.pair if given else "") or (
        next((n for n in PAIR_NAMES if n in names), "") if task == "classification" else ""
    )
    if not text or not label:
        what, option = ("text", "--text-column") if not text else ("label", "--label-column")
        raise TaskError(
            f"{path.name}: no {what} column among its columns ({clipped(', '.join(names) or 'none')}); "
            f"name it with {option}"
        )
    return Columns(text, label, pair)


def columns_of(path: Path, task: str) -> Columns:
    """The columns a table's header gives by their usual names, as a run that was given none read them."""
    try:
        return _columns(path, kind_of(path), task, None)
    except SourceSkipped as exc:
        raise TaskError(f"{path.name}: {exc}") from None


def pair_column(path: Path, given: Columns | None = None) -> str:
    """The second-text column a classification file has (by the columns `given`, else by its header's usual
    names), "" for texts alone; read from its header only."""
    if given is not None and given.pair:
        return given.pair
    try:
        return _columns(path, kind_of(path), "classification", given).pair
    except SourceSkipped as exc:
        raise TaskError(f"{path.name}: {exc}") from None


def column_names(path: Path, kind: str) -> list[str]:
    """The column names of a table file: its header, its first JSON object's keys, its schema."""
    if kind in ("parquet", "arrow"):
        return schema_names(path, kind)
    with opened(path) as (raw, _):
        lines = _bounded_lines(io.TextIOWrapper(raw, encoding=sniff_encoding(path), errors="replace", newline=""))
        if kind == "jsonl":
            line = next((line for line in lines if line.strip()), "")
            try:
                first = read_json(line) if line else None
            except ValueError:
                return []
            return list(first) if isinstance(first, dict) else []
        header = next((row for row in csv.reader(lines, delimiter="," if kind == "csv" else "\t") if row), [])
        return [name.strip().lstrip("\ufeff") for name in header]


def _bounded_lines(text: io.TextIOBase) -> Iterator[str]:
    """The lines of a text, none read whole past `MAX_VALUE_CHARS` (SourceSkipped says so)."""
    while line := text.readline(MAX_VALUE_CHARS + 1):
        if len(line) > MAX_VALUE_CHARS:
            raise SourceSkipped(f"its first line is {too_long('break it into lines or name the columns')}")
        yield line


def _table_examples(
    path: Path,
    kind: str,
    task: str,
    columns: Columns,
    max_chars: int,
    progress: Progress | None = None,
    sample: int = 0,
) -> tuple[tuple[list[Example] | Sample, IssueLog, int], str, str]:
    """The examples (a `Sample` of `sample` texts, when given), the rows left out and how many rows were usable;
    the encoding read and why it fell back ("" when it did not)."""
    if task == "classification":
        types = {
            columns.text: (str,),
            columns.label: (str, int, float),
            **({columns.pair: (str,)} if columns.pair else {}),
        }
    else:
        types = {columns.text: (list,), columns.label: (list,)}

    def read(encoding: str, strict: bool) -> tuple[list[Example] | Sample, IssueLog, int]:
        issues, shared = IssueLog(), {}
        rows = records(path, kind, encoding, types, issues, strict, nonempty=(columns.label,), number_as=ROW)
        if progress is not None:
            rows = _reported(rows, issues, path, progress)
        if task == "tokens":
            tagged = [_tagged(path, row[ROW], row[columns.text], row[columns.label], shared) for row in rows]
            return tagged, issues, len(tagged)
        found = Sample(sample) if sample else []
        for row in rows:
            texts = tuple(row[name][:max_chars].strip() for name in (columns.text, columns.pair) if name)
            label = _shared(label_text(row[columns.label]), shared)
            if not all(texts):
                issues.add(row[ROW], "an empty text")
            elif label is None:
                issues.add(row[ROW], f"the label {row[columns.label]} is not a finite number")
            else:
                found.append(Example(row[ROW], texts, (label,)))
        return (found, issues, found.offered) if sample else (found, issues, len(found))

    return read_decoded(path, read)


def _reported(rows: Iterator[dict], issues: IssueLog, path: Path, progress: Progress) -> Iterator[dict]:
    """`rows`, with how far into the file they are reported every `REPORT_ROWS` rows."""
    size = path.stat().st_size
    for number, row in enumerate(rows):
        if number % REPORT_ROWS == 0:
            progress.check()
            progress.report(min(issues.position, size), size, f"Reading {path.name}")
        yield row


REPORT_ROWS = 4096  # rows read between two reports of progress


def _shared(label: str | None, shared: dict[str, str]) -> str | None:
    """`label` as the one string all its examples share (the first of its kind `shared` has seen)."""
    return label if label is None else shared.setdefault(label, label)


def _tagged(path: Path, row: int, words: list, tags: list, shared: dict[str, str]) -> Example:
    """Words with their tags, checked: as many of each, all strings (each tag the one string `shared` keeps)."""
    if len(words) != len(tags):
        raise TaskError(
            f"{path.name}, row {row}: {len(words)} tokens but {len(tags)} tags; give every token exactly one tag"
        )
    if not words:
        raise TaskError(f"{path.name}, row {row}: no tokens; leave out empty sentences")
    named = [_shared(label_text(t), shared) if isinstance(t, (str, int, float)) else None for t in tags]
    if not all(isinstance(w, str) and w.strip() for w in words) or None in named:
        raise TaskError(f"{path.name}, row {row}: every token must be a non-blank string and every tag a string")
    return Example(row, tuple(w.strip() for w in words), tuple(named))


def label_text(value: str | int | float) -> str | None:
    """A label as text, the same whatever a file stores it as: JSON's true and false as written, a whole number
    without its fraction (1 and 1.0 are one class, as a CSV file's "1" is), None for a number that is not finite."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value).strip()


def _conll(path: Path, progress: Progress | None = None) -> tuple[list[Example], str, str]:
    """CoNLL-2003 columns: a word first and its tag last on each line, a blank line between sentences,
    -DOCSTART- lines left out; how far into the file reading is reported to `progress`. A CSV file is refused:
    CoNLL columns are never comma-separated."""
    if kind_of(path) == "csv":
        raise TaskError(
            f"{path.name}: a tagging task reads JSON Lines {{tokens, tags}} or CoNLL columns; this is a table — use "
            "--kind classification"
        )

    def read(encoding: str, strict: bool) -> list[Example]:
        examples, words, tags, start, shared = [], [], [], 0, {}
        with opened(path) as (raw, on_disk):
            text = io.TextIOWrapper(raw, encoding=encoding, errors="strict" if strict else "replace")
            size = path.stat().st_size
            for number, line in enumerate(text, start=1):
                if progress is not None and number % REPORT_ROWS == 0:
                    progress.check()
                    progress.report(min(on_disk.tell(), size), size, f"Reading {path.name}")
                fields = line.split()
                if fields and fields[0] != DOCSTART and len(fields) < 2:
                    raise TaskError(
                        f"{path.name}, line {number}: '{clipped(line.strip(), 40)}' has a word but no tag; "
                        "write the word first and its tag last, separated by a space"
                    )
                if fields and fields[0] != DOCSTART:
                    start = start or number
                    words.append(fields[0])
                    tags.append(_shared(fields[-1], shared))
                elif words:
                    examples.append(Example(start, tuple(words), tuple(tags)))
                    words, tags, start = [], [], 0
        if words:
            examples.append(Example(start, tuple(words), tuple(tags)))
        return examples

    try:
        return read_decoded(path, read)
    except UnicodeDecodeError as exc:
        return read("cp1252", False), "cp1252", f"not UTF-8 ({exc.reason}): read as cp1252"


def check_labels(file: LabelledFile) -> None:
    """A training file must hold two labels at least."""
    counts = file.label_counts()
    if len(counts) < 2:
        only = next(iter(counts), "")
        raise TaskError(
            f"{file.path.name}: every {'row' if file.task == 'classification' else 'tag'} has the label "
            f"'{clipped(only, 40)}'; a classifier needs at least two labels"
        )


def check_known(file: LabelledFile, known: set[str], training: str) -> None:
    """Every label of a validation or test file occurs in training: else one sentence naming the first row."""
    for example in file.examples:
        unseen = next((label for label in example.labels if label not in known), None)
        if unseen is not None:
            raise TaskError(
                f"{file.path.name}, row {example.row}: the label '{clipped(unseen, 40)}' never occurs in the training "
                f"data ({training}); the model cannot learn it: add examples of it to training or leave it out"
            )
