"""Evaluation panel: is the model any good? For a run (any checkpoint) or an imported model: the held-out
blocks with its answers, where it fails, what it learned (a word's contexts by their vectors), and whether its
sentence vectors help a labelled task of your own.
Everything heavy runs in the background with progress and cancel."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.checkpoint import RunDir
from mlm_studio.core.contexts import ContextMap, context_map, place
from mlm_studio.core.diagnostics import CheckpointScore, Diagnosis, Subject, diagnose, load_subject, over_checkpoints
from mlm_studio.core.encoder import layer_count
from mlm_studio.core.hf import is_hf_folder
from mlm_studio.core.history import list_runs
from mlm_studio.core.task_probe import TaskResult, probe_task, read_labelled
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.context_view import ContextView
from mlm_studio.ui.widgets.diagnosis_views import FailuresView, SamplesView, plot_series
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.plots import ThemedPlot
from mlm_studio.ui.workspace import Workspace

LATEST = -1


class EvaluationPanel(QWidget):
    evaluated = Signal()  # a diagnosis is shown
    mapped = Signal()  # a word's contexts are shown
    tracked = Signal()  # every checkpoint's scores are shown
    probed = Signal()  # a task probe's result is shown

    def __init__(self, workspace: Workspace, runs_root: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace, self.runs_root = workspace, runs_root
        self.folders: list[str] = []
        self.subject: Subject | None = None
        self.diagnosis: Diagnosis | None = None
        self.task_result: TaskResult | None = None
        self.evaluator, self.mapper, self.prober = TaskRunner(self), TaskRunner(self), TaskRunner(self)
        self.tracker = TaskRunner(self)
        self.scores: list[CheckpointScore] = []
        self._build()
        self.evaluator.succeeded.connect(self._on_diagnosis)
        self.tracker.succeeded.connect(self._on_scores)
        self.mapper.succeeded.connect(self._on_context)
        self.prober.succeeded.connect(self._on_probe)
        for runner in self.runners:
            runner.progress.connect(self._on_progress)
            runner.failed.connect(lambda message: self.message_bar.show_message(message, "error"))
            runner.cancelled.connect(lambda: self.message_bar.show_message("Cancelled.", "info"))
            runner.finished.connect(lambda: self._busy(False))
        workspace.run_changed.connect(lambda _: self.refresh_models())
        workspace.initial_model_changed.connect(self._on_initial_model)
        self.refresh_models()

    def _build(self) -> None:
        self.model_combo = QComboBox()
        self.model_combo.setToolTip("A run, or a Hugging Face model scored on the Corpus panel's text")
        self.model_combo.currentIndexChanged.connect(self._list_checkpoints)
        self.checkpoint_combo = QComboBox()
        self.checkpoint_combo.setToolTip("Which checkpoint of the run: step through them to watch it learn")
        self.folder_button = QPushButton("Model folder…")
        self.folder_button.clicked.connect(self.browse)
        self.evaluate_button = QPushButton("Evaluate")
        self.evaluate_button.clicked.connect(self.evaluate)
        self.every_button = QPushButton("Every checkpoint")
        self.every_button.setToolTip(
            "Score every checkpoint of the run (and probe the task, when a file is chosen): the breakdowns and the "
            "task accuracy as curves over training"
        )
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
        top.addWidget(self.folder_button)
        top.addWidget(self.evaluate_button)
        top.addWidget(self.every_button)
        top.addWidget(self.cancel_button)
        self.samples_view = SamplesView()
        self.failures_view = FailuresView()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.samples_view, "Masked samples")
        self.tabs.addTab(self.failures_view, "Where it fails")
        self.context_view = ContextView()
        self.context_view.requested.connect(self.map_word)
        self.context_view.place_requested.connect(self.place_sentence)
        self.tabs.addTab(self.context_view, "What it learned")
        self.tabs.addTab(self._task_tab(), "Does it help a task")
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.progress_bar)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.tabs, 1)

    def _task_tab(self) -> QWidget:
        self.task_path = QLineEdit()
        self.task_path.setPlaceholderText("a CSV, TSV, JSON Lines or Parquet file of texts and labels")
        choose = QPushButton("Choose…")
        choose.clicked.connect(self.choose_task)
        self.text_column, self.label_column = QLineEdit("text"), QLineEdit("label")
        self.probe_layer = QSpinBox()
        self.probe_layer.setRange(0, 1)
        self.probe_layer.setSpecialValueText("last, as the head reads it")
        self.probe_layer.setToolTip("Whose output is averaged into the sentence vector: a layer, or the last")
        self.probe_button = QPushButton("Probe the task")
        self.probe_button.setToolTip(
            "Train a logistic regression on the model's frozen sentence vectors (mean of the last layer) on 75% "
            "of the texts, stratified, and score it on the rest, beside the majority class and a bag of words"
        )
        self.probe_button.clicked.connect(self.probe)
        self.task_table = QTableWidget(3, 3)
        self.task_table.setHorizontalHeaderLabels(["classifier", "accuracy", "macro-F1"])
        self.task_table.verticalHeader().setVisible(False)
        self.task_table.horizontalHeader().setStretchLastSection(True)
        self.task_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        row = QHBoxLayout()
        row.addWidget(self.task_path, 1)
        row.addWidget(choose)
        form = QFormLayout()
        form.addRow("Labelled texts", row)
        form.addRow("Text column", self.text_column)
        form.addRow("Label column", self.label_column)
        form.addRow("Layer", self.probe_layer)
        form.addRow(self.probe_button)
        self.task_series = ThemedPlot("step", "held-out accuracy")
        self.task_series.setTitle("The task over the run's checkpoints (Every checkpoint)")
        self.task_series.addLegend(offset=(10, 10), colCount=3)
        tab = QWidget()
        layout = QVBoxLayout(tab)
        layout.addLayout(form)
        layout.addWidget(self.task_table, 1)
        layout.addWidget(self.task_series, 2)
        return tab

    # --- which model --------------------------------------------------------------------------------
    def refresh_models(self) -> None:
        current = self.model_combo.currentData()
        entries = []
        if self.workspace.run is not None:
            entries.append((f"Current run: {self.workspace.run.name}", str(self.workspace.run)))
        entries += [(run.name, str(run.path)) for run in list_runs(self.runs_root) if run.path != self.workspace.run]
        entries += [(f"Hugging Face: {Path(f).name}", f) for f in self.folders]
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        for label, path in entries:
            self.model_combo.addItem(label, path)
        index = self.model_combo.findData(current)
        self.model_combo.setCurrentIndex(index if index >= 0 else 0)
        self.model_combo.blockSignals(False)
        self._list_checkpoints()

    def _list_checkpoints(self) -> None:
        self.checkpoint_combo.clear()
        path = self.model_combo.currentData()
        is_run = path is not None and not is_hf_folder(path)
        self.checkpoint_combo.setEnabled(is_run)
        self.checkpoint_combo.addItem("latest checkpoint", LATEST)
        if is_run:
            for checkpoint in reversed(RunDir(path).checkpoints()):
                self.checkpoint_combo.addItem(checkpoint.name, int(checkpoint.name.split("-")[1]))

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
        corpus = self.workspace.corpus

        def work(progress):
            subject = load_subject(path, None if step in (None, LATEST) else step, _corpus_for(path, corpus), progress)
            return subject, diagnose(subject.model, subject.tokenizer, subject.config, subject.validation,
                                     progress=progress)  # fmt: skip

        self._busy(True)
        self.evaluator.start(work)

    @property
    def runners(self) -> tuple[TaskRunner, ...]:
        return (self.evaluator, self.mapper, self.prober, self.tracker)

    def _on_diagnosis(self, result: tuple[Subject, Diagnosis]) -> None:
        self.subject, self.diagnosis = result
        layers = layer_count(self.subject.model)
        self.context_view.set_layers(layers)
        self.probe_layer.setRange(0, layers)
        self.samples_view.show_samples(self.diagnosis.samples, self.subject.tokenizer)
        self.failures_view.show_diagnosis(self.diagnosis)
        self.message_bar.show_message(f"{self.subject.title}: {self.diagnosis.accuracy:.1%} of "
                                      f"{self.diagnosis.predicted:,} masked tokens right.", "info")  # fmt: skip
        self.evaluated.emit()

    def track(self) -> None:
        """Score every checkpoint of the chosen run (and probe the task, when a file is chosen), in the background."""
        path = self.model_combo.currentData()
        if path is None or is_hf_folder(path):
            self.message_bar.show_message("Every checkpoint needs a run: choose one.", "warning")
            return
        task_file = self.task_path.text().strip()
        columns = self.text_column.text().strip() or "text", self.label_column.text().strip() or "label"

        def work(progress):
            task = read_labelled(task_file, *columns) if task_file else None
            return over_checkpoints(path, None, task, progress)

        self._busy(True)
        self.tracker.start(work)

    def _on_scores(self, scores: list[CheckpointScore]) -> None:
        self.scores = scores
        steps = [s.step for s in scores]
        lines = {"all": [s.diagnosis.accuracy for s in scores]}
        for number, share in enumerate(scores[0].diagnosis.by_frequency if scores else ()):
            lines[f"{share.name}× in the corpus"] = [s.diagnosis.by_frequency[number].accuracy for s in scores]
        plot_series(self.failures_view.series, steps, lines)
        if scores and scores[0].task is not None:
            plot_series(self.task_series, steps, {
                "linear probe": [s.task.accuracy for s in scores],
                "majority class": [s.task.majority_accuracy for s in scores],
                "bag of words": [s.task.bag_of_words_accuracy for s in scores],
            }, dashed=("majority class", "bag of words"))  # fmt: skip
        self.message_bar.show_message(f"Scored {len(scores)} checkpoints.", "info")
        self.tracked.emit()

    def map_word(self, word: str, layer: int) -> None:
        """Place the word's occurrences in the corpus by the evaluated model's vectors, in the background."""
        corpus = self.workspace.corpus
        if self.subject is None or corpus is None or not word:
            self.message_bar.show_message("Evaluate a model and load a corpus first, then type a word.", "warning")
            return
        subject = self.subject

        def work(progress):
            documents = corpus.iter_documents()
            return context_map(subject.model, subject.tokenizer, documents, word, layer, progress=progress)

        self._busy(True)
        self.mapper.start(work)

    def _on_context(self, context: ContextMap) -> None:
        self.context_view.show_map(context)
        self.message_bar.show_message(f"{len(context.snippets)} contexts of '{context.word}'.", "info")
        self.mapped.emit()

    def place_sentence(self, sentence: str) -> None:
        context = self.context_view.context
        if context is None or self.subject is None:
            return
        try:
            self.context_view.show_placed(place(context, self.subject.model, self.subject.tokenizer, sentence))
        except ValueError as exc:
            self.message_bar.show_message(str(exc), "warning")

    def choose_task(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Labelled texts", "", "Tables (*.csv *.tsv *.jsonl *.parquet)")
        if path:
            self.task_path.setText(path)

    def probe(self) -> None:
        """Run the downstream probe of the evaluated model on the chosen file, in the background."""
        if self.subject is None:
            self.message_bar.show_message("Evaluate a model first: the probe reads its sentence vectors.", "warning")
            return
        subject, path = self.subject, self.task_path.text().strip()
        columns = self.text_column.text().strip() or "text", self.label_column.text().strip() or "label"

        layer = self.probe_layer.value() or None

        def work(progress):
            texts, labels = read_labelled(path, *columns)
            return probe_task(subject.model, subject.tokenizer, texts, labels, layer, progress=progress)

        self._busy(True)
        self.prober.start(work)

    def _on_probe(self, result: TaskResult) -> None:
        self.task_result = result
        rows = [
            (f"{self.subject.title}: linear probe", f"{result.accuracy:.1%}", f"{result.macro_f1:.3f}"),
            ("majority class", f"{result.majority_accuracy:.1%}", ""),
            ("bag of words (TF-IDF + logistic regression)", f"{result.bag_of_words_accuracy:.1%}", ""),
        ]
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                self.task_table.setItem(r, c, QTableWidgetItem(value))
        self.task_table.resizeColumnsToContents()
        self.message_bar.show_message(f"Probed {result.examples:,} labelled texts.", "info")
        self.probed.emit()

    def _busy(self, busy: bool) -> None:
        busy = busy or any(runner.running for runner in self.runners)
        self.evaluate_button.setEnabled(not busy)
        self.every_button.setEnabled(not busy)
        self.probe_button.setEnabled(not busy)
        self.cancel_button.setVisible(busy)
        self.progress_bar.setVisible(busy)
        self.progress_bar.setRange(0, 0)

    def _on_progress(self, done: int, total: int, message: str) -> None:
        self.progress_bar.setFormat(f"{message} %p%")
        if total > 0:
            self.progress_bar.setRange(0, total)
            self.progress_bar.setValue(done)


def _corpus_for(path: str, corpus):
    """A run reads its own recorded corpus; an imported model is scored on the workspace's."""
    return corpus if is_hf_folder(path) else None


if __name__ == "__main__":
    from mlm_studio.core.paths import default_runs_dir
    from mlm_studio.ui.preview import preview

    preview(lambda workspace: EvaluationPanel(workspace, default_runs_dir()), loaded=False)
