"""Texts one a line, for a command that answers many: from standard input (`-` for the text) or a file, read as
UTF-8 a line at a time, the line break left out. What is held at once is bounded whatever the input: a line is read
up to `MAX_LINE_BYTES` and one longer is refused by its number, never read whole (`/dev/zero` piped in is refused at
its first line); a device named as the file is refused before it is read. A line that holds no text is refused,
naming its line: an answer per line lines up with the texts only if none is skipped."""

from __future__ import annotations

import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from mlm_studio.commands.terminal import PATH_CHARS
from mlm_studio.core.errors import UserError
from mlm_studio.core.shown import one_line

STDIN = "-"  # the text that says: read the texts from standard input
# the longest line answered (128 KiB, its tokens ~70 MB at most, a token a byte): a question-answering context of some
# 20,000 words, far more than a model reads of any other text
MAX_LINE_BYTES = 1 << 17


class TextLinesError(UserError):
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
    try:
        stream = sys.stdin.buffer if text_file is None else _opened(text_file, name)
    except OSError as exc:
        raise TextLinesError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    try:
        number = 0
        while raw := stream.readline(MAX_LINE_BYTES + 2):  # room for the line's own end, \r\n
            number += 1
            if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                raise TextLinesError(
                    f"{name}, line {number}: longer than {MAX_LINE_BYTES:,} bytes, the most read of one text; "
                    "give one text a line, each at most that long"
                )
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


def _opened(path: Path, name: str):
    """`path` opened for reading: a file, or a pipe (as a shell's `<(command)` names one); a folder or a device
    refused in a sentence."""
    kind = path.stat().st_mode
    if stat.S_ISDIR(kind):
        raise TextLinesError(f"{name}: a folder, not a file of texts one a line")
    if not (stat.S_ISREG(kind) or stat.S_ISFIFO(kind)):
        raise TextLinesError(
            f"{name}: a device, not a file of texts one a line; give a file, or - to read standard input"
        )
    return open(path, "rb")
