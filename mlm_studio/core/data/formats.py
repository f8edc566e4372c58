"""The file formats a corpus or a labelled task file is read from, each streamed row by row: plain text and
Markdown, JSON Lines, CSV and TSV (each also compressed as .gz, .bz2, .xz or .zst), Parquet, and Arrow files as
`datasets.save_to_disk` writes them. Never the whole file in memory: text is decompressed as it is read, Parquet
and Arrow are read a record batch at a time, only the columns asked for.

Every format but plain text is a table: `records` yields its rows as {column: value}, for a corpus (its text
column) and for a task (its text and label columns) alike. A problem with one line or row goes to an `IssueLog`
and the rest is kept; a file that cannot be read at all raises `SourceSkipped` with the reason.

Whatever a file holds, what is in memory at once is bounded: a text line longer than `MAX_VALUE_CHARS` is read
in pieces (each a document of its own, cut after white space), and a JSON line, CSV field or Parquet/Arrow value
that long is a problem of its row, never read whole.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from mlm_studio.core.data.columnar import columnar_records
from mlm_studio.core.data.compressed import COMPRESSIONS, damage_errors, opened
from mlm_studio.core.data.rows import MAX_VALUE_CHARS, IssueLog, SourceSkipped, Wanted, clipped, require, too_long
from mlm_studio.core.storage.json_text import read_json

TEXT_KINDS = {".txt": "text", ".md": "text", ".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv"}
COLUMNAR_KINDS = {".parquet": "parquet", ".arrow": "arrow"}
TABLE_KINDS = ("jsonl", "csv", "tsv", *COLUMNAR_KINDS.values())  # the formats with named columns
SNIFF_BYTES = 8192
LINE_ENDS = ("\n", "\r")

csv.field_size_limit(MAX_VALUE_CHARS)
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
        with opened(path) as (raw, _):
            head = raw.read(SNIFF_BYTES)
    except damage_errors() as exc:
        raise _damaged_data(exc) from exc
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
            pieces = _cut_after_space(lines)
            yield from (_paragraphs(pieces) if options.text_unit == "paragraph" else _lines(pieces))
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
    nonempty: Iterable[str] = (),
    number_as: str = "",
) -> Iterator[dict]:
    """Yield the rows of a table file (JSON Lines, CSV, TSV, Parquet, Arrow) as {column: value} for `columns`,
    each name with the value types it takes, streaming. A row without one of them, with a value of another
    type, or with a blank string in a column of `nonempty`, goes to `issues`; a file without one of them in its
    header raises `SourceSkipped`. With `number_as`, each row also holds its line (row) number under that key."""
    wanted = Wanted(columns, frozenset(nonempty), number_as)
    if is_columnar(kind):
        yield from columnar_records(path, kind, wanted, issues)
        return
    # JSON Lines end at "\n" alone (a stray "\r" is not a line end there, as for the tools that count lines)
    with _decoded_lines(path, encoding, strict, issues, "\n" if kind == "jsonl" else "") as lines:
        if kind == "jsonl":
            yield from _jsonl(lines, wanted, issues)
        else:
            rows = _whole_lines(lines, issues, "split its text over several rows")
            yield from _table(rows, "," if kind == "csv" else "\t", wanted, issues)


@contextmanager
def _decoded_lines(
    path: Path, encoding: str, strict: bool, issues: IssueLog, newline: str = ""
) -> Iterator[Iterator[str]]:
    """The decoded lines of a text file, decompressed as they are read, each at most `MAX_VALUE_CHARS`; a
    longer line comes in pieces, all but the last without their line end (`_partial`). Damaged compressed data
    is a skip."""
    try:
        with opened(path) as (raw, on_disk):
            errors = "strict" if strict else "replace"
            text = io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline=newline)
            yield _tracked(text, raw, on_disk, issues)
    except damage_errors() as exc:
        raise _damaged_data(exc) from exc


def _damaged_data(exc: Exception) -> SourceSkipped:
    return SourceSkipped(
        f"damaged or cut short compressed data ({clipped(str(exc), 200)}); "
        "compress the file again from its original, or leave it out"
    )


def _tracked(text: io.TextIOWrapper, raw, on_disk, issues: IssueLog) -> Iterator[str]:
    while True:
        try:
            line = text.readline(MAX_VALUE_CHARS)
        except UnicodeDecodeError as exc:
            offset = raw.tell() - len(exc.object) + exc.start
            raise NotUtf8(offset, exc.object[exc.start]) from exc
        if not line:
            return
        issues.position = on_disk.tell()
        yield line


def _partial(piece: str) -> bool:
    """Whether `piece` is a piece of a line longer than `MAX_VALUE_CHARS`, its end still to come."""
    return len(piece) == MAX_VALUE_CHARS and not piece.endswith(LINE_ENDS)


def _cut_after_space(pieces: Iterable[str]) -> Iterator[str]:
    """The lines of a text, a line longer than `MAX_VALUE_CHARS` in pieces no longer, each cut after white space
    where the text has some (its last word carried into the next piece), so that no word is cut in two."""
    carry = ""
    for piece in pieces:
        text, carry = carry + piece, ""
        while len(text) > MAX_VALUE_CHARS:
            head, text = _split_after_space(text, MAX_VALUE_CHARS)
            yield head
        if _partial(piece):
            text, carry = _split_after_space(text, len(text))
        yield text
    if carry:
        yield carry


def _split_after_space(text: str, limit: int) -> tuple[str, str]:
    """`text` cut after its last space or tab within `limit` characters (at `limit` if none in its second half)."""
    cut = max(text.rfind(" ", 0, limit), text.rfind("\t", 0, limit)) + 1
    if cut <= limit // 2:
        cut = limit
    return text[:cut], text[cut:]


def _lines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        line = line.strip()
        if line:
            yield line


def _paragraphs(lines: Iterable[str]) -> Iterator[str]:
    """Blank-line paragraphs, a paragraph longer than `MAX_VALUE_CHARS` in several documents."""
    block: list[str] = []
    size = 0
    for line in lines:
        line = line.strip()
        if block and (not line or size + len(line) > MAX_VALUE_CHARS):
            yield "\n".join(block)
            block, size = [], 0
        if line:
            block.append(line)
            size += len(line) + 1
    if block:
        yield "\n".join(block)


def _whole_lines(pieces: Iterable[str], issues: IssueLog, advice: str) -> Iterator[str]:
    """The lines of a table or JSONL file, each over-long line reported (with `advice`) and given as an empty line."""
    number = 0
    inside = False  # within an over-long line already reported
    for piece in pieces:
        if inside:
            inside = _partial(piece)
            continue
        number += 1
        if _partial(piece):
            issues.add(number, too_long(advice))
            inside = True
            yield "\n"
        else:
            yield piece


def _jsonl(lines: Iterable[str], wanted: Wanted, issues: IssueLog) -> Iterator[dict]:
    advice = "write one record per line, its text shorter"
    for number, line in enumerate(_whole_lines(lines, issues, advice), start=1):
        if not line.strip():
            continue
        record = _json_record(line, number, issues)
        if record is None:
            continue
        missing = [name for name in wanted.columns if name not in record]
        if missing:
            found = clipped(", ".join(clipped(name, 40) for name in record) or "none")
            issues.add(number, f"no field '{clipped(missing[0])}' (fields: {found})")
        elif wanted.usable(record, number, issues, "line"):
            yield wanted.row(record, number)


def _json_record(line: str, number: int, issues: IssueLog) -> dict | None:
    """The JSON object on one line, or None with the problem reported."""
    try:
        record = read_json(line)
    except json.JSONDecodeError as exc:
        issues.add(number, f"invalid JSON ({exc.msg})")
        return None
    except ValueError as exc:  # nested too deeply, or a number longer than Python reads
        issues.add(number, str(exc))
        return None
    if not isinstance(record, dict):
        issues.add(number, f"not a JSON object but {_json_kind(record)}; write one {{...}} object per line")
        return None
    return record


def _json_kind(value) -> str:
    kinds = {list: "an array", str: "a string", bool: "true or false", int: "a number", float: "a number"}
    return "null" if value is None else kinds[type(value)]


def _table(lines: Iterable[str], delimiter: str, wanted: Wanted, issues: IssueLog) -> Iterator[dict]:
    reader = csv.reader(lines, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    names = [h.strip().lstrip("\ufeff") for h in header]
    require(wanted.columns, names)
    at = {name: names.index(name) for name in wanted.columns}
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            issues.add(reader.line_num, f"malformed row ({clipped(str(exc))})")
            continue
        if not row:
            continue
        short = [name for name, index in at.items() if index >= len(row)]
        if short:
            issues.add(reader.line_num, f"row has no '{clipped(short[0])}' value ({len(row)} of {len(names)} fields)")
            continue
        record = {name: row[index] for name, index in at.items()}
        if wanted.usable(record, reader.line_num, issues, "line"):
            yield wanted.row(record, reader.line_num)
