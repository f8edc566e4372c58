"""The file formats a corpus is read from, each streamed document by document: plain text and Markdown, JSON
Lines, CSV and TSV (each also compressed as .gz, .bz2, .xz or .zst), Parquet, and Arrow files as
`datasets.save_to_disk` writes them. Never the whole file in memory: text is decompressed as it is read,
Parquet and Arrow are read a record batch at a time, only the text column.

A problem with one line or row goes to an `IssueLog` and the rest is kept; a file that cannot be read at all
raises `SourceSkipped` with the reason.
"""

from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import io
import json
import lzma
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TEXT_KINDS = {".txt": "text", ".md": "text", ".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv"}
COLUMNAR_KINDS = {".parquet": "parquet", ".arrow": "arrow"}
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst")
SUFFIXES = (*TEXT_KINDS, *(t + c for t in TEXT_KINDS for c in COMPRESSIONS), *COLUMNAR_KINDS)
FORMATS = ".txt, .md, .jsonl, .csv, .tsv (each also .gz, .bz2, .xz or .zst), .parquet or .arrow"  # for people
SNIFF_BYTES = 8192
MAX_ISSUES_KEPT = 200
BATCH_ROWS = 2048

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


class SourceSkipped(Exception):
    """One source cannot be used; the message is the reason shown to the user."""


@dataclass(frozen=True)
class Issue:
    """A problem with one line or row of a source (a bad JSON line, a row without the text column, ...)."""

    line: int
    message: str
    unit: str = "line"

    def __str__(self) -> str:
        return f"{self.unit} {self.line}: {self.message}"


class IssueLog:
    """Counts line problems, keeps the first few, and tracks how far into the file reading is (for progress)."""

    def __init__(self) -> None:
        self.count = 0
        self.kept: list[Issue] = []
        self.position = 0  # bytes of the file on disk read so far

    def add(self, line: int, message: str, unit: str = "line") -> None:
        self.count += 1
        if len(self.kept) < MAX_ISSUES_KEPT:
            self.kept.append(Issue(line, message, unit))


class NotUtf8(Exception):
    def __init__(self, offset: int, byte: int) -> None:
        super().__init__(f"not valid UTF-8 (byte {byte:#04x} at offset {offset})")


def kind_of(path: Path) -> str | None:
    """The format of a file by its name ("text", "jsonl", "csv", "tsv", "parquet", "arrow"), or None."""
    suffixes = [s.lower() for s in path.suffixes[-2:]]
    if suffixes and suffixes[-1] in COLUMNAR_KINDS:
        return COLUMNAR_KINDS[suffixes[-1]]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    return TEXT_KINDS.get(suffixes[-1]) if suffixes else None


def is_columnar(kind: str) -> bool:
    return kind in COLUMNAR_KINDS.values()


def sniff_encoding(path: Path) -> str:
    """The text encoding of a text file (from its first bytes, decompressed); "" for Parquet and Arrow."""
    if is_columnar(kind_of(path) or ""):
        return ""
    try:
        with _opened(path) as (raw, _):
            head = raw.read(SNIFF_BYTES)
    except _damaged() as exc:
        raise SourceSkipped(f"damaged or cut short compressed data ({exc})") from exc
    except OSError as exc:
        raise SourceSkipped(f"cannot be read ({exc.strerror or exc})") from exc
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if b"\x00" in head:
        raise SourceSkipped("binary file (a NUL byte in the first 8 KB), not text")
    return "utf-8"


def documents(path: Path, kind: str, encoding: str, options, issues: IssueLog, strict: bool = False) -> Iterator[str]:
    """Yield the documents of one file, streaming; line problems go to `issues`. `options` is the corpus's
    `ReadOptions`."""
    try:
        if is_columnar(kind):
            yield from _columnar(path, kind, options.table_column, issues)
            return
        with _opened(path) as (raw, on_disk):
            text = io.TextIOWrapper(raw, encoding=encoding, errors="strict" if strict else "replace", newline="")
            lines = _tracked(text, raw, on_disk, issues)
            if kind == "text":
                yield from (_paragraphs(lines) if options.text_unit == "paragraph" else _lines(lines))
            elif kind == "jsonl":
                yield from _jsonl(lines, options.jsonl_field, issues)
            else:
                yield from _table(lines, "," if kind == "csv" else "\t", options.table_column, issues)
    except _damaged() as exc:
        raise SourceSkipped(f"damaged or cut short compressed data ({exc})") from exc


@contextmanager
def _opened(path: Path) -> Iterator[tuple[io.BufferedIOBase, io.BufferedIOBase]]:
    """The decompressed byte stream of a file, and the file on disk beneath it (for progress)."""
    suffix = path.suffix.lower()
    with open(path, "rb") as on_disk:
        if suffix == ".gz":
            raw = gzip.GzipFile(fileobj=on_disk)
        elif suffix == ".bz2":
            raw = bz2.BZ2File(on_disk)
        elif suffix == ".xz":
            raw = lzma.LZMAFile(on_disk)
        elif suffix == ".zst":
            import zstandard

            raw = io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(on_disk))
        else:
            yield on_disk, on_disk
            return
        with raw:
            yield raw, on_disk


def _damaged() -> tuple[type[Exception], ...]:
    """What the decompressors raise for damaged or truncated data."""
    import zstandard

    return (EOFError, lzma.LZMAError, gzip.BadGzipFile, zstandard.ZstdError)


def _tracked(text: io.TextIOWrapper, raw, on_disk, issues: IssueLog) -> Iterator[str]:
    lines = iter(text)
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            offset = raw.tell() - len(exc.object) + exc.start
            raise NotUtf8(offset, exc.object[exc.start]) from exc
        issues.position = on_disk.tell()
        yield line


def _lines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        line = line.strip()
        if line:
            yield line


def _paragraphs(lines: Iterable[str]) -> Iterator[str]:
    block: list[str] = []
    for line in lines:
        line = line.strip()
        if line:
            block.append(line)
        elif block:
            yield "\n".join(block)
            block = []
    if block:
        yield "\n".join(block)


def _jsonl(lines: Iterable[str], key: str, issues: IssueLog) -> Iterator[str]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            issues.add(number, f"invalid JSON ({exc.msg})")
            continue
        if not isinstance(record, dict) or key not in record:
            issues.add(number, f"no field '{key}'")
        elif not isinstance(record[key], str):
            issues.add(number, f"field '{key}' is not a string")
        elif record[key].strip():
            yield record[key].strip()


def _table(lines: Iterable[str], delimiter: str, column: str, issues: IssueLog) -> Iterator[str]:
    reader = csv.reader(lines, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    names = [h.strip().lstrip("\ufeff") for h in header]
    if column not in names:
        raise SourceSkipped(f"no column '{column}' (columns: {', '.join(names) or 'none'})")
    index = names.index(column)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            issues.add(reader.line_num, f"malformed row ({exc})")
            continue
        if not row:
            continue
        if index >= len(row):
            issues.add(reader.line_num, f"row has no '{column}' value ({len(row)} of {len(names)} fields)")
        elif row[index].strip():
            yield row[index].strip()


def _columnar(path: Path, kind: str, column: str, issues: IssueLog) -> Iterator[str]:
    """The text column of a Parquet or Arrow file, a record batch at a time; rows numbered from 1."""
    import pyarrow as pa

    try:
        batches, names, rows = _batches(path, kind, column)
        if column not in names:
            raise SourceSkipped(f"no column '{column}' (columns: {', '.join(names) or 'none'})")
        size, row = path.stat().st_size, 0
        for batch in batches:
            for value in batch.column(column).to_pylist():
                row += 1
                if value is None:
                    issues.add(row, f"no '{column}' value", "row")
                elif not isinstance(value, str):
                    issues.add(row, f"'{column}' is not text", "row")
                elif value.strip():
                    yield value.strip()
            issues.position = min(size, size * row // rows) if rows else 0
        issues.position = size
    except (pa.ArrowException, OSError) as exc:
        raise SourceSkipped(f"not a readable {'Parquet' if kind == 'parquet' else 'Arrow'} file ({exc})") from exc


def _batches(path: Path, kind: str, column: str):
    """(record batches of `column`, the file's column names, its row count)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if kind == "parquet":
        file = pq.ParquetFile(path)
        names = file.schema_arrow.names
        columns = [column] if column in names else []
        return file.iter_batches(batch_size=BATCH_ROWS, columns=columns), names, file.metadata.num_rows
    source = pa.memory_map(str(path))
    try:
        reader = pa.ipc.open_file(source)
        return (reader.get_batch(i) for i in range(reader.num_record_batches)), reader.schema.names, 0
    except pa.ArrowInvalid:
        source.seek(0)
        stream = pa.ipc.open_stream(source)  # `datasets.save_to_disk` writes the streaming format
        return iter(stream), stream.schema.names, 0
