"""Evaluation panel: is the model any good? For a run (any checkpoint) or an imported model: the held-out
blocks with its answers, where it fails, what it learned (a word's contexts by their vectors), whether its
sentence vectors help a labelled task of your own, and the corpus's documents nearest a query (search).
Everything heavy runs in the background with progress and cancel. Every result is bound to the model,
checkpoint and comparison it was computed for: choosing another clears it, and a line above the tabs says whose
results are shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QTabWidget, QVBoxLayout, QWidget

from mlm_studio.core.data.corpus import SourceReport
from mlm_studio.core.errors import UserError
from mlm_studio.core.evaluation.contexts import ContextMap, place
from mlm_studio.core.evaluation.sweep import CheckpointScore
from mlm_studio.core.evaluation.task_probe import TaskResult
from mlm_studio.core.models.encoder import layer_count
from mlm_studio.core.storage.json_text import json_object
from mlm_studio.ui.construction import Construction
from mlm_studio.ui.panels.evaluation.choice import EvaluationChoice
from mlm_studio.ui.panels.evaluation.explained_samples import ExplainedSamples
from mlm_studio.ui.panels.evaluation.results import Results, Said, Task, Update, offered, reported
from mlm_studio.ui.panels.evaluation.search_view import SearchView
from mlm_studio.ui.panels.evaluation.work import (
    Work,
    mapping,
    missing_for_contexts,
    missing_for_scoring,
    probing,
    scoring,
    tracking,
)
from mlm_studio.ui.tasks import TaskRunner, show_progress
from mlm_studio.ui.widgets.context_view import ContextView
from mlm_studio.ui.widgets.diagnosis_views import FailuresView, SamplesView
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.task_view import TaskView
from mlm_studio.ui.workspace import Workspace


class EvaluationPanel(QWidget):
    """A view of `Results` (results.py): it sends the user's acts and the tasks' outcomes there and renders what
    the rules answer."""

    evaluated = Signal()  # a diagnosis is shown
    mapped = Signal()  # a word's contexts are shown
    tracked = Signal()  # every checkpoint's scores are shown
    probed = Signal()  # a task probe's result is shown

    def __init__(self, workspace: Workspace, parent: QWidget | None = None, sliced: bool = False) -> None:
        """`sliced`: leave the construction's steps, one tab each, to the window's launch; otherwise build it all."""
        super().__init__(parent)
        self.workspace = workspace
        self.results = Results()
        self.runners = {task: TaskRunner(self) for task in Task}
        self.evaluator, self.tracker, self.mapper, self.prober = self.runners.values()
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
        for task, runner in self.runners.items():
            runner.progress.connect(partial(show_progress, self.progress_bar))
            runner.failed.connect(partial(self._on_ended, task))
            runner.cancelled.connect(partial(self._on_ended, task, None))
            runner.finished.connect(lambda: self._busy(False))
        self.workspace.run_changed.connect(self.choice.follow)
        self.workspace.runs_changed.connect(self.choice.refresh)
        self.workspace.initial_model_changed.connect(self.choice.offer_imported)
        self.choice.refresh()
        yield
        self.samples_view = SamplesView()
        results = self.results
        self.explained_samples = ExplainedSamples(self.samples_view, lambda: results.subject, lambda: results.shown)
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
        self.search_view = SearchView(lambda: results.subject, lambda: self.workspace.corpus)
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
        self.cancel_button.clicked.connect(lambda: [r.cancel() for r in self.runners.values()])
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

    def add_folder(self, folder: str) -> None:
        """Offer a run or a Hugging Face model folder and choose it."""
        self.choice.add_folder(folder)

    # --- the rules' answers, rendered ---------------------------------------------------------------
    def _on_choice_changed(self) -> None:
        self._render(self.results.choose(self.choice.current()))

    def _on_corpus_changed(self, _corpus) -> None:
        self._render(self.results.corpus_changed())

    def _render(self, update: Update) -> None:
        """Stop what the rules stopped, clear what they cleared, say what they said, and name what is shown."""
        results = self.results
        for task in update.stop:
            self.runners[task].cancel()
        if update.forget_series:
            self.failures_view.clear_series()
            self.task_view.clear_series()
        if update.forget:
            self.samples_view.clear()
            self.explained_samples.put_away()
            self.failures_view.clear()
            self.task_view.clear()
        elif update.forget_comparison:
            self.samples_view.show_blocks(results.blocks)
            self.failures_view.show_diagnosis(results.diagnosis, None, (results.subject.title, ""))
            self.task_view.clear()
        if update.forget or update.forget_comparison or update.forget_corpus_views:
            self.context_view.clear()
        if update.forget or update.forget_corpus_views:
            self.search_view.clear()
        self._say(update.said)
        line = results.line()
        self.subject_label.setText(line)
        self.subject_label.setVisible(bool(line))
        self._busy(False)

    def _say(self, said: Said | None) -> None:
        if said is not None and said.text:
            self.message_bar.show_message(said.text, said.level)
        elif said is not None:
            self.message_bar.clear()

    # --- work ---------------------------------------------------------------------------------------
    def _start(self, task: Task, work: Work) -> None:
        self.results.ask(task, self.choice.current())
        self._busy(True)
        self.runners[task].start(work)

    def _on_ended(self, task: Task, failure: str | None) -> None:
        """`task` failed (`failure`: its message) or was cancelled."""
        self._say(self.results.ended(task, failure))

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
        self._start(Task.EVALUATE, scoring(choice, corpus))

    def _on_diagnosis(self, result) -> None:
        choice, first, compared = result
        results = self.results
        if not results.evaluated(choice, first, compared):
            return
        subject, other, diagnosis = results.subject, results.other, results.diagnosis
        layers = layer_count(subject.encoder)
        self.context_view.set_layers(layers)
        self.search_view.set_model(subject)
        self.task_view.layer_spin.setRange(0, layers)
        self.context_view.clear()  # the maps and the probe were another model's
        self.task_view.clear()
        self.samples_view.show_blocks(results.blocks, compared[2] if compared else None)
        titles = (subject.title, other.title if other is not None else "")
        self.failures_view.show_diagnosis(diagnosis, results.other_diagnosis, titles)
        said = f"{subject.title}: {diagnosis.accuracy:.1%} of {diagnosis.predicted:,} masked tokens right"
        if other is not None:
            said += f"; {other.title}: {results.other_diagnosis.accuracy:.1%} of {results.other_diagnosis.predicted:,}"
        self._render(Update(said=Said(said + ".")))
        self.evaluated.emit()

    def track(self) -> None:
        """Score every checkpoint of the chosen run (and probe the task, when a file is chosen), in the background."""
        choice = self.choice.current()
        if choice.path is None or choice.imported:
            self.message_bar.show_message("Every checkpoint needs a run: choose one.", "warning")
            return
        task_file, *columns, _ = self.task_view.request()
        self._start(Task.TRACK, tracking(choice.path, task_file, columns))

    def _on_scores(self, outcome: tuple[str, list[CheckpointScore], SourceReport | None]) -> None:
        path, scores, task = outcome
        if not self.results.tracked(path, scores):
            return  # another run is chosen: its curves would be shown under the wrong name
        steps = [s.step for s in scores]
        self.failures_view.show_series(steps, [s.diagnosis for s in scores], Path(path).name)
        if scores and scores[0].task is not None:
            self.task_view.show_series(steps, [s.task for s in scores], Path(path).name)
        self._say(reported(f"Scored {len(scores)} checkpoints of {Path(path).name}.", task))
        self.tracked.emit()

    def map_word(self, word: str, layer: int) -> None:
        """Place the word's occurrences in the corpus by the evaluated model's vectors, in the background."""
        corpus, subjects = self.workspace.corpus, self.results.evaluated_subjects
        missing = missing_for_contexts(not subjects, corpus is None, not word)
        if missing:
            self.message_bar.show_message(missing, "warning")
            return
        self._start(Task.MAP, mapping(subjects, corpus, word, layer))

    def _on_context(self, maps: list[ContextMap]) -> None:
        if not self.results.mapped():
            return  # the corpus or the models shown changed meanwhile
        titles = [s.title for s in self.results.evaluated_subjects]
        self.context_view.show_map(maps[0], *zip(titles[1:], maps[1:]))
        self.message_bar.show_message(f"{len(maps[0].snippets)} contexts of '{maps[0].word}'.", "info")
        self.mapped.emit()

    def state(self) -> dict[str, object]:
        """What the window remembers of this panel between starts: the probe's task file and columns."""
        return {"task": json.dumps(self.task_view.state())}

    def restore(self, state: dict[str, object]) -> None:
        self.task_view.restore(json_object(state.get("task")))

    def place_sentence(self, sentence: str) -> None:
        context, subject = self.context_view.context, self.results.subject
        if context is None or subject is None:
            return
        try:
            self.context_view.show_placed(place(context, subject.encoder, subject.tokenizer, sentence))
        except UserError as exc:
            self.message_bar.show_message(str(exc), "warning")

    def probe(self) -> None:
        """Run the downstream probe of the evaluated model (and the one compared) on the chosen file, in the
        background."""
        subjects = self.results.evaluated_subjects
        if not subjects:
            self.message_bar.show_message("Evaluate a model first: the probe reads its sentence vectors.", "warning")
            return
        path, *columns, layer = self.task_view.request()
        self._start(Task.PROBE, probing(subjects, path, columns, layer))

    def _on_probe(self, outcome: tuple[list[tuple[str, TaskResult]], SourceReport]) -> None:
        results, task = outcome
        if not self.results.probed(results):
            return  # the models shown changed meanwhile
        self.task_view.show_results(results)
        note = results[0][1].repeated_note
        said = f"Probed {results[0][1].examples:,} labelled texts of {task.path.name}."
        self._say(reported(f"{said} {note[0].upper()}{note[1:]}." if note else said, task))
        self.probed.emit()

    def _busy(self, busy: bool) -> None:
        busy = busy or any(runner.running for runner in self.runners.values())
        self._update_buttons(busy)
        self.task_view.set_ready(not busy and self.results.subject is not None)
        self.cancel_button.setVisible(busy)
        self.progress_bar.setVisible(busy)
        self.progress_bar.setRange(0, 0)

    def _update_buttons(self, busy: bool = False) -> None:
        """Evaluate needs a model chosen, Every checkpoint a run, both that nothing runs; the tooltips say so."""
        busy = busy or any(runner.running for runner in self.runners.values())
        offer = offered(self.choice.current(), busy)
        self.evaluate_button.setEnabled(offer.evaluate)
        self.evaluate_button.setToolTip(offer.evaluate_tip)
        self.every_button.setEnabled(offer.every)
        self.every_button.setToolTip(offer.every_tip)
