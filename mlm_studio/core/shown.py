"""A value as a message quotes it: as Python writes it, cut to at most `LIMIT` characters, so that a wrong value
of any size (a 100 MB string in a configuration file, a label of 5,000 characters) makes a message of one line."""

from __future__ import annotations

import math
import re
import reprlib
from typing import Any

LIMIT = 80  # characters of a quoted value, the quotes and the cut mark included
MAX_WHOLE_NUMBER = 10**18  # no setting needs more; beyond it a number is said by its length

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 3, LIMIT - 2, LIMIT, LIMIT


def shown(value: Any) -> str:
    """`value` as Python writes it, cut short: long text, deep or long lists and tables, a number of more digits
    than any setting takes; a text's line breaks written as escapes, so the message stays one line."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= MAX_WHOLE_NUMBER:
        return f"a number of {math.floor(value.bit_length() * math.log10(2)) + 1:,} digits"
    try:
        text = _SHORT.repr(value)
    except ValueError:  # a list holding a number longer than Python prints
        return "{…}" if isinstance(value, dict) else "[…]"
    return text if len(text) <= LIMIT else f"{text[: LIMIT - 1]}…"


_SURROGATE = re.compile("[\ud800-\udfff]")  # a byte of a file name that is not UTF-8, kept by Python as is


def one_line(text: str, limit: int = LIMIT) -> str:
    """`text` on one line, unquoted: each character that is not printable (a line break in a label or a file name)
    written as its escape, cut to `limit` characters with "…"."""
    text = "".join(c if c.isprintable() or _SURROGATE.match(c) else c.encode("unicode_escape").decode() for c in text)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
