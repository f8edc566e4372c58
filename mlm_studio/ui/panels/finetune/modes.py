"""The Fine-tune panel's three ways of running: one run, a comparison (the model, its starting model and the same
from scratch over several seeds) and a recipe search (several learning rates on the validation split). Each is one
object chosen when it starts or is reopened; it prepares its work for the trainer thread, follows the records that
arrive (which run of how many, how far it has come) and says the status line and the bar; the panel shows what it
says. No Qt here: the rules are tested without a window."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import SimpleNamespace

from mlm_studio.core.errors import UserError
from mlm_studio.core.finetune.compare import compare, contenders
from mlm_studio.core.finetune.comparisons import Comparison, read_comparison
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.recipe.result import RecipeSearch, read_search
from mlm_studio.core.finetune.recipe.search import SearchPlan, search
from mlm_studio.core.finetune.scores import main_score, score_field
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.records import (
    FinishedRecord,
    PausedRecord,
    Record,
    StepRecord,
    TestRecord,
    ValidationRecord,
    WarningRecord,
)
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.ui.panels.finetune.subjects import contender_subject, finished_line, run_subject, trial_subject

UNREADABLE = (CheckpointError, OSError, TypeError, ValueError, KeyError)  # a damaged or half-written folder
NOTES_SAID = 3  # a series' notes said when it ends, the rest counted


class ReopenError(UserError):
    """A comparison's or search's folder that cannot be read back (damaged, or no longer one)."""


@dataclass(frozen=True)
class Said:
    """What a record says: a status `line` (`detail`: all of it, for the line's tooltip), or a `warning` for the
    message bar; nothing for a record the status line passes over."""

    line: str = ""
    detail: str = ""
    warning: str = ""


class OneRun:
    """One fine-tuning run, new (from `spec` and `options`) or resumed (neither): its records are its own, the bar
    counts its steps, its test scores are shown at once and exported."""

    series = False  # True for several runs in turn: each run's curves replace the last's, a failure ends the rest

    def __init__(self, path: Path | None = None, spec: str | None = None, options: FinetuneOptions | None = None):
        self.root, self.spec, self.options = path, spec, options
        self.step, self.total_steps = 0, 1  # of the run training

    def prepare(self, progress, control, held):
        """The work the trainer thread runs (called on it)."""
        held.enter_context(RunLock(self.root))
        return prepare_finetuner(
            self.root, self.spec, self.options, control, progress=progress, pause_on_save_error=True
        )

    def record_of(self, item) -> Record:
        return item

    def who(self, item) -> str:
        """What a status line about `item` starts with: nothing for one run's."""
        return ""

    def started(self, item, path: Path, step: int, total_steps: int) -> str:
        """A run began in `path` at `step` of `total_steps`: what its tabs are named from now on."""
        self.step, self.total_steps = step, total_steps
        return run_subject(path)

    def reached(self, step: int) -> None:
        self.step = step

    @property
    def progress(self) -> tuple[int, int]:
        """The bar: the steps the run training has taken of its total."""
        return self.step, max(self.total_steps, 1)

    def starting_line(self, item, path: Path) -> str:
        return f"{self.who(item)}Fine-tuning {path.name}"

    def step_line(self, paused: bool, who: str = "") -> str:
        """How far the run has come, and that it waits while paused (`who`: whose run it is)."""
        step = "Paused after step" if paused else "step"
        return f"{who}{step} {self.step:,} of {self.total_steps:,}"

    def finished_line(self, item, finished: FinishedRecord, test: TestRecord | None) -> str:
        return self.who(item) + finished_line(finished, self.total_steps, test)

    def said(self, item, record: Record, paused: bool, test: TestRecord | None) -> Said:
        """What `record` (of `item`) says, whose it is first; `paused`: the run waits; `test`: its test scores."""
        who = self.who(item)
        if isinstance(record, StepRecord):
            return Said(self.step_line(paused, who))
        if isinstance(record, ValidationRecord):
            line = f"{who}validation {score_field(record)[1]} {main_score(record):.1%} at step {record.step:,}"
            return Said(line, detail=record.describe())  # with its loss and every score
        if isinstance(record, (WarningRecord, PausedRecord)):
            return Said(warning=f"{who}{record.message}")
        if isinstance(record, FinishedRecord):
            return Said(self.finished_line(item, record, test))
        return Said()

    def refreshes(self, record: Record) -> bool:
        """Whether the series' table is read again after `record` (never, for one run)."""
        return False


class Series(OneRun):
    """Several runs in `root`, each record said by whom; its outcome read from its folder (`read`), what it is
    called (`what`) and its status line (`line`) are each kind's."""

    series = True
    what = ""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.begun = 0  # its runs begun, counted from the records that arrived
        self.notes: dict[str, None] = {}  # what its runs noted, each note once, in the order they came

    def record_of(self, item) -> Record:
        return item.record

    def said(self, item, record: Record, paused: bool, test: TestRecord | None) -> Said:
        if isinstance(record, WarningRecord):
            self.notes.setdefault(record.message)
        return super().said(item, record, paused, test)

    def closing_note(self) -> str:
        """What the message bar says once the series has ended: the notes of its runs, each once and whoever made
        it (a run's note with its name would read as the series' own); "" when they noted nothing."""
        if not self.notes:
            return ""
        notes = list(self.notes)
        more = f"; and {len(notes) - NOTES_SAID:,} more" if len(notes) > NOTES_SAID else ""
        return f"The {self.what} {self.root.name}: its runs noted {'; '.join(notes[:NOTES_SAID])}{more}"

    def started(self, item, path: Path, step: int, total_steps: int) -> str:
        self.begun += 1
        super().started(item, path, step, total_steps)
        return self.subject(item, path)

    def read_back(self):
        """The series as its folder tells it; a ReopenError says why there is none."""
        try:
            found = self.read(self.root)
        except UNREADABLE as exc:
            raise ReopenError(f"Could not read the {self.what} {self.root.name}: {exc}") from exc
        if found is None:
            raise ReopenError(f"{self.root.name} holds no {self.what} any more")
        return found

    def now(self):
        """The series as its folder tells it now, or None while a run folder is half-written (the next run's
        record reads it again)."""
        try:
            return self.read(self.root)
        except UNREADABLE:
            return None


class ComparisonRun(Series):
    """A comparison in `root`: each contender of `spec` fine-tuned with `options`, once per seed (`seeds`)."""

    what = "comparison"

    def __init__(self, root: Path, spec: str | None = None, options: FinetuneOptions | None = None, seeds: int = 0):
        super().__init__(root)
        self.spec, self.options, self.seeds = spec, options, seeds
        self.runs = len(contenders(spec)) * seeds if spec is not None else 0

    def prepare(self, progress, control, held):
        held.enter_context(RunLock(self.root))
        return SimpleNamespace(run=partial(compare, self.spec, self.options, self.root, self.seeds, control))

    @staticmethod
    def read(root: Path) -> Comparison | None:
        return read_comparison(root)

    def who(self, item) -> str:
        """`[contender, seed n, run i of N] `: i counts the runs begun."""
        return f"[{item.contender.label}, seed {item.seed}, run {self.begun} of {self.runs}] "

    def subject(self, item, path: Path) -> str:
        return contender_subject(item, path)

    def refreshes(self, record: Record) -> bool:
        """The table is read again as each run ends: its scores are in the run's folder."""
        return isinstance(record, FinishedRecord)

    @staticmethod
    def counts(found: Comparison) -> tuple[int, int]:
        """The bar of a comparison read back: its runs finished of those it makes."""
        return len(found.counted), max(found.expected, 1)

    @staticmethod
    def line(found: Comparison) -> str:
        return f"Comparison {found.path.name}: {found.state}"


class SearchRun(Series):
    """A recipe search in `root`, of `plan` (new or continued; None when reopened only to be shown)."""

    what = "recipe search"

    def __init__(self, root: Path, plan: SearchPlan | None = None) -> None:
        super().__init__(root)
        self.plan = plan

    def prepare(self, progress, control, held):
        held.enter_context(RunLock(self.root))
        return SimpleNamespace(run=partial(search, self.plan, self.root, control))

    @staticmethod
    def read(root: Path) -> RecipeSearch | None:
        return read_search(root)

    def who(self, item) -> str:
        """`[lr x, seed n, run i of N] `: the search says which run of its plan each record is from."""
        return f"[lr {item.learning_rate:g}, seed {item.seed}, run {item.run} of {item.runs}] "

    def subject(self, item, path: Path) -> str:
        return trial_subject(item, path)

    def refreshes(self, record: Record) -> bool:
        """The table is read again as each run begins, with the runs before it."""
        return record.kind == "started"

    @staticmethod
    def counts(found: RecipeSearch) -> tuple[int, int]:
        return found.counted, max(found.expected, 1)

    @staticmethod
    def line(found: RecipeSearch) -> str:
        left = "" if found.complete else "; Resume on the Runs tab continues it"
        return f"Recipe search {found.path.name}: {found.state}{left}"
