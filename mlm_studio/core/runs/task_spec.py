"""A fine-tuning run's task as its `task.json` holds it, read once into a `TaskSpec` whose every field is checked:
what the run predicts (its kind and labels), the files it reads and how (columns, the split's seed, how copies are
told apart), its head (pooling, frozen layers), its patience, what it was asked (the request a rerun compares) and,
for question answering, its document stride, longest answer and whether it learned unanswerable questions.

Fields added by later versions have the value a run written before them means (`copies_as_read` false: copies as
written; no request; no unanswerable questions). A field of the wrong type or value, or a kind of task this version
does not know, is a `FieldError` naming the field; `Fields` reads any JSON object MLM Studio wrote that way (a
search's and a comparison's records too). Torch-free: the command line's choices come from here."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mlm_studio.core.config.sections import MAX_SEED
from mlm_studio.core.data.labelled import Columns
from mlm_studio.core.shown import shown

TASK_KINDS = ("classification", "tokens", "qa")  # a label per text (or text pair); a tag per word; an answer's span
POOLING_KINDS = ("cls", "mean")  # the first token's state, or the mean of the tokens' (ModernBERT's classifier)
SPLITS = ("train", "validation", "test")  # a task's files


class FieldError(ValueError):
    """A field of a JSON record that is missing or not what it must be: the message is a clause naming it
    (`its "seeds" must be a whole number from 1 to 100, not 'two'`); `foreign` when the record is of a kind this
    version does not know rather than damaged."""

    def __init__(self, clause: str, foreign: bool = False) -> None:
        super().__init__(clause)
        self.foreign = foreign


class Fields:
    """A JSON object read field by field, each value checked against its type and range as it is taken."""

    def __init__(self, raw: object, what: str = "") -> None:
        """`what`: the object's name inside its record ("files"), said before a field's name."""
        if not isinstance(raw, dict):
            where = f'its "{what}"' if what else "it"
            raise FieldError(f"{where} holds {_kind_of(raw)}, not a JSON object")
        self.raw, self.what = raw, what

    def named(self, name: str) -> str:
        """A field's name as a message says it: "files.train" inside "files"."""
        return f'"{self.what}.{name}"' if self.what else f'"{name}"'

    def wrong(self, name: str, rule: str) -> FieldError:
        """The FieldError of a field that is missing or not `rule`."""
        if name not in self.raw:
            return FieldError(f"its {self.named(name)} is missing (it must be {rule})")
        return FieldError(f"its {self.named(name)} must be {rule}, not {shown(self.raw[name])}")

    def has(self, name: str) -> bool:
        return self.raw.get(name) is not None

    def whole(self, name: str, low: int, high: int | None = None) -> int:
        value = self.raw.get(name)
        if not _is_whole(value) or value < low or (high is not None and value > high):
            rule = f"a whole number from {low:,} to {high:,}" if high is not None else f"a whole number, {low} or more"
            raise self.wrong(name, rule)
        return value

    def number(self, name: str, low: float, high: float) -> float:
        """A number in [`low`, `high`]."""
        value = self.raw.get(name)
        if not _is_number(value) or not low <= value <= high:
            raise self.wrong(name, f"a number from {low:g} to {high:g}")
        return float(value)

    def text(self, name: str, choices: tuple[str, ...] = (), foreign: bool = False) -> str:
        """A text (not empty), one of `choices` when given; a text outside them is a FieldError that is `foreign`
        with `foreign`."""
        value = self.raw.get(name)
        if not isinstance(value, str) or not value:
            raise self.wrong(name, f"one of {', '.join(choices)}" if choices else "a text")
        if choices and value not in choices:
            if foreign:
                raise FieldError(
                    f"its {self.named(name)} is {shown(value)}, which this version of MLM Studio does not know (it "
                    f"knows {', '.join(choices)}): the file was written by another program or version",
                    foreign=True,
                )
            raise self.wrong(name, f"one of {', '.join(choices)}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise self.wrong(name, "true or false")
        return value

    def texts(self, name: str) -> tuple[str, ...]:
        """A list of one or more different texts."""
        value = self.raw.get(name)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise self.wrong(name, "a list of one or more texts")
        seen: set[str] = set()
        for text in value:
            if text in seen:
                raise FieldError(f"its {self.named(name)} names {shown(text)} twice")
            seen.add(text)
        return tuple(value)

    def path(self, name: str, optional: bool = False) -> Path | None:
        value = self.raw.get(name)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value or "\0" in value:
            raise self.wrong(name, "the path of a file" + (", or null" if optional else ""))
        return Path(value)

    def part(self, name: str, optional: bool = False) -> Fields | None:
        """A JSON object inside this one (None for null, where `optional`)."""
        value = self.raw.get(name)
        if value is None and optional:
            return None
        if not isinstance(value, dict):
            raise self.wrong(name, "a JSON object" + (", or null" if optional else ""))
        return Fields(value, self.named(name).strip('"'))


def columns_of(fields: Fields, name: str) -> Columns | None:
    """The columns a record names (null: found by their usual names in the file's header); each a column's name,
    or null or "" where the header's usual name was to be found."""
    part = fields.part(name, optional=True)
    if part is None:
        return None
    named = []
    for column in ("text", "label", "pair"):
        value = part.raw.get(column)
        if value is not None and not isinstance(value, str):
            raise part.wrong(column, 'the name of a column, or null or "" for the usual one')
        named.append(value or "")
    return Columns(*named)


@dataclass(frozen=True)
class TaskSpec:
    """What a fine-tuning run predicts, from which files and how (see the module); `kind` is task.json's "task"."""

    kind: str
    labels: tuple[str, ...]  # in the order of the head's outputs
    train: Path
    validation: Path | None
    test: Path | None
    columns: Columns | None  # None: found in the training file's header (or a CoNLL or SQuAD file)
    split_seed: int  # which examples are held out (a split of the training file)
    pooling: str
    freeze_layers: int
    patience: int
    copies_as_read: bool = False  # copies are texts the tokenizer reads alike (else: as written)
    request: Mapping[str, Any] | None = field(default=None, compare=False)  # what it was asked (`request.py`)
    doc_stride: int | None = None  # question answering: tokens two windows of one context share
    max_answer_length: int | None = None  # question answering: tokens of the longest answer
    unanswerable: bool = False  # question answering: it learned to answer "no answer"

    @property
    def files(self) -> dict[str, Path | None]:
        """The task's files by split: {"train": …, "validation": …, "test": …}."""
        return dict(zip(SPLITS, (self.train, self.validation, self.test), strict=True))

    @classmethod
    def read(cls, raw: object) -> TaskSpec:
        """The spec a task.json's JSON value says; a FieldError names the first field that is missing or wrong."""
        fields = Fields(raw)
        kind = fields.text("task", TASK_KINDS, foreign=True)
        files = fields.part("files")
        validation, test = files.path("validation", optional=True), files.path("test", optional=True)
        if (validation is None) != (test is None):
            raise FieldError('its "files" name a validation file without a test file, or a test file without one')
        answering = kind == "qa"
        request = fields.part("request", optional=True)
        if request is not None and request.has("model") and not isinstance(request.raw["model"], str):
            raise request.wrong("model", "a text")
        return cls(
            kind=kind,
            labels=fields.texts("labels"),
            train=files.path("train"),
            validation=validation,
            test=test,
            columns=columns_of(fields, "columns"),
            split_seed=fields.whole("split_seed", 0, MAX_SEED),
            pooling=fields.text("pooling", POOLING_KINDS),
            freeze_layers=fields.whole("freeze_layers", 0),
            patience=fields.whole("patience", 1),
            copies_as_read=fields.flag("copies_as_read", False),
            request=None if request is None else MappingProxyType(dict(request.raw)),
            doc_stride=fields.whole("doc_stride", 1) if answering else None,
            max_answer_length=fields.whole("max_answer_length", 1) if answering else None,
            unanswerable=fields.flag("unanswerable", False) if answering else False,
        )

    def to_json(self) -> dict[str, Any]:
        """The spec as task.json holds it."""
        files = {name: str(path) if path is not None else None for name, path in self.files.items()}
        columns = None if self.columns is None else {
            "text": self.columns.text, "label": self.columns.label, "pair": self.columns.pair
        }  # fmt: skip
        answering = {"doc_stride": self.doc_stride, "max_answer_length": self.max_answer_length,
                     "unanswerable": self.unanswerable}  # fmt: skip
        return {
            "task": self.kind,
            "labels": list(self.labels),
            "files": files,
            "columns": columns,
            "split_seed": self.split_seed,
            "copies_as_read": self.copies_as_read,
            "pooling": self.pooling,
            "freeze_layers": self.freeze_layers,
            "patience": self.patience,
            "request": None if self.request is None else dict(self.request),
            **(answering if self.kind == "qa" else {}),
        }


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _kind_of(value: object) -> str:
    """A JSON value's kind, as a refusal says it: "a list", "a text", "null"."""
    if value is None:
        return "null"
    names = {bool: "true or false", int: "a number", float: "a number", str: "a text", list: "a list"}
    return names.get(type(value), "a JSON object")
