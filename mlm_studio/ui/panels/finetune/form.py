"""The Fine-tune panel's form: the model (a run, a Hugging Face folder or cached Hub model, or its shape from
scratch), the labelled task file and its kind, and the recipe, with the engine's defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QSpinBox,
    QWidget,
)

from mlm_studio.core.config.sections import REPORT_TO
from mlm_studio.core.data.builtin_tasks import BUILTIN_TASKS, TITLES, BuiltinTask, builtin_task, builtin_task_of
from mlm_studio.core.data.formats import TABLE_SUFFIXES
from mlm_studio.core.errors import UserError
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.request import StartingModel
from mlm_studio.core.finetune.tasks import TASKS
from mlm_studio.core.runs.run_folder import TASK
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.elided_label import ElidedComboBox
from mlm_studio.ui.widgets.model_choice import model_combo, model_entries, refill
from mlm_studio.ui.workspace import Workspace

DEFAULTS = {f.name: f.default for f in dataclasses.fields(FinetuneOptions)}
MEASURED = "measured"  # the learning rate box's lowest value: the engine's measured rule chooses it
KIND_LABELS = {
    "classification": "classification (a label per text, or per pair with a second text column)",
    "tokens": "tokens (a tag per word: NER)",
    "qa": "question answering (a span of the context)",
}
KIND_CHARS = 24  # of the chosen kind's label the form shows; its list shows each whole
EXAMPLE_NAMES = {"classification": "Classification", "pairs": "Pairs of texts", "tokens": "Tagging (tokens)",
                 "qa": "Question answering"}  # fmt: skip
EXAMPLE_TIP = (
    "A labelled task made from the documentation that ships with Python, split into training, validation and test "
    "files of its own: fine-tune with nothing to bring"
)
TASK_FILES = (
    f"Labelled files ({' '.join('*' + s for s in (*TABLE_SUFFIXES, '.conll', '.txt', '.json'))});;All files (*)"
)


class NumberBox(QDoubleSpinBox):
    """A decimal field that writes its value as briefly as it reads: 3 epochs, 0.5 epochs, a learning rate of 3e-05
    (never 3.00 or 0.0000300)."""

    def __init__(self, decimals: int) -> None:
        super().__init__()
        self.setDecimals(decimals)  # before its value is set: fewer would round 3e-5 to 0

    def textFromValue(self, value: float) -> str:  # noqa: N802 - Qt's name
        return f"{round(value, self.decimals()):g}"

    def valueFromText(self, text: str) -> float:  # noqa: N802 - Qt's name
        try:
            return float(text)
        except ValueError:
            return self.value()

    def validate(self, text: str, position: int) -> tuple[QValidator.State, str, int]:
        try:
            value = float(text)
        except ValueError:
            return QValidator.State.Intermediate, text, position  # "3e-" on the way to "3e-5"
        inside = self.minimum() <= value <= self.maximum()
        return (QValidator.State.Acceptable if inside else QValidator.State.Intermediate), text, position


class FinetuneForm(QWidget):
    """What to fine-tune, on what, and how; `options()` and `spec()` say it as the engine takes it."""

    models_changed = Signal()  # the models offered were listed again
    example_failed = Signal(str)  # a built-in example task could not be written: why

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.folders: list[str] = []
        self.following = True  # the chooser takes each new current run, until the user picks another model
        workspace.run_changed.connect(self._on_run_changed)
        workspace.runs_changed.connect(self.refresh_models)
        self.model_combo = model_combo(
            "The model fine-tuned: a run's latest checkpoint, a Hugging Face folder, or a model in the local Hugging "
            "Face cache"
        )
        self.model_combo.activated.connect(self._on_model_picked)
        self.folder_button = QPushButton("Folder…")
        self.folder_button.setToolTip("A Hugging Face model folder, or a run or checkpoint folder from elsewhere")
        self.folder_button.clicked.connect(self.add_folder_dialog)
        self.scratch_box = QCheckBox("from scratch")
        self.scratch_box.setToolTip(
            "The chosen model's shape and tokenizer with fresh weights: the baseline that shows what pre-training adds"
        )
        self.task_edit = QLineEdit()
        self.task_edit.setPlaceholderText(
            "A labelled CSV/TSV/JSONL/Parquet file, CoNLL columns for tokens, SQuAD .json for questions"
        )
        self.task_button = QPushButton("Choose…")
        self.task_button.clicked.connect(self.choose_task_dialog)
        self.example_button = QPushButton("Built-in example")
        self.example_button.setToolTip(EXAMPLE_TIP)
        examples = QMenu(self.example_button)
        for name in BUILTIN_TASKS:
            examples.addAction(f"{EXAMPLE_NAMES[name]}: {TITLES[name]}", lambda name=name: self.use_example(name))
        self.example_button.setMenu(examples)
        self.examples = TaskRunner(self)  # writes an example's files the first time it is chosen
        self.examples.succeeded.connect(self._on_example_ready)
        self.examples.failed.connect(self.example_failed)
        self.kind_combo = ElidedComboBox()
        self.kind_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.kind_combo.setMinimumContentsLength(KIND_CHARS)  # the whole label shows in its list
        self.kind_combo.setToolTip("What to predict; a classification file with a second text column makes pairs")
        for kind in TASKS:
            self.kind_combo.addItem(KIND_LABELS[kind], kind)
        self.epochs = self._number(NumberBox(1), "epochs", (0.1, 100), "Passes over the training examples")
        self.learning_rate = NumberBox(7)
        self.learning_rate.setSingleStep(1e-5)
        self.learning_rate.setRange(0.0, 1.0)
        self.learning_rate.setSpecialValueText(MEASURED)  # at 0: the engine's rule chooses
        self.learning_rate.setToolTip(
            f"AdamW's peak learning rate; {MEASURED}: the engine's measured default, 3e-4 for a model under 10M "
            "parameters on fewer than 1,000 training examples, else 1e-4 (Search recipe finds the best)"
        )
        self.batch_size = self._number(QSpinBox(), "batch_size", (1, 4096), "Examples per micro-batch")
        self.grad_accumulation = self._number(
            QSpinBox(),
            "grad_accumulation",
            (1, 1024),
            "Micro-batches per step: a step learns from this many batches of examples in the memory of one",
        )
        self.report_to = QComboBox()
        for where in REPORT_TO:
            self.report_to.addItem(where, where)
        self.report_to.setToolTip(
            "Where the metrics go besides the run's metrics.jsonl: TensorBoard events in the run's folder, an MLflow "
            "run (at MLFLOW_TRACKING_URI; needs the mlflow package), both, or neither"
        )
        self.freeze_layers = self._number(
            QSpinBox(), "freeze_layers", (0, 128), "The embeddings and this many first layers stay as they are"
        )
        self.doc_stride = self._number(
            QSpinBox(), "doc_stride", (1, 8192), "Tokens two windows of a long context share"
        )
        self.max_answer_length = self._number(
            QSpinBox(), "max_answer_length", (1, 8192), "Tokens of the longest answer the model gives"
        )
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.folder_button)
        model_row.addWidget(self.scratch_box)
        task_row = QHBoxLayout()
        task_row.addWidget(self.task_edit, 1)
        task_row.addWidget(self.task_button)
        task_row.addWidget(self.example_button)
        task_row.addWidget(self.kind_combo)
        grid = QGridLayout(self)
        grid.addWidget(QLabel("Model"), 0, 0)
        grid.addLayout(model_row, 0, 1)
        grid.addWidget(QLabel("Task file"), 1, 0)
        grid.addLayout(task_row, 1, 1)
        recipe = QHBoxLayout()
        for label, box in (
            ("Epochs", self.epochs),
            ("Learning rate", self.learning_rate),
            ("Batch size", self.batch_size),
            ("Freeze layers", self.freeze_layers),
        ):
            form = QFormLayout()
            form.addRow(label, box)
            recipe.addLayout(form)
        recipe.addStretch(1)
        grid.addWidget(QLabel("Recipe"), 2, 0)
        grid.addLayout(recipe, 2, 1)
        running = QHBoxLayout()
        for label, box in (("Accumulation", self.grad_accumulation), ("Report to", self.report_to)):
            form = QFormLayout()
            form.addRow(label, box)
            running.addLayout(form)
        running.addStretch(1)
        grid.addLayout(running, 3, 1)
        self.qa_row = self._qa_row()
        grid.addWidget(self.qa_row, 4, 1)
        self.kind_combo.currentIndexChanged.connect(self._on_kind_changed)
        self._on_kind_changed()
        grid.setColumnStretch(1, 1)
        grid.setContentsMargins(0, 0, 0, 0)

    def _qa_row(self) -> QWidget:
        """Question answering's own settings, shown for that kind only."""
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        for label, box in (("Document stride", self.doc_stride), ("Longest answer", self.max_answer_length)):
            form = QFormLayout()
            form.addRow(label, box)
            layout.addLayout(form)
        layout.addStretch(1)
        return row

    def _on_kind_changed(self) -> None:
        self.qa_row.setVisible(self.kind_combo.currentData() == "qa")

    @staticmethod
    def _number(box, name: str, bounds: tuple, help_text: str):
        box.setRange(*bounds)
        box.setValue(DEFAULTS[name])
        box.setToolTip(f"{help_text}; the engine's default is {DEFAULTS[name]:g}")
        return box

    @property
    def runs_root(self) -> Path:
        return self.workspace.runs_root

    def refresh_models(self) -> None:
        folders = [folder for folder in self.folders if not (Path(folder) / TASK).is_file()]  # a fine-tuned run
        entries = model_entries(self.workspace.run, self.workspace.runs, folders)
        refill(self.model_combo, entries, self.model_combo.currentData(), self.workspace.runs)
        self.models_changed.emit()

    def _on_run_changed(self, run: Path | None) -> None:
        """A run started: the "Current run" entry is it, and chosen unless the user picked another model."""
        self.refresh_models()
        if run is not None and self.following:
            self.model_combo.setCurrentIndex(self.model_combo.findData(str(run)))

    def _on_model_picked(self) -> None:
        """Picked by the user: it stays, unless it is the current run, which the chooser then follows."""
        run = self.workspace.run
        self.following = run is not None and self.model_combo.currentData() == str(run)

    def add_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A Hugging Face model, run or checkpoint folder")
        if folder:
            self.add_folder(folder)

    def add_folder(self, folder: str) -> None:
        if folder not in self.folders:
            self.folders.append(folder)
        self.refresh_models()
        self.model_combo.setCurrentIndex(self.model_combo.findData(folder))
        self.following = False  # added to be fine-tuned

    def choose_task_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "The labelled task file", "", TASK_FILES)
        if path:
            self.task_edit.setText(path)

    def use_example(self, name: str) -> None:
        """The built-in example task `name` becomes the task, and its kind the kind (once its files are written)."""
        self.examples.start(lambda progress: builtin_task(name, progress))

    def _on_example_ready(self, example: BuiltinTask) -> None:
        self.kind_combo.setCurrentIndex(self.kind_combo.findData(example.kind))
        self.task_edit.setText(str(example.train))

    def searched(self) -> tuple[str | None, str]:
        """The model (as a search names it) and the task file the form names now, for a search's view to compare."""
        model, task = self.model_combo.currentData(), self.task_edit.text().strip()
        spec = str(StartingModel(model, self.scratch_box.isChecked())) if model else None
        return spec, str(Path(task).resolve()) if task else ""

    def use_recipe(self, learning_rate: float, epochs: int) -> None:
        """A searched recipe put in the form."""
        self.learning_rate.setValue(learning_rate)
        self.epochs.setValue(epochs)

    def options(self) -> FinetuneOptions:
        train = Path(self.task_edit.text().strip())
        example = builtin_task_of(train)  # its validation and test files come with it
        return FinetuneOptions(
            task=self.kind_combo.currentData(),
            train=train,
            validation=example.files[1] if example else None,
            test=example.files[2] if example else None,
            learning_rate=self.learning_rate.value() or None,  # MEASURED: the engine's rule
            epochs=self.epochs.value(),
            batch_size=self.batch_size.value(),
            grad_accumulation=self.grad_accumulation.value(),
            report_to=self.report_to.currentData(),
            freeze_layers=self.freeze_layers.value(),
            doc_stride=self.doc_stride.value(),
            max_answer_length=self.max_answer_length.value(),
        )

    def spec(self) -> StartingModel:
        """The model chosen (its shape with fresh weights when asked); raises UserError saying what is missing."""
        model = self.model_combo.currentData()
        if not model:
            raise UserError("Choose a model first: train a run, or add a model folder.")
        if not self.task_edit.text().strip():
            raise UserError("Choose the labelled task file first.")
        return StartingModel(model, self.scratch_box.isChecked())

    def state(self) -> dict:
        """What the form holds, as the window remembers it between starts (`restore` takes it back)."""
        return {
            "model": self.model_combo.currentData() or "",
            "scratch": self.scratch_box.isChecked(),
            "task": self.task_edit.text(),
            "kind": self.kind_combo.currentData(),
            "report_to": self.report_to.currentData(),
            **{name: getattr(self, name).value() for name in REMEMBERED_NUMBERS},
        }

    def restore(self, state: dict) -> None:
        """Put back what `state` holds, each value on its own: one of another type, out of its field's range or no
        longer offered (a model gone) leaves its field as it is."""
        for name in REMEMBERED_NUMBERS:
            box, value = getattr(self, name), state.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if box.minimum() <= value <= box.maximum():
                    box.setValue(type(box.value())(value))
        for name, combo in (("kind", self.kind_combo), ("report_to", self.report_to), ("model", self.model_combo)):
            index = combo.findData(state[name]) if isinstance(state.get(name), str) and state[name] else -1
            if index >= 0:
                combo.setCurrentIndex(index)
                if name == "model":
                    self._on_model_picked()
        if isinstance(state.get("scratch"), bool):
            self.scratch_box.setChecked(state["scratch"])
        if isinstance(state.get("task"), str):
            self.task_edit.setText(state["task"])


REMEMBERED_NUMBERS = (
    "epochs", "learning_rate", "batch_size", "grad_accumulation", "freeze_layers", "doc_stride", "max_answer_length"
)  # fmt: skip
