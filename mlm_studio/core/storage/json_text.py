"""JSON read from a file: one a user gives (a task, a model's config.json) or one a run holds. As `json.loads`
reads it, except that what Python's parser cannot follow is a `ValueError` saying so in a few words: a nesting
deeper than its recursion (a 100,000-deep array), whose RecursionError's long message a message would cut
mid-word, and a number longer than Python converts."""

from __future__ import annotations

import json
import sys
from typing import Any

NESTED_TOO_DEEPLY = "nested too deeply: lists or objects inside each other further than can be read"


def read_json(text: str | bytes, **options: Any) -> Any:
    """`text` as `json.loads` (with `options`) reads it; JSON it cannot read is a ValueError (a JSONDecodeError for
    a syntax error, as `json.loads` raises it)."""
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise ValueError(NESTED_TOO_DEEPLY) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # integers of more digits than `sys.get_int_max_str_digits()`
        if "digits" not in str(exc):
            raise
        raise ValueError(f"a number longer than {sys.get_int_max_str_digits():,} digits") from None


def json_object(text: object) -> dict:
    """`text` read as a JSON object, as a remembered setting holds one; {} for anything else (not text, not JSON, or
    JSON of another kind)."""
    try:
        value = read_json(text) if isinstance(text, (str, bytes)) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
