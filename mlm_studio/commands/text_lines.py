"""Texts one a line, for a command that answers many: from standard input (`-` for the text) or a file, read as
UTF-8 a line at a time (a file of any length never held whole), the line break left out. A line that holds no text
is refused, naming its line: an answer per line lines up with the texts only if none is skipped."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from mlm_studio.commands.terminal import PATH_CHARS
from mlm_studio.core.shown import one_line

STDIN = "-"  # the text that says: read the texts from standard input


class TextLinesError(ValueError):
    """A line that cannot be read as a text, or a file that cannot be read at all."""


def reads_lines(text: str | None, text_file: Path | None) -> bool:
    """Whether a command's texts come one a line (from standard input or a file) rather than as one argument."""
    return text == STDIN or text_file is not None


def source_name(text_file: Path | None) -> str:
    """How messages name where the texts come from."""
    return "standard input" if text_file is None else one_line(str(text_file), PATH_CHARS)


def text_lines(text_file: Path | None) -> Iterator[tuple[int, str]]:
    """(line number from 1, its text) of each line of `text_file` (None: standard input), a byte-order mark left
    out."""
    name = source_name(text_file)
    if text_file is not None and text_file.is_dir():
        raise TextLinesError(f"{name}: a folder, not a file of texts one a line")
    try:
        stream = sys.stdin.buffer if text_file is None else open(text_file, "rb")
    except OSError as exc:
        raise TextLinesError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    try:
        for number, raw in enumerate(stream, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise TextLinesError(
                    f"{name}, line {number}: not UTF-8 text (byte {exc.start + 1} of the line)"
                ) from None
            if not text.strip():
                raise TextLinesError(f"{name}, line {number}: no text; give one text a line, none empty")
            yield number, text
    finally:
        if text_file is not None:
            stream.close()
