"""Evaluation panel: is the model any good? For a run (any checkpoint) or an imported model: the held-out
blocks with its answers, where it fails, what it learned (a word's contexts by their vectors), whether its
sentence vectors help a labelled task of your own, and the corpus's documents nearest a query (search).
Everything heavy runs in the background with progress and cancel."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.data.corpus import SourceReport
from mlm_studio.core.evaluation.contexts import ContextMap, context_map, place
from mlm_studio.core.evaluation.diagnosis import Diagnosis, diagnose
from mlm_studio.core.evaluation.subject import Subject, load_subject
from mlm_studio.core.evaluation.sweep import CheckpointScore, over_checkpoints
from mlm_studio.core.evaluation.task_probe import TaskResult, probe_task, read_task
from mlm_studio.core.interop.hf import is_hf_folder
from mlm_studio.core.models.encoder import layer_count
from mlm_studio.core.storage.run_folder import RunDir
from mlm_studio.ui.construction import Construction
from mlm_studio.ui.panels.search_view import SearchView
from mlm_studio.ui.tasks import TaskRunner, show_progress
from mlm_studio.ui.widgets.context_view import ContextView
from mlm_studio.ui.widgets.diagnosis_views import FailuresView, SamplesView
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.model_choice import model_combo, model_entries, refill
from mlm_studio.ui.widgets.task_view import TaskView
from mlm_studio.ui.workspace import Workspace

LATEST = -1
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

    def __init__(
        self, workspace: Workspace, runs_root: Path, parent: QWidget | None = None, sliced: bool = False
    ) -> None:
        """`sliced`: leave the construction's steps, one tab each, to the window's launch; otherwise build it all."""
        super().__init__(parent)
        self.workspace = workspace
        workspace.set_runs_root(runs_root)
        self.folders: list[str] = []
        self.entries: list[tuple[str, str]] = []  # (label, path) of every model offered
        self.subject: Subject | None = None
        self.diagnosis: Diagnosis | None = None
        self.other: Subject | None = None  # the model compared with, if any
        self.other_diagnosis: Diagnosis | None = None
        self.task_results: list[tuple[str, TaskResult]] = []
        self.evaluator, self.mapper, self.prober = TaskRunner(self), TaskRunner(self), TaskRunner(self)
        self.tracker = TaskRunner(self)
        self.scores: list[CheckpointScore] = []
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
            runner.failed.connect(lambda message: self.message_bar.show_message(message, "error"))
            runner.cancelled.connect(lambda: self.message_bar.show_message("Cancelled.", "info"))
            runner.finished.connect(lambda: self._busy(False))
        self.workspace.run_changed.connect(self._on_run_changed)
        self.workspace.runs_changed.connect(self.refresh_models)
        self.workspace.initial_model_changed.connect(self._on_initial_model)
        self.refresh_models()
        yield
        self.samples_view = SamplesView()
        self.tabs.addTab(self.samples_view, "Masked samples")
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
        self._busy(False)

    def _build_controls(self) -> None:
        self.model_combo = model_combo("A run, or a Hugging Face model scored on the Corpus panel's text")
        self.model_combo.currentIndexChanged.connect(self._list_checkpoints)
        self.model_combo.currentIndexChanged.connect(lambda: self._update_buttons())
        self.compare_combo = QComboBox()
        self.compare_combo.setToolTip(
            "A second model, side by side in every view: another run, another checkpoint of this one, or an "
            "imported model (each scored on its own held-out blocks; two checkpoints of one run share theirs)"
        )
        self.compare_combo.currentIndexChanged.connect(self._on_comparison_chosen)
        # its width does not follow its longest entry (a run's name and step): the window stays within 900 px
        self.compare_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.compare_combo.setMinimumContentsLength(10)
        self.checkpoint_combo = QComboBox()
        self.checkpoint_combo.setToolTip("Which checkpoint of the run: step through them to watch it learn")
        self.folder_button = QPushButton("Model folder…")
        self.folder_button.clicked.connect(self.browse)
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
        top = QHBoxLayout()
        top.addWidget(self.model_combo, 2)
        top.addWidget(self.checkpoint_combo, 1)
        top.addWidget(self.compare_combo, 2)
        top.addWidget(self.folder_button)
        top.addWidget(self.evaluate_button)
        top.addWidget(self.every_button)
        top.addWidget(self.cancel_button)
        self._update_buttons()
        self.tabs = QTabWidget()
        self.tabs.currentChanged.connect(lambda _: self.message_bar.clear())  # it spoke of the tab left
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.tabs, 1)

    # --- which model --------------------------------------------------------------------------------
    @property
    def runs_root(self) -> Path:
        return self.workspace.runs_root

    def refresh_models(self) -> None:
        current = self.model_combo.currentData()
        entries = model_entries(self.workspace.run, self.runs_root, self.folders)
        refill(self.model_combo, entries, current)
        self.entries = entries
        self._list_checkpoints()

    def _list_checkpoints(self) -> None:
        self.checkpoint_combo.clear()
        path = self.model_combo.currentData()
        is_run = path is not None and not is_hf_folder(path)
        self.checkpoint_combo.setEnabled(is_run)
        self.checkpoint_combo.addItem("latest checkpoint", LATEST)
        checkpoints = list(reversed(RunDir(path).checkpoints())) if is_run else []
        for checkpoint in checkpoints:
            self.checkpoint_combo.addItem(checkpoint.name, int(checkpoint.name.split("-")[1]))
        chosen = self.compare_combo.currentData()
        self.compare_combo.blockSignals(True)  # refilled, not chosen
        self.compare_combo.clear()
        self.compare_combo.addItem("no comparison", None)
        for checkpoint in checkpoints:
            self.compare_combo.addItem(f"compare with {checkpoint.name}", str(checkpoint))
        for label, other in self.entries:
            if other != path:
                self.compare_combo.addItem(f"compare with {label}", other)
        self.compare_combo.setCurrentIndex(max(0, self.compare_combo.findData(chosen)))
        self.compare_combo.blockSignals(False)

    def _on_run_changed(self, run: Path | None) -> None:
        """The current run is the one offered first and chosen: a new or opened run is what the user evaluates."""
        self.refresh_models()
        if run is not None:
            self.model_combo.setCurrentIndex(max(0, self.model_combo.findData(str(run))))

    def _on_comparison_chosen(self) -> None:
        """Back to no comparison: the compared model leaves every view at once; another one is compared once
        evaluated."""
        if self.compare_combo.currentData() is not None:
            if self.diagnosis is not None:
                self.message_bar.show_message("Evaluate to compare the two models.", "info")
            return
        self.other = self.other_diagnosis = None
        if self.diagnosis is not None:
            self.failures_view.show_diagnosis(self.diagnosis, None, (self.subject.title, ""))
            self.context_view.clear()
            self.task_view.clear()

    def browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A run or a Hugging Face model folder")
        if folder:
            self.add_folder(folder)

    def add_folder(self, folder: str) -> None:
        if is_hf_folder(folder) and folder not in self.folders:
            self.folders.append(folder)
        self.refresh_models()
        self.model_combo.setCurrentIndex(max(0, self.model_combo.findData(folder)))

    def _on_initial_model(self, imported) -> None:
        if imported is not None:
            self.add_folder(str(imported.folder))

    # --- work ---------------------------------------------------------------------------------------
    def evaluate(self) -> None:
        """Score the chosen model and checkpoint on held-out blocks, in the background."""
        path, step = self.model_combo.currentData(), self.checkpoint_combo.currentData()
        if path is None:
            self.message_bar.show_message("No model yet: train a run, or choose a model folder.", "warning")
            return
        corpus, other = self.workspace.corpus, self.compare_combo.currentData()

        def scored(source, chosen_step, progress):
            subject = load_subject(source, chosen_step, _corpus_for(source, corpus), progress)
            return subject, diagnose(subject.model, subject.tokenizer, subject.config, subject.validation,
                                     progress=progress)  # fmt: skip

        def work(progress):
            first = scored(path, None if step in (None, LATEST) else step, progress)
            return first, (scored(other, None, progress) if other else (None, None))

        self._busy(True)
        self.evaluator.start(work)

    @property
    def runners(self) -> tuple[TaskRunner, ...]:
        return (self.evaluator, self.mapper, self.prober, self.tracker)

    def _on_diagnosis(self, result) -> None:
        (self.subject, self.diagnosis), (self.other, self.other_diagnosis) = result
        layers = layer_count(self.subject.encoder)
        self.context_view.set_layers(layers)
        self.search_view.set_model(self.subject)
        self.task_view.layer_spin.setRange(0, layers)
        self.context_view.clear()  # the maps and the probe were another model's
        self.task_view.clear()
        self.samples_view.show_samples(self.diagnosis.samples, self.subject.tokenizer)
        titles = (self.subject.title, self.other.title if self.other is not None else "")
        self.failures_view.show_diagnosis(self.diagnosis, self.other_diagnosis, titles)
        first = self.diagnosis
        said = f"{self.subject.title}: {first.accuracy:.1%} of {first.predicted:,} masked tokens right"
        if self.other is not None:
            said += f"; {self.other.title}: {self.other_diagnosis.accuracy:.1%} of {self.other_diagnosis.predicted:,}"
        self.message_bar.show_message(said + ".", "info")
        self.evaluated.emit()

    def track(self) -> None:
        """Score every checkpoint of the chosen run (and probe the task, when a file is chosen), in the background."""
        path = self.model_combo.currentData()
        if path is None or is_hf_folder(path):
            self.message_bar.show_message("Every checkpoint needs a run: choose one.", "warning")
            return
        task_file, *columns, _ = self.task_view.request()

        def work(progress):
            task = read_task(task_file, *columns) if task_file else None
            return over_checkpoints(path, None, task, progress), task.report if task else None

        self._busy(True)
        self.tracker.start(work)

    def _on_scores(self, outcome: tuple[list[CheckpointScore], SourceReport | None]) -> None:
        scores, task = outcome
        self.scores = scores
        steps = [s.step for s in scores]
        self.failures_view.show_series(steps, [s.diagnosis for s in scores])
        if scores and scores[0].task is not None:
            self.task_view.show_series(steps, [s.task for s in scores])
        self._say(f"Scored {len(scores)} checkpoints.", task)
        self.tracked.emit()

    def map_word(self, word: str, layer: int) -> None:
        """Place the word's occurrences in the corpus by the evaluated model's vectors, in the background."""
        corpus = self.workspace.corpus
        if self.subject is None or corpus is None or not word:
            self.message_bar.show_message("Evaluate a model and load a corpus first, then type a word.", "warning")
            return
        subjects = [s for s in (self.subject, self.other) if s is not None]

        def work(progress):
            maps = []
            for subject in subjects:
                at = min(layer, layer_count(subject.encoder))
                maps.append(context_map(subject.encoder, subject.tokenizer, corpus.iter_documents(), word, at,
                                        progress=progress))  # fmt: skip
            return maps

        self._busy(True)
        self.mapper.start(work)

    def _on_context(self, maps: list[ContextMap]) -> None:
        titles = [s.title for s in (self.subject, self.other) if s is not None]
        self.context_view.show_map(maps[0], *zip(titles[1:], maps[1:]))
        self.message_bar.show_message(f"{len(maps[0].snippets)} contexts of '{maps[0].word}'.", "info")
        self.mapped.emit()

    def place_sentence(self, sentence: str) -> None:
        context = self.context_view.context
        if context is None or self.subject is None:
            return
        try:
            self.context_view.show_placed(place(context, self.subject.encoder, self.subject.tokenizer, sentence))
        except ValueError as exc:
            self.message_bar.show_message(str(exc), "warning")

    def probe(self) -> None:
        """Run the downstream probe of the evaluated model (and the one compared) on the chosen file, in the
        background."""
        if self.subject is None:
            self.message_bar.show_message("Evaluate a model first: the probe reads its sentence vectors.", "warning")
            return
        subjects = [s for s in (self.subject, self.other) if s is not None]
        path, *columns, layer = self.task_view.request()

        def work(progress):
            task = read_task(path, *columns)
            results = []
            for subject in subjects:
                at = layer and min(layer, layer_count(subject.encoder))
                results.append((subject.title, probe_task(subject.encoder, subject.tokenizer, task.texts,
                                                          task.labels, at, progress=progress)))  # fmt: skip
            return results, task.report

        self._busy(True)
        self.prober.start(work)

    def _on_probe(self, outcome: tuple[list[tuple[str, TaskResult]], SourceReport]) -> None:
        results, task = outcome
        self.task_results = results
        self.task_view.show_results(results)
        self._say(f"Probed {results[0][1].examples:,} labelled texts of {task.path.name}.", task)
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


def _corpus_for(path: str, corpus):
    """A run reads its own recorded corpus; an imported model is scored on the workspace's."""
    return corpus if is_hf_folder(path) else None


if __name__ == "__main__":
    from mlm_studio.core.storage.user_folders import default_runs_dir
    from mlm_studio.ui.preview import preview

    preview(lambda workspace: EvaluationPanel(workspace, default_runs_dir()), loaded=False)
