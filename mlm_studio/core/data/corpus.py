"""Reading a text corpus from files and folders, streaming, with per-source reports and statistics.

A `Corpus` is the result of one scan over its sources: what was loaded or skipped and why, counts, a
document-length distribution and a few sample documents. It does not hold the documents in memory;
`Corpus.iter_documents()` streams them again from disk, so corpora larger than memory work.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from mlm_studio.core.data.formats import FORMATS, documents, kind_of, read_decoded
from mlm_studio.core.data.rows import Issue, IssueLog, SourceSkipped
from mlm_studio.core.errors import UserError
from mlm_studio.core.progress import Progress
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.hub_cache import cached_files, is_hub_name

SAMPLE_SIZE = 8
SAMPLE_CHARS = 2000  # a sample keeps this much of its document
CHECK_EVERY = 256
COUNT_SLICE = 1 << 16  # characters split into words at a time


class CorpusError(UserError):
    """A corpus could not be loaded; the message says why and what to do."""


@dataclass(frozen=True)
class ReadOptions:
    """How files are split into documents."""

    text_unit: Literal["paragraph", "line"] = "paragraph"  # .txt/.md: blank-line paragraphs or lines
    jsonl_field: str = "text"  # .jsonl: the field holding the text
    table_column: str = "text"  # .csv/.tsv: the column holding the text (by header name)

    def __post_init__(self) -> None:
        if self.text_unit not in ("paragraph", "line"):
            raise UserError(f"text unit must be 'paragraph' or 'line', not {shown(self.text_unit)}")
        if not self.jsonl_field.strip():
            raise UserError("the JSONL field name must not be empty")
        if not self.table_column.strip():
            raise UserError("the CSV/TSV column name must not be empty")


@dataclass(frozen=True)
class SourceReport:
    """What happened to one file: loaded (with counts) or skipped (with the reason)."""

    path: Path
    kind: str
    loaded: bool
    reason: str = ""
    encoding: str = ""
    encoding_note: str = ""
    documents: int = 0
    words: int = 0
    characters: int = 0
    issues: tuple[Issue, ...] = ()
    issue_count: int = 0

    @property
    def name(self) -> str:
        """The source as a message names it: a Hub dataset by its whole name (hf:org/name), a file by its own."""
        return shown(str(self.path)) if self.kind == "hub" else self.path.name

    @property
    def status(self) -> str:
        return "loaded" if self.loaded else f"skipped: {self.reason}"

    @property
    def noteworthy(self) -> bool:
        """Skipped, read in a fallback encoding, or with lines that could not be used."""
        return not self.loaded or bool(self.encoding_note) or self.issue_count > 0

    def describe(self, shown: int = 5) -> list[str]:
        """What happened to this file, for people: the same words in the window and the terminal."""
        lines = [str(self.path), self.status]
        if self.encoding_note:
            lines.append(f"Encoding: {self.encoding_note}")
        if self.issue_count:
            lines.append(f"{self.issue_count} problem line(s) not used:")
            lines.extend(f"  {issue}" for issue in self.issues[:shown])
            if self.issue_count > shown:
                lines.append(f"  … and {self.issue_count - shown} more")
        return lines


@dataclass(frozen=True)
class Corpus:
    """The outcome of scanning some sources: reports, totals, document lengths and samples."""

    sources: tuple[SourceReport, ...]
    options: ReadOptions = ReadOptions()
    doc_words: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32), repr=False)
    samples: tuple[str, ...] = ()

    @property
    def loaded_sources(self) -> tuple[SourceReport, ...]:
        return tuple(s for s in self.sources if s.loaded)

    @property
    def documents(self) -> int:
        return sum(s.documents for s in self.sources)

    @property
    def words(self) -> int:
        return sum(s.words for s in self.sources)

    @property
    def characters(self) -> int:
        return sum(s.characters for s in self.sources)

    def iter_documents(self) -> Iterator[str]:
        """Stream every document of the loaded sources again, in order, from disk."""
        for source in self.loaded_sources:
            yield from documents(source.path, source.kind, source.encoding, self.options, IssueLog())


def expand_sources(paths: Iterable[str | Path]) -> tuple[list[Path], list[SourceReport]]:
    """Files to read (folders expanded recursively, Hub names found in the local cache, duplicates dropped) and
    reports for unusable paths."""
    files: list[Path] = []
    skipped: list[SourceReport] = []
    seen: set[Path] = set()
    for raw in paths:
        found, problem = _expand(raw)
        if problem is not None:
            skipped.append(problem)
        for path in found:
            if path.resolve() not in seen:
                seen.add(path.resolve())
                files.append(path)
    return files, skipped


def _expand(raw: str | Path) -> tuple[list[Path], SourceReport | None]:
    """The files one given source stands for, or why it stands for none."""
    if is_hub_name(raw):
        try:
            return cached_files(str(raw)), None
        except (FileNotFoundError, ValueError) as exc:
            return [], _skip(Path(str(raw)), "hub", str(exc))
    path = Path(raw)
    if path.is_dir():
        found = sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and kind_of(p) is not None
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
        return found, None if found else _skip(path, "folder", f"no {FORMATS} files in this folder")
    if not path.exists():
        return [], _skip(path, "?", "file not found")
    if not path.is_file():  # a pipe or a device would be waited on, or read for ever
        return [], _skip(path, "?", "not a regular file (a pipe, socket or device); give a file")
    if kind_of(path) is None:
        return [], _skip(path, "?", f"unsupported file type '{path.suffix}' (supported: {FORMATS})")
    return [path], None


def load_corpus(
    paths: Iterable[str | Path], options: ReadOptions = ReadOptions(), progress: Progress | None = None
) -> Corpus:
    """Scan `paths` (files and folders) and return the corpus; raise `CorpusError` if nothing is usable."""
    progress = progress or Progress()
    files, reports = expand_sources(paths)
    sizes = [_size(p) for p in files]
    total = sum(sizes)
    done_before = 0
    lengths = array("I")
    sampler = _Sampler(SAMPLE_SIZE, seed=0)
    for path, size in zip(files, sizes):
        progress.check()
        progress.report(done_before, total, f"Reading {path.name}")
        reports.append(_scan(path, options, progress, done_before, total, lengths, sampler))
        done_before += size
    progress.check()  # a cancel that came while the last file was read is honoured too
    progress.report(total, total, "Done")
    reports.sort(key=lambda r: str(r.path))
    corpus = Corpus(tuple(reports), options, np.frombuffer(lengths, dtype=np.uint32).copy(), sampler.items())
    if corpus.documents == 0:
        reasons = "; ".join(f"{r.name}: {r.reason}" for r in reports) or "no files were given"
        advice = (
            "Name a dataset of the local Hugging Face cache as hf:org/name, or give files that contain text"
            if any(r.kind == "hub" for r in reports)
            else "Add files that contain text"
        )
        raise CorpusError(f"No usable text in the corpus ({reasons}). {advice}.")
    return corpus


def _skip(path: Path, kind: str, reason: str, **extra) -> SourceReport:
    return SourceReport(path=path, kind=kind, loaded=False, reason=reason, **extra)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _scan(
    path: Path, options: ReadOptions, progress: Progress, done_before: int, total: int, lengths: array, sampler
) -> SourceReport:
    """Read one file once for its counts, choosing its encoding; never raises for a bad file."""
    kind = kind_of(path)
    mark = len(lengths)

    def undo() -> None:
        del lengths[mark:]
        sampler.forget_after(mark)

    def read(encoding: str, strict: bool) -> tuple[int, int, int, IssueLog]:
        undo()  # what a first pass in the wrong encoding counted
        issues = IssueLog()
        docs = words = chars = 0
        for doc in documents(path, kind, encoding, options, issues, strict):
            n_words = word_count(doc)
            docs += 1
            words += n_words
            chars += len(doc)
            lengths.append(n_words)
            sampler.offer(doc)
            if docs % CHECK_EVERY == 0:
                progress.check()
                progress.report(done_before + issues.position, total, f"Reading {path.name}")
        return docs, words, chars, issues

    try:
        (docs, words, chars, issues), encoding, note = read_decoded(path, read)
    except SourceSkipped as exc:
        undo()
        return _skip(path, kind, str(exc))
    except OSError as exc:
        undo()
        return _skip(path, kind, f"cannot be read ({exc.strerror or exc})")
    extra = dict(encoding=encoding, encoding_note=note, issues=tuple(issues.kept), issue_count=issues.count)
    if docs == 0:
        reason = "no usable text"
        if issues.count:
            reason += f" ({issues.summary()})"
        return _skip(path, kind, reason, **extra)
    return SourceReport(path, kind, True, documents=docs, words=words, characters=chars, **extra)


def word_count(text: str) -> int:
    """The number of words of `text` (runs of non-white space, as `str.split` finds them), counted a slice at a
    time so that a long text's words are never all in memory at once."""
    if len(text) <= COUNT_SLICE:
        return len(text.split())
    count = 0
    for start in range(0, len(text), COUNT_SLICE):
        count += len(text[start : start + COUNT_SLICE].split())
        if start and not text[start - 1].isspace() and not text[start].isspace():
            count -= 1  # a word across the cut was counted on both sides
    return count


class _Sampler:
    """A deterministic reservoir sample of documents, undoable when a file is re-read."""

    def __init__(self, size: int, seed: int) -> None:
        self.size = size
        self.rng = random.Random(seed)
        self.seen = 0
        self.slots: list[tuple[int, str]] = []

    def offer(self, doc: str) -> None:
        index = self.seen
        self.seen += 1
        if len(self.slots) < self.size:
            self.slots.append((index, doc[:SAMPLE_CHARS]))
        else:
            j = self.rng.randrange(self.seen)
            if j < self.size:
                self.slots[j] = (index, doc[:SAMPLE_CHARS])

    def forget_after(self, index: int) -> None:
        self.slots = [(i, d) for i, d in self.slots if i < index]
        self.seen = index

    def items(self) -> tuple[str, ...]:
        return tuple(d for _, d in sorted(self.slots))
