"""Evaluation panel: is the model any good? For a run (any checkpoint) or an imported model: the held-out
blocks with its answers, where it fails, what it learned (a word's contexts by their vectors), whether its
sentence vectors help a labelled task of your own, and the corpus's documents nearest a query (search).
Everything heavy runs in the background with progress and cancel. Every result is bound to the model,
checkpoint and comparison it was computed for: choosing another clears it, and a line above the tabs says whose
results are shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QTabWidget, QVBoxLayout, QWidget

from mlm_studio.core.data.corpus import SourceReport
from mlm_studio.core.errors import UserError
from mlm_studio.core.evaluation.contexts import ContextMap, place
from mlm_studio.core.evaluation.diagnosis import Diagnosis
from mlm_studio.core.evaluation.subject import Subject
from mlm_studio.core.evaluation.sweep import CheckpointScore
from mlm_studio.core.evaluation.task_probe import TaskResult
from mlm_studio.core.models.encoder import layer_count
from mlm_studio.core.models.hf_folder import is_hf_folder
from mlm_studio.core.storage.json_text import json_object
from mlm_studio.ui.construction import Construction
from mlm_studio.ui.panels.evaluation_choice import Choice, EvaluationChoice
from mlm_studio.ui.panels.evaluation_tasks import (
    Work,
    mapping,
    missing_for_contexts,
    missing_for_scoring,
    probing,
    scoring,
    tracking,
)
from mlm_studio.ui.panels.explained_samples import ExplainedSamples
from mlm_studio.ui.panels.search_view import SearchView
from mlm_studio.ui.tasks import TaskRunner, show_progress
from mlm_studio.ui.widgets.context_view import ContextView
from mlm_studio.ui.widgets.diagnosis_views import AnsweredBlocks, FailuresView, SamplesView
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.task_view import TaskView
from mlm_studio.ui.workspace import Workspace

EVALUATE_TIP = "Score the chosen model on held-out blocks: its answers, where it fails, and what it learned"
NO_MODEL = "No model chosen yet: train a run on the Training panel, or add a model folder with Model folder…"
NOT_A_RUN = "An imported model has no checkpoints: choose a run to score each of its checkpoints"
EVERY_TIP = (
    "Score every checkpoint of the run (and probe the task, when a file is chosen): the breakdowns and the "
    "task accuracy as curves over training"
)


class EvaluationPanel(QWidget):
    evaluated = Signal()  # a diagnosis is shown
    mapped = Signal()  # a word's contexts are shown
    tracked = Signal()  # every checkpoint's scores are shown
    probed = Signal()  # a task probe's result is shown

    def __init__(self, workspace: Workspace, parent: QWidget | None = None, sliced: bool = False) -> None:
        """`sliced`: leave the construction's steps, one tab each, to the window's launch; otherwise build it all."""
        super().__init__(parent)
        self.workspace = workspace
        self.subject: Subject | None = None
        self.diagnosis: Diagnosis | None = None
        self.blocks: AnsweredBlocks | None = None  # the evaluated model's samples, as shown
        self.other: Subject | None = None  # the model compared, if any
        self.other_diagnosis: Diagnosis | None = None
        self.chosen: Choice | None = None  # what the choosers choose
        self.shown: Choice | None = None  # what the results shown were evaluated for
        self.forgotten = ""  # the results last cleared for another choice, named
        self.task_results: list[tuple[str, TaskResult]] = []
        self.scores: list[CheckpointScore] = []
        self.tracked_run: str | None = None  # the run whose checkpoints the curves are
        self.evaluator, self.mapper, self.prober = TaskRunner(self), TaskRunner(self), TaskRunner(self)
        self.tracker = TaskRunner(self)
        self.asked: dict[TaskRunner, Choice] = {}  # what each task was started for
        self.dropped: set[TaskRunner] = set()  # tasks stopped because the choice changed: their end is not news
        self.construction = Construction(self._build(), sliced)

    def showEvent(self, event: QShowEvent) -> None:
        self.construction.finish()  # shown before the window has built it all
        super().showEvent(event)

    def _build(self) -> Iterator[None]:
        """The controls and the model lists first (the workspace's news reaches them from then on), then each tab."""
        self._build_controls()
        self.evaluator.succeeded.connect(self._on_diagnosis)
        self.tracker.succeeded.connect(self._on_scores)
        self.mapper.succeeded.connect(self._on_context)
        self.prober.succeeded.connect(self._on_probe)
        for runner in self.runners:
            runner.progress.connect(partial(show_progress, self.progress_bar))
            runner.failed.connect(partial(self._on_failed, runner))
            runner.cancelled.connect(partial(self._on_cancelled, runner))
            runner.finished.connect(lambda: self._busy(False))
        self.workspace.run_changed.connect(self.choice.follow)
        self.workspace.runs_changed.connect(self.choice.refresh)
        self.workspace.initial_model_changed.connect(self._on_initial_model)
        self.choice.refresh()
        yield
        self.samples_view = SamplesView()
        self.explained_samples = ExplainedSamples(self.samples_view, lambda: self.subject, lambda: self.shown)
        self.tabs.addTab(self.explained_samples, "Masked samples")
        yield
        self.failures_view = FailuresView()
        self.tabs.addTab(self.failures_view, "Where it fails")
        yield
        self.context_view = ContextView()
        self.context_view.requested.connect(self.map_word)
        self.context_view.place_requested.connect(self.place_sentence)
        self.tabs.addTab(self.context_view, "What it learned")
        yield
        self.task_view = TaskView()
        self.task_view.probe_requested.connect(self.probe)
        self.tabs.addTab(self.task_view, "Does it help a task")
        yield
        self.search_view = SearchView(lambda: self.subject, lambda: self.workspace.corpus)
        self.tabs.addTab(self.search_view, "Search")
        self.choice.changed.connect(self._on_choice_changed)  # the views that results leave are all built
        self.workspace.corpus_changed.connect(self._on_corpus_changed)
        self._on_choice_changed()

    def _build_controls(self) -> None:
        self.choice = EvaluationChoice(self.workspace)
        self.model_combo, self.checkpoint_combo = self.choice.model_combo, self.choice.checkpoint_combo
        self.compare_combo, self.folder_button = self.choice.compare_combo, self.choice.folder_button
        self.choice.changed.connect(lambda: self._update_buttons())
        self.evaluate_button = QPushButton("Evaluate")
        self.evaluate_button.clicked.connect(self.evaluate)
        self.every_button = QPushButton("Every checkpoint")
        self.every_button.clicked.connect(self.track)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(lambda: [r.cancel() for r in self.runners])
        self.cancel_button.hide()
        self.progress_bar = QProgressBar()
        self.progress_bar.hide()
        self.message_bar = MessageBar()
        self.subject_label = QLabel()  # whose results the tabs show, or what Evaluate would score
        self.subject_label.setWordWrap(True)
        top = QHBoxLayout()
        top.addWidget(self.choice, 1)
        top.addWidget(self.evaluate_button)
        top.addWidget(self.every_button)
        top.addWidget(self.cancel_button)
        self._update_buttons()
        self.tabs = QTabWidget()
        self.tabs.currentChanged.connect(lambda _: self.message_bar.clear())  # it spoke of the tab left
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.subject_label)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.tabs, 1)

    # --- which model --------------------------------------------------------------------------------
    @property
    def runs_root(self) -> Path:
        return self.workspace.runs_root

    def add_folder(self, folder: str) -> None:
        """Offer a run or a Hugging Face model folder and choose it."""
        self.choice.add_folder(folder)

    def _on_initial_model(self, imported) -> None:
        """New runs start from an imported model: it is offered here, chosen only while the chooser follows the
        current run."""
        if imported is not None:
            self.choice.add_folder(str(imported.folder), picked=False)

    def _on_choice_changed(self) -> None:
        """Another model, checkpoint or comparison: the results of the one before leave (the model's own stay
        when only the comparison changed), the tasks started for it stop, and what was said of it goes."""
        choice = self.choice.current()
        if choice == self.chosen:
            return  # the lists were read again (a run wrote a checkpoint), the choice is the same
        self.chosen = choice
        self.message_bar.clear()
        for runner, asked in list(self.asked.items()):
            if runner.running and (asked.path != choice.path if runner is self.tracker else asked != choice):
                self._drop(runner)
        if self.tracked_run is not None and choice.path != self.tracked_run:
            self._forget_series()
        if self.shown is not None and choice.model != self.shown.model:
            self._forget(self._shown_names())
        elif self.shown is not None and choice.other != self.shown.other:
            self._forget_comparison()
            if choice.other is not None:
                self.message_bar.show_message("Evaluate to compare the two models.", "info")
        self._update_subject_line()

    def _on_corpus_changed(self, _corpus) -> None:
        """Another corpus: the contexts and the search read it again; an imported model's blocks were cut from the
        one before."""
        self._drop(self.mapper)
        self.context_view.clear()
        self.search_view.clear()
        if self.shown is not None and is_hf_folder(self.shown.path):
            self._forget(f"{self._shown_names()} (on the corpus before)")
            self._update_subject_line()

    def _shown_names(self) -> str:
        return self.subject.title + (f" beside {self.other.title}" if self.other is not None else "")

    def _forget(self, names: str) -> None:
        """Every result of the model shown leaves; the curves over the run's checkpoints stay."""
        self.subject = self.diagnosis = self.blocks = self.other = self.other_diagnosis = self.shown = None
        self.forgotten, self.task_results = names, []
        self.samples_view.clear()
        self.explained_samples.put_away()
        self.failures_view.clear()
        self.context_view.clear()
        self.task_view.clear()
        self.search_view.clear()
        self._busy(False)

    def _forget_comparison(self) -> None:
        """The compared model leaves every view at once; the evaluated one's results stay."""
        self.other = self.other_diagnosis = None
        self.shown = replace(self.shown, other=None, other_name="")
        self.samples_view.show_blocks(self.blocks)
        self.failures_view.show_diagnosis(self.diagnosis, None, (self.subject.title, ""))
        self.context_view.clear()
        self.task_view.clear()

    def _forget_series(self) -> None:
        self.tracked_run, self.scores = None, []
        self.failures_view.clear_series()
        self.task_view.clear_series()

    def _update_subject_line(self) -> None:
        choice = self.choice.current()
        wanted = choice.name + (f" beside {choice.other_name}" if choice.other else "")
        if choice.path is None:
            text = ""
        elif self.shown is None and self.forgotten:
            text = f"Results of {self.forgotten} cleared — press Evaluate for {wanted}."
        elif self.shown is None:
            text = f"Nothing evaluated yet: press Evaluate to score {wanted}."
        else:
            text = f"Shown: {self._shown_names()}."
            if choice.other is not None and choice.other != self.shown.other:
                text = f"Shown: {self.subject.title} alone — press Evaluate to compare it with {choice.other_name}."
        self.subject_label.setText(text)
        self.subject_label.setVisible(bool(text))

    # --- work ---------------------------------------------------------------------------------------
    @property
    def runners(self) -> tuple[TaskRunner, ...]:
        return (self.evaluator, self.mapper, self.prober, self.tracker)

    def _start(self, runner: TaskRunner, work: Work) -> None:
        self.asked[runner] = self.choice.current()
        self.dropped.discard(runner)
        self._busy(True)
        runner.start(work)

    def _drop(self, runner: TaskRunner) -> None:
        """Stop a task whose result would belong to a model no longer chosen, without a word."""
        if runner.running:
            self.dropped.add(runner)
            runner.cancel()

    def _on_failed(self, runner: TaskRunner, message: str) -> None:
        if runner not in self.dropped:
            self.message_bar.show_message(message, "error")

    def _on_cancelled(self, runner: TaskRunner) -> None:
        if runner in self.dropped:
            self.dropped.discard(runner)
        else:
            self.message_bar.show_message("Cancelled.", "info")

    def evaluate(self) -> None:
        """Score the chosen model and checkpoint on held-out blocks (and the model compared), in the background."""
        choice, corpus = self.choice.current(), self.workspace.corpus
        if choice.path is None:
            self.message_bar.show_message("No model yet: train a run, or choose a model folder.", "warning")
            return
        missing = missing_for_scoring(choice, corpus is None)
        if missing:
            self.message_bar.show_message(missing, "warning")
            return
        self._start(self.evaluator, scoring(choice, corpus))

    def _on_diagnosis(self, result) -> None:
        choice, first, compared = result
        if choice != self.choice.current():
            return  # chosen otherwise meanwhile: these results would be shown under another name
        self.subject, self.diagnosis, self.blocks = first
        self.other, self.other_diagnosis, other_blocks = compared or (None, None, None)
        self.shown, self.forgotten = choice, ""
        layers = layer_count(self.subject.encoder)
        self.context_view.set_layers(layers)
        self.search_view.set_model(self.subject)
        self.task_view.layer_spin.setRange(0, layers)
        self.context_view.clear()  # the maps and the probe were another model's
        self.task_view.clear()
        self.samples_view.show_blocks(self.blocks, other_blocks)
        titles = (self.subject.title, self.other.title if self.other is not None else "")
        self.failures_view.show_diagnosis(self.diagnosis, self.other_diagnosis, titles)
        first = self.diagnosis
        said = f"{self.subject.title}: {first.accuracy:.1%} of {first.predicted:,} masked tokens right"
        if self.other is not None:
            said += f"; {self.other.title}: {self.other_diagnosis.accuracy:.1%} of {self.other_diagnosis.predicted:,}"
        self.message_bar.show_message(said + ".", "info")
        self._update_subject_line()
        self.evaluated.emit()

    def track(self) -> None:
        """Score every checkpoint of the chosen run (and probe the task, when a file is chosen), in the background."""
        path = self.choice.current().path
        if path is None or is_hf_folder(path):
            self.message_bar.show_message("Every checkpoint needs a run: choose one.", "warning")
            return
        task_file, *columns, _ = self.task_view.request()
        self._start(self.tracker, tracking(path, task_file, columns))

    def _on_scores(self, outcome: tuple[str, list[CheckpointScore], SourceReport | None]) -> None:
        path, scores, task = outcome
        if path != self.choice.current().path:
            return  # another run is chosen: its curves would be shown under the wrong name
        self.tracked_run, self.scores = path, scores
        steps = [s.step for s in scores]
        self.failures_view.show_series(steps, [s.diagnosis for s in scores], Path(path).name)
        if scores and scores[0].task is not None:
            self.task_view.show_series(steps, [s.task for s in scores], Path(path).name)
        self._say(f"Scored {len(scores)} checkpoints of {Path(path).name}.", task)
        self.tracked.emit()

    def map_word(self, word: str, layer: int) -> None:
        """Place the word's occurrences in the corpus by the evaluated model's vectors, in the background."""
        corpus = self.workspace.corpus
        missing = missing_for_contexts(self.subject is None, corpus is None, not word)
        if missing:
            self.message_bar.show_message(missing, "warning")
            return
        subjects = [s for s in (self.subject, self.other) if s is not None]
        self._start(self.mapper, mapping(subjects, corpus, word, layer))

    def _on_context(self, maps: list[ContextMap]) -> None:
        titles = [s.title for s in (self.subject, self.other) if s is not None]
        self.context_view.show_map(maps[0], *zip(titles[1:], maps[1:]))
        self.message_bar.show_message(f"{len(maps[0].snippets)} contexts of '{maps[0].word}'.", "info")
        self.mapped.emit()

    def state(self) -> dict[str, object]:
        """What the window remembers of this panel between starts: the probe's task file and columns."""
        return {"task": json.dumps(self.task_view.state())}

    def restore(self, state: dict[str, object]) -> None:
        self.task_view.restore(json_object(state.get("task")))

    def place_sentence(self, sentence: str) -> None:
        context = self.context_view.context
        if context is None or self.subject is None:
            return
        try:
            self.context_view.show_placed(place(context, self.subject.encoder, self.subject.tokenizer, sentence))
        except UserError as exc:
            self.message_bar.show_message(str(exc), "warning")

    def probe(self) -> None:
        """Run the downstream probe of the evaluated model (and the one compared) on the chosen file, in the
        background."""
        if self.subject is None:
            self.message_bar.show_message("Evaluate a model first: the probe reads its sentence vectors.", "warning")
            return
        subjects = [s for s in (self.subject, self.other) if s is not None]
        path, *columns, layer = self.task_view.request()
        self._start(self.prober, probing(subjects, path, columns, layer))

    def _on_probe(self, outcome: tuple[list[tuple[str, TaskResult]], SourceReport]) -> None:
        results, task = outcome
        self.task_results = results
        self.task_view.show_results(results)
        note = results[0][1].repeated_note
        said = f"Probed {results[0][1].examples:,} labelled texts of {task.path.name}."
        self._say(f"{said} {note[0].upper()}{note[1:]}." if note else said, task)
        self.probed.emit()

    def _say(self, text: str, task: SourceReport | None) -> None:
        """`text`, and as a warning what of the task file was read in a fallback encoding or not used."""
        if task is not None and task.noteworthy:
            self.message_bar.show_message("\n".join([text, *task.describe()[2:]]), "warning")
        else:
            self.message_bar.show_message(text, "info")

    def _busy(self, busy: bool) -> None:
        busy = busy or any(runner.running for runner in self.runners)
        self._update_buttons(busy)
        self.task_view.set_ready(not busy and self.subject is not None)
        self.cancel_button.setVisible(busy)
        self.progress_bar.setVisible(busy)
        self.progress_bar.setRange(0, 0)

    def _update_buttons(self, busy: bool = False) -> None:
        """Evaluate needs a model chosen, Every checkpoint a run, both that nothing runs; the tooltips say so."""
        path, busy = self.model_combo.currentData(), busy or any(runner.running for runner in self.runners)
        is_run = path is not None and not is_hf_folder(path)
        self.evaluate_button.setEnabled(path is not None and not busy)
        self.evaluate_button.setToolTip(EVALUATE_TIP if path is not None else NO_MODEL)
        self.every_button.setEnabled(is_run and not busy)
        self.every_button.setToolTip(EVERY_TIP if is_run else NO_MODEL if path is None else NOT_A_RUN)


if __name__ == "__main__":
    from mlm_studio.ui.preview import preview

    preview(EvaluationPanel, loaded=False)
