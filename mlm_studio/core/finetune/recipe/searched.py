"""What a recipe search searches, as its folder's `search.json` keeps it, read back with every field checked
(`Searched`): the model and its fingerprint, the task and its files (each with its fingerprint), the grid of
learning rates, the most epochs, the seeds, the held-out examples' seed and the options it fixes. A field missing or
of the wrong type or value is refused in one sentence naming the file and the field (`RecordError`), so that a
damaged record is said, never read as another search."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlm_studio.core.config.sections import MAX_SEED
from mlm_studio.core.data.labelled import Columns
from mlm_studio.core.finetune.options import FinetuneOptions, OptionError
from mlm_studio.core.finetune.tasks import MAX_SEEDS
from mlm_studio.core.runs.task_spec import POOLING_KINDS, SPLITS, TASK_KINDS, FieldError, Fields, columns_of
from mlm_studio.core.storage.json_record import read_record, record_error

PLAN = "search.json"  # in a search's folder: what it searches
MAX_EPOCHS = 1000  # the most epochs a search's runs train
# the options a search fixes for every run, and what each must be
FIXED = {"batch_size": int, "warmup_share": float, "weight_decay": float, "freeze_layers": int, "patience": int,
         "eval_interval": int, "max_length": int, "pooling": str}  # fmt: skip


@dataclass(frozen=True)
class TaskFile:
    """A task's file as a search records it: where it is, and the SHA-256 of its bytes then."""

    path: Path
    sha256: str


@dataclass(frozen=True)
class Searched:
    """What a search searches (see the module)."""

    model: str  # the model as it was given: a path, or a Hub name (`scratch:` before it for fresh weights)
    model_fingerprint: str  # `request.model_fingerprint` of the model then
    task: str
    files: dict[str, TaskFile | None]  # by split: train, validation, test
    columns: Columns | None
    learning_rates: tuple[float, ...]
    max_epochs: int
    first_seed: int
    seeds: int
    held_out_seed: int  # which examples are held out (a split of the training file), for every run
    fixed: dict[str, Any]  # FIXED's options

    @property
    def train(self) -> TaskFile:
        return self.files["train"]

    @property
    def seed_range(self) -> range:
        return range(self.first_seed, self.first_seed + self.seeds)


def read_plan(folder: Path) -> Searched:
    """The search `folder`'s search.json read back; RecordError (a CheckpointError) naming the file and the field
    when it cannot be read or a field is missing or wrong."""
    path = folder / PLAN
    try:
        return _searched(Fields(read_record(path)))
    except FieldError as exc:
        raise record_error(path, str(exc), exc.foreign) from None


def _searched(fields: Fields) -> Searched:
    files = {name: _task_file(fields, f"{name} file", optional=name != "train") for name in SPLITS}
    if (files["validation"] is None) != (files["test"] is None):
        raise FieldError('it names a "validation file" without a "test file", or a "test file" without one')
    fixed = fields.part("fixed options")
    searched = Searched(
        model=fields.text("model"),
        model_fingerprint=fields.text("model fingerprint"),
        task=fields.text("task", TASK_KINDS, foreign=True),
        files=files,
        columns=columns_of(fields, "columns"),
        learning_rates=_learning_rates(fields),
        max_epochs=fields.whole("max epochs", 1, MAX_EPOCHS),
        first_seed=fields.whole("first seed", 0, MAX_SEED),
        seeds=fields.whole("seeds", 1, MAX_SEEDS),
        held_out_seed=fields.whole("held-out examples' seed", 0, MAX_SEED),
        fixed={name: _fixed(fixed, name, kind) for name, kind in FIXED.items()},
    )
    try:  # each fixed option in its range, as a new search's are
        recipe_options(searched, searched.learning_rates[0], searched.max_epochs)
    except OptionError as exc:
        raise FieldError(f'its "fixed options" are not a recipe: {exc.sentence(exc.field)}') from None
    return searched


def _task_file(fields: Fields, name: str, optional: bool) -> TaskFile | None:
    part = fields.part(name, optional=optional)
    return None if part is None else TaskFile(part.path("path"), part.text("sha256"))


def _learning_rates(fields: Fields) -> tuple[float, ...]:
    """The grid: one or more different numbers, each more than 0 and less than 1."""
    rates = fields.raw.get("learning rates")
    rule = "a list of one or more different numbers, each more than 0 and less than 1"
    numbers = isinstance(rates, list) and rates and all(isinstance(r, (int, float)) and not isinstance(r, bool)
                                                         for r in rates)  # fmt: skip
    if not numbers or not all(0 < r < 1 for r in rates) or len(set(rates)) != len(rates):
        raise fields.wrong("learning rates", rule)
    return tuple(float(r) for r in rates)


def _fixed(fields: Fields, name: str, kind: type) -> Any:
    if kind is int:
        return fields.whole(name, 0)
    if kind is float:
        return fields.number(name, 0, 1)
    return fields.text(name, POOLING_KINDS)


def recipe_options(searched: Searched, learning_rate: float, epochs: float) -> tuple[str, FinetuneOptions]:
    """The model and options a search fine-tuned with, the recipe given: to train the chosen one on the very model
    and task it was searched on (OptionError for a value out of its range)."""
    paths = {name: None if file is None else file.path for name, file in searched.files.items()}
    options = FinetuneOptions(
        task=searched.task,
        **paths,
        columns=searched.columns,
        learning_rate=learning_rate,
        epochs=epochs,
        seed=searched.first_seed,
        split_seed=searched.held_out_seed,
        **searched.fixed,
    )
    return searched.model, options
