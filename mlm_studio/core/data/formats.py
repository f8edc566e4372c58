"""The file formats a corpus or a labelled task file is read from, each streamed row by row: plain text and
Markdown, JSON Lines, CSV and TSV (each also compressed as .gz, .bz2, .xz or .zst), Parquet, and Arrow files as
`datasets.save_to_disk` writes them. Never the whole file in memory: text is decompressed as it is read, Parquet
and Arrow are read a record batch at a time, only the columns asked for.

Every format but plain text is a table: `records` yields its rows as {column: value}, for a corpus (its text
column) and for a task (its text and label columns) alike. A problem with one line or row goes to an `IssueLog`
and the rest is kept; a file that cannot be read at all raises `SourceSkipped` with the reason.
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
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

TEXT_KINDS = {".txt": "text", ".md": "text", ".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv"}
COLUMNAR_KINDS = {".parquet": "parquet", ".arrow": "arrow"}
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst")
TABLE_KINDS = ("jsonl", "csv", "tsv", *COLUMNAR_KINDS.values())  # the formats with named columns
SNIFF_BYTES = 8192
MAX_ISSUES_KEPT = 200
BATCH_ROWS = 2048
TYPE_WORDS = {str: "a string", int: "an integer"}

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
T = TypeVar("T")


def _suffixes(text_suffixes: list[str]) -> tuple[str, ...]:
    return (*text_suffixes, *(t + c for t in text_suffixes for c in COMPRESSIONS), *COLUMNAR_KINDS)


def _for_people(text_suffixes: list[str]) -> str:
    compressed = f"{', '.join(COMPRESSIONS[:-1])} or {COMPRESSIONS[-1]}"
    return f"{', '.join(text_suffixes)} (each also {compressed}), {' or '.join(COLUMNAR_KINDS)}"


_TABLE_TEXT_SUFFIXES = [s for s, kind in TEXT_KINDS.items() if kind in TABLE_KINDS]
SUFFIXES = _suffixes(list(TEXT_KINDS))  # a corpus's files
FORMATS = _for_people(list(TEXT_KINDS))
TABLE_SUFFIXES = _suffixes(_TABLE_TEXT_SUFFIXES)  # files with named columns, such as a labelled task's
TABLE_FORMATS = _for_people(_TABLE_TEXT_SUFFIXES)


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

    def summary(self) -> str:
        """How many problems and the first, for people; "" when there were none."""
        return f"{self.count} problem lines, first: {self.kept[0]}" if self.count else ""


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


def read_decoded(path: Path, read: Callable[[str, bool], T]) -> tuple[T, str, str]:
    """`read(encoding, strict)` over a file in the encoding its first bytes tell, and once more from the start as
    cp1252 when it turns out not to be UTF-8: (what `read` returned, the encoding, why it fell back or "")."""
    encoding = sniff_encoding(path)
    try:
        return read(encoding, encoding == "utf-8"), encoding, ""
    except NotUtf8 as exc:
        return read("cp1252", False), "cp1252", f"{exc}: read as cp1252"


def documents(path: Path, kind: str, encoding: str, options, issues: IssueLog, strict: bool = False) -> Iterator[str]:
    """Yield the documents of one file, streaming; line problems go to `issues`. `options` is the corpus's
    `ReadOptions`."""
    if kind == "text":
        with _decoded_lines(path, encoding, strict, issues) as lines:
            yield from (_paragraphs(lines) if options.text_unit == "paragraph" else _lines(lines))
        return
    column = options.jsonl_field if kind == "jsonl" else options.table_column
    for record in records(path, kind, encoding, {column: (str,)}, issues, strict):
        if record[column].strip():
            yield record[column].strip()


def records(
    path: Path,
    kind: str,
    encoding: str,
    columns: Mapping[str, tuple[type, ...]],
    issues: IssueLog,
    strict: bool = False,
) -> Iterator[dict]:
    """Yield the rows of a table file (JSON Lines, CSV, TSV, Parquet, Arrow) as {column: value} for `columns`,
    each name with the value types it takes, streaming. A row without one of them, or with a value of another
    type, goes to `issues`; a file without one of them in its header raises `SourceSkipped`."""
    if is_columnar(kind):
        yield from _columnar(path, kind, columns, issues)
        return
    with _decoded_lines(path, encoding, strict, issues) as lines:
        if kind == "jsonl":
            yield from _jsonl(lines, columns, issues)
        else:
            yield from _table(lines, "," if kind == "csv" else "\t", columns, issues)


@contextmanager
def _decoded_lines(path: Path, encoding: str, strict: bool, issues: IssueLog) -> Iterator[Iterator[str]]:
    """The decoded lines of a text file, decompressed as they are read; damaged compressed data is a skip."""
    try:
        with _opened(path) as (raw, on_disk):
            text = io.TextIOWrapper(raw, encoding=encoding, errors="strict" if strict else "replace", newline="")
            yield _tracked(text, raw, on_disk, issues)
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


def _usable(record: dict, columns: Mapping[str, tuple[type, ...]], number: int, issues: IssueLog, unit: str) -> bool:
    """Whether every column of a row has a value of a type it takes; if not, the first that lacks one is reported."""
    for name, types in columns.items():
        value = record[name]
        if value is None:
            issues.add(number, f"no '{name}' value", unit)
            return False
        if not isinstance(value, types):
            issues.add(number, f"field '{name}' is not {' or '.join(TYPE_WORDS[t] for t in types)}", unit)
            return False
    return True


def _jsonl(lines: Iterable[str], columns: Mapping[str, tuple[type, ...]], issues: IssueLog) -> Iterator[dict]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            issues.add(number, f"invalid JSON ({exc.msg})")
            continue
        missing = [name for name in columns if not isinstance(record, dict) or name not in record]
        if missing:
            found = f" (fields: {', '.join(record) or 'none'})" if isinstance(record, dict) else ""
            issues.add(number, f"no field '{missing[0]}'{found}")
        elif _usable(record, columns, number, issues, "line"):
            yield {name: record[name] for name in columns}


def _table(
    lines: Iterable[str], delimiter: str, columns: Mapping[str, tuple[type, ...]], issues: IssueLog
) -> Iterator[dict]:
    reader = csv.reader(lines, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    names = [h.strip().lstrip("\ufeff") for h in header]
    _require(columns, names)
    at = {name: names.index(name) for name in columns}
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
        short = [name for name, index in at.items() if index >= len(row)]
        if short:
            issues.add(reader.line_num, f"row has no '{short[0]}' value ({len(row)} of {len(names)} fields)")
            continue
        yield {name: row[index] for name, index in at.items()}


def _require(columns: Iterable[str], names: list[str]) -> None:
    for column in columns:
        if column not in names:
            raise SourceSkipped(f"no column '{column}' (columns: {', '.join(names) or 'none'})")


def _columnar(path: Path, kind: str, columns: Mapping[str, tuple[type, ...]], issues: IssueLog) -> Iterator[dict]:
    """The columns of a Parquet or Arrow file, a record batch at a time; rows numbered from 1."""
    import pyarrow as pa

    try:
        batches, names, rows = _batches(path, kind, list(columns))
        _require(columns, names)
        size, row = path.stat().st_size, 0
        for batch in batches:
            for record in batch.select(list(columns)).to_pylist():
                row += 1
                if _usable(record, columns, row, issues, "row"):
                    yield record
            issues.position = min(size, size * row // rows) if rows else 0
        issues.position = size
    except (pa.ArrowException, OSError) as exc:
        raise SourceSkipped(f"not a readable {'Parquet' if kind == 'parquet' else 'Arrow'} file ({exc})") from exc


def _batches(path: Path, kind: str, columns: list[str]):
    """(record batches holding at least `columns`, the file's column names, its row count)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if kind == "parquet":
        file = pq.ParquetFile(path)
        names = file.schema_arrow.names
        wanted = [column for column in columns if column in names]
        return file.iter_batches(batch_size=BATCH_ROWS, columns=wanted), names, file.metadata.num_rows
    source = pa.memory_map(str(path))
    try:
        reader = pa.ipc.open_file(source)
        return (reader.get_batch(i) for i in range(reader.num_record_batches)), reader.schema.names, 0
    except pa.ArrowInvalid:
        source.seek(0)
        stream = pa.ipc.open_stream(source)  # `datasets.save_to_disk` writes the streaming format
        return iter(stream), stream.schema.names, 0
