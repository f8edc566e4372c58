"""Fill-mask playground: type a sentence with [MASK], see each mask's top candidates with probabilities,
click one to fill it in; compare two models side by side. Models come from checkpoints on disk, never
from the weights being trained."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.evaluation.predict import Candidate, Filled, FillMask, PredictError
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.theme import PALETTE_CHANGES, blended
from mlm_studio.ui.widgets.candidate_label import written_form
from mlm_studio.ui.widgets.explanation import ExplanationView, Question, why_button
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.model_choice import model_combo, model_entries, refill
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView
from mlm_studio.ui.workspace import Workspace

MASK = "[MASK]"
DEBOUNCE_MS = 250
CURRENT_RUN = "current"
DEFAULT_TEXT = "Return a [MASK] of the list."
REPLACED_COLOUR = "#d62728"
BAR_WIDTH = 160  # a candidate's probability bar: long enough to compare, short enough to read its share beside it
NO_SECOND_MODEL = "Train or import a second model to compare (Model folder… adds one from disk)."
EXPLAINED_IS_GONE = (
    "The candidates explained are gone (another sentence or model predicted): click “why?” beside a candidate to "
    "see which words carried it."
)
SAME_MODEL = "Model B is the same model as Model A: choose another one to compare them."
WEIGHTS_TOOLTIP = {
    True: "Int8 weights, for speed: on 399 masks in text a trained model had not seen, the first candidate was the "
    "exact weights' in 99% of them, probabilities within 2.6 points (tick Exact weights for the exported model's "
    "numbers).",
    False: "Exact weights: the same candidates and probabilities as the CLI and the exported model.",
}


@dataclass(frozen=True)
class Context:
    """What one mask's candidates were predicted from in iterative mode: the pieces, the masks filled before it
    holding their first candidate, and the mask's position among them."""

    pieces: tuple[int, ...]
    position: int
    filled_before: tuple[int, ...]  # the masks (0: the first) filled before this one, in the order filled


@dataclass(frozen=True)
class Prediction:
    source: str
    masks: tuple[tuple[Candidate, ...], ...]
    filled: str | None  # the text with every mask filled (iterative mode)
    milliseconds: float
    replaced: tuple[tuple[str, float], ...] = ()  # an ELECTRA model's: each token, P(replaced)
    int8: bool = False  # scored with int8 weights, not the exact ones
    contexts: tuple[Context, ...] = ()  # iterative mode: per mask, what its candidates were predicted from
    text: str = ""  # the text predicted from


def predict(path: str, text: str, top_k: int, iterative: bool, int8: bool = False) -> Prediction:
    """Load (cached) and score, timing the scoring alone; with `int8`, int8 weights where the device runs them. An
    ELECTRA model also says, of each token, how likely its discriminator finds it replaced (with or without a
    [MASK] in the text)."""
    model = FillMask.from_path(path, int8=int8)
    if MASK not in text and model.detector is None:
        raise PredictError("Write [MASK] where a word is missing (or select a word and press Ctrl+M).")
    start = time.perf_counter()
    replaced = tuple(model.replaced(text)) if model.detector is not None else ()
    contexts: tuple[Context, ...] = ()
    if MASK not in text:
        masks, filled_text = (), None
    elif iterative:
        filled = model.fill(text, top_k)
        masks, contexts, filled_text = filled.candidates, contexts_of(model, text, filled), filled.text
    else:
        masks, filled_text = tuple(model.predict(text, top_k)), None
    milliseconds = (time.perf_counter() - start) * 1000
    return Prediction(model.source, masks, filled_text, milliseconds, replaced, model.int8, contexts, text)


def contexts_of(model: FillMask, text: str, filled: Filled) -> tuple[Context, ...]:
    """Per mask of `text` (in its order), the pieces `filled`'s candidates there were predicted from."""
    pieces = model.encode(model.tokenizer.with_mask_token(text))[0].tolist()
    positions = [position for position, piece in enumerate(pieces) if piece == model.tokenizer.mask_id]
    contexts = []
    for number, position in enumerate(positions):
        before = filled.order[: filled.order.index(number)]
        context = list(pieces)
        for earlier in before:
            context[positions[earlier]] = filled.candidates[earlier][0].token_id
        contexts.append(Context(tuple(context), position, before))
    return tuple(contexts)


class ResultsView(QGroupBox):
    """One model's candidates: per mask, buttons with probability bars."""

    candidate_clicked = Signal(int, object)  # mask number, Candidate
    why_clicked = Signal(int, object)  # mask number, Candidate: explain it

    def __init__(self, title: str) -> None:
        super().__init__(title)
        self.default_title = title
        self.subject: str | None = None  # the model whose candidates are shown, None while none are
        self.prediction: Prediction | None = None  # the candidates shown, None while none are
        self._replaced: tuple[tuple[str, float], ...] = ()
        self.model_combo = model_combo("The model: the current run's latest checkpoint, a saved run, or a folder")
        self.latency = QLabel()
        self.body = QWidget()
        self.grid = QGridLayout(self.body)
        self.grid.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.grid.setColumnStretch(4, 1)  # the candidates keep to the left; the space left over stays empty
        self.filled = QLabel()
        self.filled.setWordWrap(True)
        self.detector_label = QLabel("<b>Replaced?</b> the discriminator's view of each token (darker: more likely "
                                     "replaced; hover for the probability)")  # fmt: skip
        self.detector_label.setWordWrap(True)
        self.detector = TokenView()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.body)
        header = QHBoxLayout()
        header.addWidget(self.model_combo, 1)
        header.addWidget(self.latency)
        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.filled)
        layout.addWidget(self.detector_label)
        layout.addWidget(self.detector)
        layout.addWidget(scroll, 1)
        self._show_detector(())
        self.buttons: list[list[QPushButton]] = []

    def show_prediction(self, prediction: Prediction, subject: str) -> None:
        """`prediction`'s candidates, made by the model at `subject`."""
        self._clear()
        self.subject, self.prediction = subject, prediction
        self.latency.setText(f"{prediction.milliseconds:.1f} ms · {'int8' if prediction.int8 else 'exact'} weights")
        self.latency.setToolTip(WEIGHTS_TOOLTIP[prediction.int8])
        self.filled.setText(f"Filled: <b>{prediction.filled}</b>" if prediction.filled else "")
        self.filled.setVisible(bool(prediction.filled))
        self._show_detector(prediction.replaced)
        row = 0
        for number, candidates in enumerate(prediction.masks):
            self.grid.addWidget(QLabel(f"<b>[MASK] {number + 1}</b>"), row, 0, 1, 3)
            row += 1
            buttons = []
            for candidate in candidates:
                label, tooltip, writable = written_form(candidate)
                button = QPushButton(label)
                button.setFlat(True)
                button.setToolTip(tooltip.replace("the mask", f"[MASK] {number + 1}"))
                button.setEnabled(writable)
                button.clicked.connect(lambda _=False, n=number, c=candidate: self.candidate_clicked.emit(n, c))
                bar = QProgressBar()
                bar.setRange(0, 1000)
                bar.setValue(round(candidate.score * 1000))
                bar.setTextVisible(False)  # the share is read beside the bar, not over its fill
                bar.setFixedSize(BAR_WIDTH, 12)
                share = QLabel(f"{candidate.score:.1%}")
                self.grid.addWidget(button, row, 0)
                self.grid.addWidget(bar, row, 1)
                self.grid.addWidget(share, row, 2)
                self.grid.addWidget(why_button(lambda n=number, c=candidate: self.why_clicked.emit(n, c)), row, 3)
                buttons.append(button)
                row += 1
            self.buttons.append(buttons)

    def _show_detector(self, replaced: tuple[tuple[str, float], ...]) -> None:
        """Each token shaded by the probability that it was replaced (an ELECTRA model's detector)."""
        self._replaced = replaced
        cells, base, red = [], self.palette().color(QPalette.ColorRole.Base), QColor(REPLACED_COLOUR)
        for piece, probability in replaced:
            colour = blended(red, 0.08 + 0.92 * probability, base)  # so that the text colour can follow it
            cells.append(TokenCell(piece, colour, f"{piece}: replaced with probability {probability:.1%}"))
        self.detector.set_cells(cells)
        self.detector.setVisible(bool(cells))
        self.detector_label.setVisible(bool(cells))

    def changeEvent(self, event: QEvent) -> None:
        """The chips are blended over the background: a new colour scheme blends them again."""
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            self._show_detector(self._replaced)

    def show_message(self, text: str) -> None:
        """`text` instead of candidates, under the view's own title (no model answered)."""
        self._clear()
        self.subject, self.prediction = None, None
        self.setTitle(self.default_title)
        self._show_detector(())
        self.latency.setText("")
        self.filled.setVisible(False)
        label = QLabel(text)
        label.setWordWrap(True)
        self.grid.addWidget(label, 0, 0, 1, 4)

    def _clear(self) -> None:
        self.buttons = []
        while self.grid.count():
            widget = self.grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()


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
        text = edit.text()
        if edit.hasSelectedText():
            start, length = edit.selectionStart(), len(edit.selectedText())
        else:
            cursor = edit.cursorPosition()
            match = next((m for m in re.finditer(r"[\w'-]+", text) if m.start() <= cursor <= m.end()), None)
            if match is None:
                return
            start, length = match.start(), match.end() - match.start()
        edit.setText(text[:start] + MASK + text[start + length :])
        edit.setCursorPosition(start + len(MASK))

    def fill_mask(self, number: int, candidate: Candidate) -> None:
        """Put `candidate` in place of the mask number `number` (counting from 0); a piece that continues a
        word joins the word before it."""
        parts = self.text_edit.text().split(MASK)
        if number + 1 >= len(parts):
            return
        before = MASK.join(parts[: number + 1])
        before = before.rstrip(" ") if candidate.continues else before
        self.text_edit.setText(before + candidate.text + MASK.join(parts[number + 1 :]))

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


if __name__ == "__main__":
    from mlm_studio.ui.preview import preview

    preview(PlaygroundPanel, loaded=False)
