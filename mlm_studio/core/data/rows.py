"""What a table's rows must hold, and the problems found reading a source: a row's problem goes to an
`IssueLog` with its line or row number, a source that cannot be used at all raises `SourceSkipped`. A message
repeats at most `SHOWN_CHARS` of any value it names, and no line, field or value longer than `MAX_VALUE_CHARS`
is read whole."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MAX_ISSUES_KEPT = 200
MAX_VALUE_CHARS = 1 << 24  # the longest line, field or value read whole (16 Mi characters)
SHOWN_CHARS = 80  # the most of a value a message repeats
TYPE_WORDS = {str: "a string", int: "an integer", float: "a number", list: "a list"}
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # what a JSON escape may make and no text encoding can write


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


def clipped(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` as a message repeats it: at most `limit` characters, then "…"."""
    return text if len(text) <= limit else text[:limit] + "…"


def is_blank(text: str) -> bool:
    """Whether a text holds no character a reader sees: spaces, line breaks, and invisible ones (a zero-width
    space, a joiner, a byte-order mark, a direction mark, a control character)."""
    return all(c.isspace() or unicodedata.category(c) in INVISIBLE for c in text)


INVISIBLE = ("Cc", "Cf", "Zs", "Zl", "Zp")  # control, format (zero-width) and space characters


def too_long(what: str) -> str:
    """A line or value's problem of being longer than `MAX_VALUE_CHARS`, and what to do about it."""
    return f"longer than {MAX_VALUE_CHARS:,} characters; {what}"


@dataclass(frozen=True)
class Wanted:
    """The columns `records` reads, each with the value types it takes, and those that must not be blank."""

    columns: Mapping[str, tuple[type, ...]]
    nonempty: frozenset[str]
    number_as: str = ""  # when set, each row comes with its line or row number under this key

    def row(self, record: dict, number: int) -> dict:
        """A usable row as `records` yields it: its wanted columns, and its number when asked for."""
        values = {name: record[name] for name in self.columns}
        return {**values, self.number_as: number} if self.number_as else values

    def usable(self, record: dict, number: int, issues: IssueLog, unit: str) -> bool:
        """Whether every column of a row has a value it takes; if not, the first that lacks one is reported."""
        for name, types in self.columns.items():
            value = record[name]
            if value is None or (name in self.nonempty and isinstance(value, str) and not value.strip()):
                issues.add(number, f"no '{clipped(name)}' value", unit)
                return False
            if not isinstance(value, types):
                words = " or ".join(TYPE_WORDS[t] for t in types if not (t is int and float in types))
                issues.add(number, f"field '{clipped(name)}' is not {words}", unit)
                return False
            if isinstance(value, str) and not value.isascii() and LONE_SURROGATE.search(value):
                issues.add(number, f"field '{clipped(name)}' holds an escape (such as \\ud800) of no character", unit)
                return False
        return True


def require(columns: Iterable[str], names: list[str]) -> None:
    """Raises `SourceSkipped` naming the first of `columns` missing from a file's column `names`."""
    for column in columns:
        if column not in names:
            found = clipped(", ".join(clipped(name, 40) for name in names) or "none")
            raise SourceSkipped(f"no column '{clipped(column)}' (columns: {found})")
