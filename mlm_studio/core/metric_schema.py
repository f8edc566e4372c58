"""The metric schema: what each field of a metrics record is and where it goes besides `metrics.jsonl` (its
TensorBoard tag, CSV column, live plot and unit), declared on the field itself with `metric()`.

The record classes are the one table: TensorBoard's tags, the CSV's columns and the window's curves are read
from their fields, so a new metric is one field. A field without `metric()` is no metric (a record's nested
results, a run's folder).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

KEY = "metric"  # the fields' metadata key


@dataclass(frozen=True)
class Metric:
    """One field's place outside `metrics.jsonl`."""

    unit: str  # "nats", "share" (0 to 1), "tokens/s", "s"…; "" for a plain number
    tag: str = ""  # its TensorBoard scalar, named as the transformers Trainer names it; "" for none
    plot: str = ""  # the live plot that draws it; "" for none
    series: str = ""  # its curve's name in that plot
    smooth: bool = False  # drawn smoothed over its faint raw values (a noisy training measurement)
    column: str = ""  # its CSV column; "" for the field's name
    optional: bool = False  # only some runs have it (ELECTRA's detection): None otherwise, left out of the file


def metric(
    unit: str,
    *,
    tag: str = "",
    plot: str = "",
    series: str = "",
    smooth: bool = False,
    column: str = "",
    optional: bool = False,
) -> Any:
    """A dataclass field that is a metric (see `Metric`); an optional one defaults to None."""
    schema = {KEY: Metric(unit, tag, plot, series, smooth, column, optional)}
    return dataclasses.field(default=None, metadata=schema) if optional else dataclasses.field(metadata=schema)


@functools.cache
def metrics_of(cls: type) -> dict[str, Metric]:
    """The metric fields of a dataclass, by field name in declaration order, each with its CSV column (read once
    per class: every record written and every CSV row asks)."""
    return {
        f.name: dataclasses.replace(f.metadata[KEY], column=f.metadata[KEY].column or f.name)
        for f in dataclasses.fields(cls)
        if KEY in f.metadata
    }


def csv_columns(classes: tuple[type, ...]) -> tuple[str, ...]:
    """The CSV's columns: the record's type, then the columns of `classes` in their order, each once; those only
    some runs have come last, so that every run's file begins with the same columns."""
    metrics = [m for cls in classes for m in metrics_of(cls).values()]
    return ("type", *dict.fromkeys(m.column for m in sorted(metrics, key=lambda m: m.optional)))
