"""A question-answering file recognised where another kind of task is asked for, so that the refusal says what it
is and what to ask for, where the reader of labelled files would take it for what it is not (a SQuAD file read as
CoNLL columns: "a classifier needs at least two labels"). Only the file's first bytes, or its header, are read."""

from __future__ import annotations

import re
from pathlib import Path

from mlm_studio.core.data.compressed import damage_errors, opened
from mlm_studio.core.data.formats import TABLE_KINDS, kind_of, sniff_encoding
from mlm_studio.core.data.labelled import column_names
from mlm_studio.core.data.rows import SourceSkipped
from mlm_studio.core.finetune.qa.data import is_squad_json

HEAD_BYTES = 1 << 16  # of a JSON file: SQuAD's "data" and its first "paragraphs" come before any context
QA_COLUMNS = ("question", "context", "answers")
SQUAD_KEYS = (re.compile(r'"data"\s*:'), re.compile(r'"paragraphs"\s*:'))  # both in its head


def question_answering_file(path: Path, tables: bool = True) -> str:
    """What `path` is when it is a question-answering file, in words ("a SQuAD file", or with `tables` "a
    question-answering table (question, context, answers)"); "" when it is not, or cannot be read (its reader
    says why)."""
    if not path.is_file():  # a folder, a device, a pipe: its reader refuses it without reading it
        return ""
    try:
        if is_squad_json(path):
            with opened(path) as (raw, _):
                head = raw.read(HEAD_BYTES).decode(sniff_encoding(path) or "utf-8", errors="replace")
            squad = head.lstrip("\ufeff \t\r\n").startswith("{") and all(key.search(head) for key in SQUAD_KEYS)
            return "a SQuAD file" if squad else ""
        kind = kind_of(path)
        if tables and kind in TABLE_KINDS and set(QA_COLUMNS) <= set(column_names(path, kind)):
            return f"a question-answering table ({', '.join(QA_COLUMNS)})"
    except (OSError, SourceSkipped, *damage_errors()):
        return ""
    return ""
