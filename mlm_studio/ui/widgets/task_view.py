"""The Evaluation panel's "Does it help a task" view: the labelled file and its columns, the layer, and the probe's
results beside the two references, with the retrieval scores of the same vectors (same-label neighbours), at one
checkpoint or over all of them."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.data.builtin_tasks import TITLES, builtin_task
from mlm_studio.core.data.formats import TABLE_FORMATS, TABLE_SUFFIXES
from mlm_studio.core.evaluation.task_probe import TaskResult
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.diagnosis_views import plot_series
from mlm_studio.ui.widgets.plots import ThemedPlot, fit_rows

PROBE_TIP = (
    "Train a logistic regression on the model's frozen sentence vectors on 75% of the texts, stratified, and score "
    "it on the rest, beside the majority class and a bag of words"
)
HINT = (
    "Choose a file of labelled texts, then Probe the task to score the evaluated model on it, or press Every "
    "checkpoint above for the task's scores over the run's checkpoints."
)
CURVES_HINT = "Press Every checkpoint above to draw the task's scores over the run's checkpoints here."
COLUMNS = ("classifier", "accuracy", "macro-F1", "recall@1", "recall@5", "MRR")
RETRIEVAL_TIP = (
    "Same-label neighbours: each held-out text looks for its nearest training texts by cosine of the same vectors; "
    "recall@k is the share of held-out texts with a text of their label among the k nearest, MRR the mean of 1 / "
    "the rank of the first one"
)
FILE_FILTER = f"Labelled texts ({' '.join('*' + ext for ext in TABLE_SUFFIXES)});;All files (*)"


class TaskView(QWidget):
    probe_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.path_edit = QLineEdit()
        self.path_edit.setPlaceholderText(f"a file of texts and labels: {TABLE_FORMATS}")
        choose = QPushButton("Choose…")
        choose.clicked.connect(self.choose)
        self.example_button = QPushButton("Built-in example")
        self.example_button.setToolTip(
            f"The built-in classification example, made from the documentation that ships with Python: "
            f"{TITLES['classification']}"
        )
        self.example_button.clicked.connect(self.use_example)
        self.examples = TaskRunner(self)  # writes the example's files the first time it is chosen
        self.examples.succeeded.connect(self._on_example_ready)
        self.examples.failed.connect(lambda m: self.hint.setText(f"Could not write the built-in example: {m}"))
        self.text_column, self.label_column = QLineEdit("text"), QLineEdit("label")
        self.layer_spin = QSpinBox()
        self.layer_spin.setRange(0, 1)
        self.layer_spin.setSpecialValueText("last, as the head reads it")
        self.layer_spin.setToolTip("Whose output is averaged into the sentence vector: a layer, or the last")
        self.probe_button = QPushButton("Probe the task")
        self.probe_button.clicked.connect(self.probe_requested)
        self.ready = False  # a model is evaluated and nothing runs: the probe has vectors to read
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        for column in range(3, len(COLUMNS)):
            self.table.horizontalHeaderItem(column).setToolTip(RETRIEVAL_TIP)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.series = ThemedPlot("step", "held-out accuracy", percent=("left",))
        self.series.setTitle("The task over the run's checkpoints (Every checkpoint)")
        self.series.add_header_legend()
        self.series_note = QLabel()  # whose checkpoints, and which curves hide one another
        self.series_note.setWordWrap(True)
        self.drawn = False  # the curves over checkpoints are drawn
        self.hint = QLabel(HINT)  # in place of the curves until they are drawn (and of the table while it is empty)
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        row = QHBoxLayout()
        row.addWidget(self.path_edit, 1)
        row.addWidget(choose)
        row.addWidget(self.example_button)
        form = QFormLayout()
        form.addRow("Labelled texts", row)
        form.addRow("Text column", self.text_column)
        form.addRow("Label column", self.label_column)
        form.addRow("Layer", self.layer_spin)
        form.addRow(self.probe_button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.table)
        layout.addWidget(self.hint, 1)
        layout.addWidget(self.series_note)
        layout.addWidget(self.series, 1)
        self.path_edit.textChanged.connect(self._update_button)
        self._update_button()
        self._show_parts()

    def set_ready(self, ready: bool) -> None:
        """Whether a model is evaluated and nothing runs; the probe also needs a file."""
        self.ready = ready
        self._update_button()

    def _update_button(self) -> None:
        has_file = bool(self.path_edit.text().strip())
        self.probe_button.setEnabled(self.ready and has_file)
        self.probe_button.setToolTip(
            PROBE_TIP if self.ready and has_file else "Evaluate a model and choose a file of labelled texts first"
        )

    def choose(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Labelled texts", "", FILE_FILTER)
        if path:
            self.path_edit.setText(path)

    def use_example(self) -> None:
        """The built-in classification example becomes the labelled texts (once its files are written)."""
        self.examples.start(lambda progress: builtin_task("classification", progress))

    def _on_example_ready(self, example) -> None:
        self.path_edit.setText(str(example.train))
        self.text_column.setText("text")
        self.label_column.setText("label")

    def state(self) -> dict:
        """The labelled file and its columns, as the window remembers them between starts (`restore`)."""
        return {"file": self.path_edit.text(), "text": self.text_column.text(), "label": self.label_column.text()}

    def restore(self, state: dict) -> None:
        """Put back each text `state` holds (anything else leaves its field as it is)."""
        for name, edit in (("file", self.path_edit), ("text", self.text_column), ("label", self.label_column)):
            if isinstance(state.get(name), str):
                edit.setText(state[name])

    def request(self) -> tuple[str, str, str, int | None]:
        """The file, its text and label columns, and the layer (None: the last, as the head reads it)."""
        columns = self.text_column.text().strip() or "text", self.label_column.text().strip() or "label"
        return self.path_edit.text().strip(), *columns, self.layer_spin.value() or None

    def clear(self) -> None:
        self.table.setRowCount(0)
        self._show_parts()

    def show_results(self, results: list[tuple[str, TaskResult]]) -> None:
        """Each model's probe, then the references (the same split for all); beside each, the retrieval scores of
        its vectors."""
        first = results[0][1]
        rows = [
            (f"{title}: linear probe", f"{r.accuracy:.1%}", f"{r.macro_f1:.3f}", f"{r.recall_at_1:.1%}",
             f"{r.recall_at_5:.1%}", f"{r.mrr:.3f}")
            for title, r in results
        ]  # fmt: skip
        rows += [
            ("majority class", f"{first.majority_accuracy:.1%}", "", "", "", ""),
            ("bag of words (TF-IDF + logistic regression)", f"{first.bag_of_words_accuracy:.1%}", "",
             f"{first.bag_of_words_recall_at_1:.1%}", f"{first.bag_of_words_recall_at_5:.1%}",
             f"{first.bag_of_words_mrr:.3f}"),
        ]  # fmt: skip
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, value in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(value))
        self.table.resizeColumnsToContents()
        fit_rows(self.table)
        self._show_parts()

    def show_series(self, steps: list[int], results: list[TaskResult], run: str = "") -> None:
        """The probe at each checkpoint of the run named `run` as curves, beside the references and the nearest
        neighbour's recall."""
        note = plot_series(self.series, steps, {
            "linear probe": [r.accuracy for r in results],
            "majority class": [r.majority_accuracy for r in results],
            "bag of words": [r.bag_of_words_accuracy for r in results],
            "same-label neighbour (recall@1)": [r.recall_at_1 for r in results],
        }, dashed=("majority class", "bag of words"))  # fmt: skip
        self.series_note.setText(f"The {len(steps)} checkpoints of <b>{run}</b>. {note}".strip())
        self.drawn = True
        self._show_parts()

    def clear_series(self) -> None:
        """No curves (another run is chosen)."""
        self.series.clear()
        self.drawn = False
        self._show_parts()

    def _show_parts(self) -> None:
        """The table once it has rows, the curves once drawn, the hint in their place until they are."""
        rows = self.table.rowCount() > 0
        self.table.setVisible(rows)
        self.series.setVisible(self.drawn)
        self.series_note.setVisible(self.drawn)
        self.hint.setVisible(not self.drawn)
        self.hint.setText(CURVES_HINT if rows else HINT)
