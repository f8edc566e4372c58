"""Fill-mask playground: type a sentence with [MASK], see each mask's top candidates with probabilities,
click one to fill it in; compare two models side by side. Models come from checkpoints on disk, never
from the weights being trained."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.evaluation.predict import Candidate
from mlm_studio.ui.panels.playground.masked_text import with_candidate, with_mask, word_at
from mlm_studio.ui.panels.playground.prediction import Prediction, predict
from mlm_studio.ui.panels.playground.results_view import ResultsView
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.explanation import ExplanationView, Question
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.model_choice import model_entries, refill
from mlm_studio.ui.workspace import Workspace

DEBOUNCE_MS = 250
DEFAULT_TEXT = "Return a [MASK] of the list."
NO_SECOND_MODEL = "Train or import a second model to compare (Model folder… adds one from disk)."
EXPLAINED_IS_GONE = (
    "The candidates explained are gone (another sentence or model predicted): click “why?” beside a candidate to "
    "see which words carried it."
)
SAME_MODEL = "Model B is the same model as Model A: choose another one to compare them."


class PlaygroundPanel(QWidget):
    """Predictions run in the background, debounced as the user types."""

    predicted = Signal()

    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        self.folders: list[str] = []
        self._current_run: str | None = None  # the path listed as the current run
        self._chosen: dict[int, str | None] = {}  # per view: the model picked by hand, if any
        self.explained: tuple[ResultsView, str, str] | None = None  # the view, model and sentence explained
        self._build()
        self.runners = [TaskRunner(self), TaskRunner(self)]
        for runner, view in zip(self.runners, self.views):
            runner.succeeded.connect(lambda result, v=view: self._on_prediction(v, *result))
            runner.failed.connect(lambda message, v=view: self._on_failed(v, message))
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(DEBOUNCE_MS)
        self.timer.timeout.connect(self.predict_now)
        workspace.run_changed.connect(lambda _: self.refresh_models())
        workspace.runs_changed.connect(self.refresh_models)
        workspace.initial_model_changed.connect(self._on_initial_model)
        self.refresh_models()

    def _build(self) -> None:
        self.text_edit = QLineEdit(DEFAULT_TEXT)
        self.text_edit.setPlaceholderText("Type a sentence with [MASK] where a word is missing")
        self.text_edit.textChanged.connect(self._schedule)
        self.mask_button = QPushButton("Mask selection")
        self.mask_button.setToolTip("Replace the selected word with [MASK] (Ctrl+M)")
        self.mask_button.clicked.connect(self.mask_selection)
        QShortcut(QKeySequence("Ctrl+M"), self, self.mask_selection)
        self.top_k_spin = QSpinBox()
        self.top_k_spin.setRange(1, 50)
        self.top_k_spin.setValue(5)
        self.top_k_spin.setToolTip("Candidates per mask")
        self.top_k_spin.valueChanged.connect(self._schedule)
        self.mode_combo = QComboBox()
        self.mode_combo.addItem("independent", False)
        self.mode_combo.addItem("iterative", True)
        self.mode_combo.setToolTip(
            "Independent: each mask scored with the others masked. Iterative: fill the most confident mask, "
            "then predict the rest again"
        )
        self.mode_combo.currentIndexChanged.connect(self._schedule)
        self.exact_check = QCheckBox("Exact weights (fp32)")
        self.exact_check.setToolTip(
            "Predict with the model's exact weights (slower) instead of int8 copies of its linear layers"
        )
        self.exact_check.toggled.connect(self._schedule)
        self.compare_check = QCheckBox("compare two models")
        self.compare_check.toggled.connect(self._on_compare)
        self.browse_button = QPushButton("Model folder…")
        self.browse_button.setToolTip("Use a run, a checkpoint or a Hugging Face BERT folder from anywhere")
        self.browse_button.clicked.connect(self.browse)
        controls = QHBoxLayout()
        controls.addWidget(self.text_edit, 1)
        controls.addWidget(self.mask_button)
        row = QHBoxLayout()
        row.addWidget(QLabel("Top"))
        row.addWidget(self.top_k_spin)
        row.addWidget(self.mode_combo)
        row.addWidget(self.exact_check)
        row.addWidget(self.compare_check)
        row.addStretch(1)
        row.addWidget(self.browse_button)
        self.message_bar = MessageBar()
        self.views = [ResultsView("Model A"), ResultsView("Model B")]
        results = QHBoxLayout()
        for view in self.views:
            view.candidate_clicked.connect(self.fill_mask)
            view.model_combo.currentIndexChanged.connect(self._schedule)
            view.model_combo.currentIndexChanged.connect(lambda _index, v=view: self._remember_choice(v))
            results.addWidget(view)
        self.views[1].hide()
        self.explanation = ExplanationView()
        for view in self.views:
            view.why_clicked.connect(lambda number, candidate, v=view: self.explain(v, number, candidate))
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addLayout(row)
        layout.addWidget(self.message_bar)
        layout.addLayout(results, 1)
        layout.addWidget(self.explanation, 1)

    # --- models -------------------------------------------------------------------------------------
    @property
    def runs_root(self) -> Path:
        return self.workspace.runs_root

    def refresh_models(self) -> None:
        """List the current run, the saved runs and the folders the user chose. A view that showed the current
        run follows it to the new one when another run starts."""
        run = str(self.workspace.run) if self.workspace.run is not None else None
        entries = model_entries(self.workspace.run, self.workspace.runs, self.folders)
        for view in self.views:
            keep = self._chosen.get(id(view)) or run or view.model_combo.currentData()
            refill(view.model_combo, entries, keep, self.workspace.runs)
        self.views[1].model_combo.setEnabled(len(entries) > 1)  # with one model, B has nothing of its own to choose
        self._current_run = run
        self._schedule()

    def _remember_choice(self, view) -> None:
        """A model picked by hand stays; picking the current run (or nothing) follows whichever run is current."""
        data = view.model_combo.currentData()
        self._chosen[id(view)] = None if data is None or data == self._current_run else data

    def state(self) -> dict[str, object]:
        """What the window remembers of this panel between starts: whether it predicts with exact weights."""
        return {"exact_weights": self.exact_check.isChecked()}

    def restore(self, state: dict[str, object]) -> None:
        """Return to a remembered `state` (a settings file gives "true" or "false")."""
        self.exact_check.setChecked(str(state.get("exact_weights", "false")).lower() == "true")

    def on_checkpoint(self, path: str) -> None:
        """A new checkpoint of the current run: predict again from it."""
        self._schedule()

    def browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A run, checkpoint or Hugging Face model folder")
        if folder:
            self.add_folder(folder)

    def _on_initial_model(self, imported) -> None:
        """An imported model can be asked questions before any training; the first view shows it until a run
        continues it, then follows that run."""
        if imported is not None:
            self.add_folder(str(imported.folder))
            self._chosen[id(self.views[0])] = None

    def add_folder(self, folder: str) -> None:
        if folder not in self.folders:
            self.folders.append(folder)
        self.refresh_models()
        view = self.views[0]
        view.model_combo.setCurrentIndex(view.model_combo.findData(folder))

    # --- text ---------------------------------------------------------------------------------------
    def mask_selection(self) -> None:
        """Replace the selected text (or the word at the cursor) with [MASK]."""
        edit = self.text_edit
        if edit.hasSelectedText():
            span = edit.selectionStart(), len(edit.selectedText())
        else:
            span = word_at(edit.text(), edit.cursorPosition())
        if span is not None:
            text, cursor = with_mask(edit.text(), *span)
            edit.setText(text)
            edit.setCursorPosition(cursor)

    def fill_mask(self, number: int, candidate: Candidate) -> None:
        """Put `candidate` in place of the mask number `number` (counting from 0)."""
        text = with_candidate(self.text_edit.text(), number, candidate)
        if text is not None:
            self.text_edit.setText(text)

    def explain(self, view: ResultsView, number: int, candidate: Candidate) -> None:
        if view.subject is not None and view.prediction is not None:
            self.explained = (view, view.subject, view.prediction.text)
        self._ask_why(view, number, candidate)

    def _put_away_what_is_gone(self) -> None:
        """The explanation put away once the candidates it explained are no longer shown: another model or another
        sentence predicted in their place, a message instead, or their view hidden (as Evaluation and Try it do)."""
        if self.explained is None:
            return
        view, subject, text = self.explained
        if view.isHidden() or view.subject != subject or view.prediction is None or view.prediction.text != text:
            self.explained = None
            self.explanation.put_away(EXPLAINED_IS_GONE)

    def _ask_why(self, view: ResultsView, number: int, candidate: Candidate) -> None:
        """Why `view`'s model predicted `candidate` at mask `number` (0: the first) of the text it was predicted
        from (not the text as edited since); in iterative mode, with the masks filled before it holding the
        candidates chosen there."""
        prediction = view.prediction
        if view.subject is None or prediction is None:
            return
        if not prediction.contexts:
            self.explanation.ask(Question(view.subject, number, candidate.token_id, text=prediction.text))
            return
        context = prediction.contexts[number]
        filled = ", ".join(
            f"[MASK] {earlier + 1} as {prediction.masks[earlier][0].text}" for earlier in context.filled_before
        )
        where = f"at [MASK] {number + 1}" + (f", after filling {filled}" if filled else "")
        self.explanation.ask(
            Question(view.subject, number, candidate.token_id, pieces=context.pieces, position=context.position,
                     run=view.subject, where=where)
        )  # fmt: skip

    # --- predictions --------------------------------------------------------------------------------
    def _on_compare(self, on: bool) -> None:
        self.views[1].setVisible(on)
        first, second = (view.model_combo for view in self.views)
        if on and second.currentData() in (None, first.currentData()):  # B starts on a model other than A's
            others = [i for i in range(second.count()) if second.itemData(i) != first.currentData()]
            if others:
                second.setCurrentIndex(others[0])
        self._schedule()

    def _schedule(self, *_) -> None:
        self.timer.start()

    def predict_now(self) -> None:
        text = self.text_edit.text()
        top_k, iterative = self.top_k_spin.value(), self.mode_combo.currentData()
        int8 = not self.exact_check.isChecked()
        for runner, view in zip(self.runners, self.views):
            if view is self.views[1] and not self.compare_check.isChecked():
                continue
            path = view.model_combo.currentData()
            if path is None:
                view.show_message("No trained model yet: train one in the Training panel, or choose a folder.")
                continue
            if view is self.views[1] and view.model_combo.count() < 2:  # it could only repeat model A
                view.show_message(NO_SECOND_MODEL)
                continue
            if view is self.views[1] and path == self.views[0].model_combo.currentData():
                runner.cancel()
                view.show_message(SAME_MODEL)
                continue
            if view.subject != path:  # another model's candidates never stand under this one's name
                view.show_message(f"Predicting with {view.model_combo.currentText()}…")
            runner.start(lambda progress, p=path: (predict(p, text, top_k, iterative, int8), p))
        self._put_away_what_is_gone()

    def _on_prediction(self, view: ResultsView, prediction: Prediction, subject: str) -> None:
        view.show_prediction(prediction, subject)
        view.setTitle(prediction.source)
        self._put_away_what_is_gone()
        self.predicted.emit()

    def _on_failed(self, view: ResultsView, message: str) -> None:
        view.show_message(message)
        self._put_away_what_is_gone()
