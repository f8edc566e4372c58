"""Parquet files and Arrow files (as `datasets.save_to_disk` writes them) read as tables: a record batch at a
time, only the columns asked for, a batch holding about `BATCH_BYTES` of them, and a value longer than
`MAX_VALUE_CHARS` reported as its row's problem without becoming a Python string."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from mlm_studio.core.data.rows import MAX_VALUE_CHARS, IssueLog, SourceSkipped, Wanted, clipped, require, too_long

BATCH_ROWS = 2048
BATCH_BYTES = 64 << 20  # a Parquet record batch holds about this much of the columns read, at most


def columnar_records(path: Path, kind: str, wanted: Wanted, issues: IssueLog) -> Iterator[dict]:
    """The columns of a Parquet or Arrow file, a record batch at a time; rows numbered from 1. A value longer
    than `MAX_VALUE_CHARS` is reported, never made a Python string."""
    import pyarrow as pa

    try:
        columns = list(wanted.columns)
        batches, names, rows = _batches(path, kind, columns)
        require(columns, names)
        size, row = path.stat().st_size, 0
        for batch in batches:
            for start in range(0, batch.num_rows, BATCH_ROWS):
                part = batch.slice(start, BATCH_ROWS).select(columns)
                long = _long_values(part, wanted)
                for index, record in enumerate(_rows(part, long)):
                    row += 1
                    if index in long:
                        issues.add(row, f"the '{clipped(long[index])}' value is {too_long('split it')}", "row")
                    elif wanted.usable(record, row, issues, "row"):
                        yield wanted.row(record, row)
            issues.position = min(size, size * row // rows) if rows else 0
        issues.position = size
    except (pa.ArrowException, OSError) as exc:
        kind_name = "Parquet" if kind == "parquet" else "Arrow"
        raise SourceSkipped(f"not a readable {kind_name} file ({clipped(str(exc), 200)})") from exc


def schema_names(path: Path, kind: str) -> list[str]:
    """The column names of a Parquet or Arrow file (either of Arrow's formats), from its schema alone."""
    import pyarrow as pa

    try:
        return list(_batches(path, kind, [])[1])
    except (pa.ArrowException, OSError) as exc:
        kind_name = "Parquet" if kind == "parquet" else "Arrow"
        raise SourceSkipped(f"not a readable {kind_name} file ({clipped(str(exc), 200)})") from exc


def _batches(path: Path, kind: str, columns: list[str]):
    """(record batches holding at least `columns`, the file's column names, its row count)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if kind == "parquet":
        file = pq.ParquetFile(path)
        names = file.schema_arrow.names
        wanted = [column for column in columns if column in names]
        rows = _rows_per_batch(file.metadata, [names.index(column) for column in wanted])
        return file.iter_batches(batch_size=rows, columns=wanted), names, file.metadata.num_rows
    source = pa.memory_map(str(path))
    try:
        reader = pa.ipc.open_file(source)
        return (reader.get_batch(i) for i in range(reader.num_record_batches)), reader.schema.names, 0
    except pa.ArrowInvalid:
        source.seek(0)
        stream = pa.ipc.open_stream(source)  # `datasets.save_to_disk` writes the streaming format
        return iter(stream), stream.schema.names, 0


def _rows_per_batch(metadata, columns: list[int]) -> int:
    """Rows per Parquet record batch such that the columns read hold about `BATCH_BYTES` (by the row groups'
    own sizes), at most `BATCH_ROWS`."""
    rows = BATCH_ROWS
    for group in (metadata.row_group(i) for i in range(metadata.num_row_groups)):
        size = sum(group.column(c).total_uncompressed_size for c in columns)
        if size and group.num_rows:
            rows = min(rows, max(1, BATCH_BYTES * group.num_rows // size))
    return rows


def _long_values(batch, wanted: Wanted) -> dict[int, str]:
    """{row: the column} for the rows of a record batch with a text or bytes value (or one inside a list or
    struct) longer than `MAX_VALUE_CHARS` bytes; a column of lists or structs is refused unless its wanted types
    take a list or a dict (a value of it is not read either)."""
    import pyarrow as pa

    long: dict[int, str] = {}
    for name, values in zip(batch.schema.names, batch.columns):
        kind = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
        if pa.types.is_nested(kind) and not {list, dict, object} & set(wanted.columns[name]):
            raise SourceSkipped(f"the column '{clipped(name)}' holds {kind}, not text or numbers")
        over = np.flatnonzero(_longest_text(values) > MAX_VALUE_CHARS)
        long.update((int(row), name) for row in over if int(row) not in long)
    return long


def _longest_text(values) -> np.ndarray:
    """(rows,) the bytes of each row's longest text or bytes value, those inside its lists and structs included
    (0 for a row with none)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = values.type
    if pa.types.is_dictionary(kind):
        longest = _longest_text(values.dictionary)[values.indices.fill_null(0).to_numpy(zero_copy_only=False)]
        return np.where(values.is_null().to_numpy(zero_copy_only=False), 0, longest)
    text_like = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    if any(test(kind) for test in text_like):
        return pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    longest = np.zeros(len(values), dtype=np.int64)
    if pa.types.is_struct(kind):
        for index in range(kind.num_fields):
            np.maximum(longest, _longest_text(pc.struct_field(values, [index])), out=longest)
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        parents = pc.list_parent_indices(values).to_numpy(zero_copy_only=False)
        np.maximum.at(longest, parents, _longest_text(pc.list_flatten(values)))
    return longest


def _rows(batch, long: dict[int, str]) -> Iterator[dict | None]:
    """The rows of a record batch as {column: value}, None for each row in `long`."""
    if not long:
        yield from batch.to_pylist()
        return
    for index in range(batch.num_rows):
        yield None if index in long else batch.slice(index, 1).to_pylist()[0]
