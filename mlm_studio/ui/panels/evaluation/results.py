"""The Evaluation panel's results and whose they are, without Qt. Every result is bound to the model, checkpoint and
comparison it was computed for (a `Choice`); each background task to the choice it was asked for. Each event — a
choice made, the corpus changed, a task asked, ended or arrived — is a transition that answers what the views must
now show, clear or say; the panel renders the answers, so these rules are tested without a window."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine's types, named only: the rules never load a model
    from mlm_studio.core.data.corpus import SourceReport
    from mlm_studio.core.evaluation.diagnosis import Diagnosis
    from mlm_studio.core.evaluation.subject import Subject
    from mlm_studio.core.evaluation.sweep import CheckpointScore
    from mlm_studio.core.evaluation.task_probe import TaskResult

EVALUATE_TIP = "Score the chosen model on held-out blocks: its answers, where it fails, and what it learned"
NO_MODEL_TIP = "No model chosen yet: train a run on the Training panel, or add a model folder with Model folder…"
NOT_A_RUN = "An imported model has no checkpoints: choose a run to score each of its checkpoints"
EVERY_TIP = (
    "Score every checkpoint of the run (and probe the task, when a file is chosen): the breakdowns and the "
    "task accuracy as curves over training"
)
COMPARE_NEXT = "Evaluate to compare the two models."


class Task(Enum):
    """The panel's background tasks."""

    EVALUATE = "evaluate"  # the chosen model (and the one compared) scored on held-out blocks
    TRACK = "track"  # every checkpoint of the chosen run
    MAP = "map"  # a word's contexts, by the evaluated model's vectors
    PROBE = "probe"  # a labelled task, by the evaluated model's sentence vectors


@dataclass(frozen=True)
class Choice:
    """What Evaluate scores: a model, its checkpoint (None: the latest) and the model compared (None: none), with
    the names the choosers show them by and whether the model is imported (a Hugging Face folder: no checkpoints,
    scored on the workspace's corpus)."""

    path: str | None
    step: int | None
    other: str | None
    name: str = field(default="", compare=False)
    other_name: str = field(default="", compare=False)
    imported: bool = field(default=False, compare=False)

    @property
    def model(self) -> tuple[str | None, int | None]:
        """The model and its checkpoint, without the comparison."""
        return self.path, self.step

    @property
    def wanted(self) -> str:
        """The choice by its names: "late, latest checkpoint beside early"."""
        return self.name + (f" beside {self.other_name}" if self.other else "")


@dataclass(frozen=True)
class Said:
    """A message for the panel's bar; an empty text takes the message there away."""

    text: str
    level: str = "info"


SILENCE = Said("")


@dataclass(frozen=True)
class Update:
    """What the views must do after an event; each field's default leaves them as they are."""

    stop: tuple[Task, ...] = ()  # tasks to cancel without a word: their result would belong to another choice
    forget: bool = False  # every result of the model shown leaves (the curves over a run's checkpoints stay)
    forget_comparison: bool = False  # the compared model leaves: the evaluated one is shown alone
    forget_series: bool = False  # the curves over the run's checkpoints leave
    forget_corpus_views: bool = False  # the contexts and the search read the corpus before
    said: Said | None = None  # None: the message stays


@dataclass(frozen=True)
class Offered:
    """What the panel's two buttons offer, and their tooltips saying why."""

    evaluate: bool
    evaluate_tip: str
    every: bool
    every_tip: str


def offered(choice: Choice, busy: bool) -> Offered:
    """Evaluate needs a model chosen, Every checkpoint a run, both that nothing runs."""
    chosen = choice.path is not None
    is_run = chosen and not choice.imported
    every_tip = EVERY_TIP if is_run else NOT_A_RUN if chosen else NO_MODEL_TIP
    return Offered(chosen and not busy, EVALUATE_TIP if chosen else NO_MODEL_TIP, is_run and not busy, every_tip)


def reported(text: str, report: SourceReport | None) -> Said:
    """`text`, and as a warning what of a task file was read in a fallback encoding or not used."""
    if report is not None and report.noteworthy:
        return Said("\n".join([text, *report.describe()[2:]]), "warning")
    return Said(text)


class Results:
    """What the panel shows and for which choice; what it was asked to compute, and what it stopped."""

    def __init__(self) -> None:
        self.chosen: Choice | None = None  # what the choosers choose
        self.shown: Choice | None = None  # what the results shown were evaluated for
        self.forgotten = ""  # the results last cleared for another choice, named
        self.subject: Subject | None = None
        self.diagnosis: Diagnosis | None = None
        self.blocks: object | None = None  # the evaluated model's samples, as the samples view shows them
        self.other: Subject | None = None  # the model compared, if any
        self.other_diagnosis: Diagnosis | None = None
        self.task_results: list[tuple[str, TaskResult]] = []
        self.scores: list[CheckpointScore] = []
        self.tracked_run: str | None = None  # the run whose checkpoints the curves are
        self.asked: dict[Task, Choice] = {}  # the tasks under way, by what each was started for
        self.dropped: set[Task] = set()  # tasks stopped because the choice changed: their end is not news

    # --- the user's acts and the workspace's news ---------------------------------------------------
    def choose(self, choice: Choice) -> Update:
        """Another model, checkpoint or comparison: the results of the one before leave (the model's own stay
        when only the comparison changed), the tasks started for it stop, and what was said of it goes."""
        if choice == self.chosen:
            return Update()  # the lists were read again (a run wrote a checkpoint): the choice is the same
        self.chosen = choice
        stop = tuple(task for task, asked in self.asked.items() if not _still_for(task, asked, choice))
        self.dropped.update(stop)
        forget_series = self.tracked_run is not None and choice.path != self.tracked_run
        if forget_series:
            self.tracked_run, self.scores = None, []
        if self.shown is not None and choice.model != self.shown.model:
            self._forget(self.names())
            return Update(stop, forget=True, forget_series=forget_series, said=SILENCE)
        if self.shown is not None and choice.other != self.shown.other:
            self.other = self.other_diagnosis = None
            self.shown = replace(self.shown, other=None, other_name="")
            said = Said(COMPARE_NEXT) if choice.other is not None else SILENCE
            return Update(stop, forget_comparison=True, forget_series=forget_series, said=said)
        return Update(stop, forget_series=forget_series, said=SILENCE)

    def corpus_changed(self) -> Update:
        """Another corpus: the contexts and the search read it again; an imported model's blocks were cut from the
        one before."""
        stop = (Task.MAP,) if Task.MAP in self.asked else ()
        self.dropped.update(stop)
        imported = self.shown is not None and self.shown.imported
        if imported:
            self._forget(f"{self.names()} (on the corpus before)")
        return Update(stop, forget=imported, forget_corpus_views=True)

    def ask(self, task: Task, choice: Choice) -> None:
        """`task` starts for `choice` (one started before in its place reports nothing)."""
        self.asked[task] = choice
        self.dropped.discard(task)

    # --- what the tasks bring back ------------------------------------------------------------------
    def ended(self, task: Task, failure: str | None = None) -> Said | None:
        """`task` failed (`failure`, its message) or was cancelled: said, unless it was stopped for another choice."""
        if not self._arrived(task):
            return None
        return Said(failure, "error") if failure is not None else Said("Cancelled.")

    def evaluated(self, choice: Choice, first: tuple, compared: tuple | None) -> bool:
        """The scores of `choice`'s model, `(subject, diagnosis, blocks)`, and the compared one's: True when they
        are shown, False when another choice was made meanwhile (they would be shown under another name)."""
        if not self._arrived(Task.EVALUATE) or choice != self.chosen:
            return False
        self.subject, self.diagnosis, self.blocks = first
        self.other, self.other_diagnosis, _ = compared or (None, None, None)
        self.shown, self.forgotten, self.task_results = choice, "", []
        return True

    def tracked(self, path: str, scores: list[CheckpointScore]) -> bool:
        """Every checkpoint of the run at `path` scored: True when the curves are shown (that run is chosen)."""
        if not self._arrived(Task.TRACK) or self.chosen is None or path != self.chosen.path:
            return False
        self.tracked_run, self.scores = path, scores
        return True

    def mapped(self) -> bool:
        """A word's contexts arrived: True when they are shown (computed for the models still shown)."""
        return self._arrived(Task.MAP)

    def probed(self, results: list[tuple[str, TaskResult]]) -> bool:
        """A task's probe arrived: True when it is shown (computed for the models still shown)."""
        if not self._arrived(Task.PROBE):
            return False
        self.task_results = results
        return True

    # --- what is shown ------------------------------------------------------------------------------
    @property
    def evaluated_subjects(self) -> list[Subject]:
        """The models shown: the evaluated one and the one compared, if any."""
        return [s for s in (self.subject, self.other) if s is not None]

    def names(self) -> str:
        """The models shown, by their titles."""
        return " beside ".join(s.title for s in self.evaluated_subjects)

    def line(self) -> str:
        """The line above the tabs: whose results they show, or what Evaluate would score ("" with no model)."""
        choice = self.chosen
        if choice is None or choice.path is None:
            return ""
        if self.shown is None and self.forgotten:
            return f"Results of {self.forgotten} cleared — press Evaluate for {choice.wanted}."
        if self.shown is None:
            return f"Nothing evaluated yet: press Evaluate to score {choice.wanted}."
        if choice.other is not None and choice.other != self.shown.other:
            return f"Shown: {self.subject.title} alone — press Evaluate to compare it with {choice.other_name}."
        return f"Shown: {self.names()}."

    def _forget(self, names: str) -> None:
        self.subject = self.diagnosis = self.blocks = self.other = self.other_diagnosis = self.shown = None
        self.forgotten, self.task_results = names, []

    def _arrived(self, task: Task) -> bool:
        """`task` is over: True unless it was stopped for another choice (its end then is not news)."""
        self.asked.pop(task, None)
        if task in self.dropped:
            self.dropped.discard(task)
            return False
        return True


def _still_for(task: Task, asked: Choice, choice: Choice) -> bool:
    """Whether a task asked for `asked` still serves `choice`: every checkpoint of a run serves any checkpoint and
    comparison of that run; the other tasks serve exactly the choice they were asked for."""
    return asked.path == choice.path if task is Task.TRACK else asked == choice
