"""The lines of `metrics.jsonl`: records written as strict JSON (a value that is not a finite number as null) and read
back tolerantly (a line cut short, a stray line or a damaged byte left out)."""

from __future__ import annotations

import json
import math
from typing import Any

from mlm_studio.core.storage.json_text import read_json


def json_lines(records: list[dict[str, Any]]) -> str:
    """Records as strict JSON lines: a value that is not a finite number is written as null (missing)."""
    return "".join(json.dumps(finite_or_none(record), allow_nan=False) + "\n" for record in records)


def finite_or_none(value: Any) -> Any:
    """`value` (a record, a list, a number) with each float that is not a finite number replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(item) for item in value]
    return value


def metric_records(lines: list[str]) -> list[dict[str, Any]]:
    """The records among lines of `metrics.jsonl`; a line cut short, a stray line or a damaged byte is left out.
    A NaN or infinity (files written before values were strict JSON) reads as null: missing, as written now."""
    records = []
    for line in lines:
        try:
            record = read_json(line, parse_constant=lambda _: None)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("type"), str) and isinstance(record.get("step"), int):
            records.append(record)
    return records
