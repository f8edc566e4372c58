"""The Fine-tune panel's *Try it* tab: a text typed in, answered by the fine-tuning run the panel shows (its best
weights, read again when they change): a classifier's labels as probability bars (a second text for a classifier of
pairs), a tagger's entities as coloured chips over the text (those `predict` prints, each word whole and tagged as
its first piece is; each word's tag and score in its tooltip), a question-answering model's answer highlighted in
its context with its score. The model reads in the background; a text longer than it reads says how much it read."""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QGridLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QScrollArea,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.finetune.pipeline_shapes import Answered, Labelled, Tagged
from mlm_studio.core.finetune.predict import FineTuned, reads_pairs
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.ui.panels.finetune.results import CHIP_COLOURS
from mlm_studio.ui.panels.finetune.subjects import run_subject
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.theme import PALETTE_CHANGES, ToneLabel, blended
from mlm_studio.ui.widgets.elided_label import ElidedLabel
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView

DEBOUNCE_MS = 250
BAR_WIDTH = 220  # a label's probability bar
MOST_LABELS = 30  # bars shown; the rest are counted
TEXT_LINES = 3  # the height of each text box, in lines
# after a word's tag in a tooltip: the chips keep it whole, as its first piece's tag says, where grouping every piece
# by its own tag (the pipeline's "simple") would split it
PIECES_DIFFER = "its later pieces are tagged otherwise; the word keeps its first piece's tag"
NO_RUN = "No fine-tuning run is shown. Fine-tune one, or choose one in the Runs tab, to try it on a text of your own."
TYPE_SOMETHING = {
    "classification": "Type a text above: each label's probability appears here.",
    "tokens": "Type a text above: the entities the model finds appear here, each word's tag in its tooltip.",
    "qa": "Type a question and the context to answer it from: the answer appears here, highlighted.",
}
TYPE_THE_PAIR = "Type the second text too: the model was fine-tuned on pairs of texts and reads both."


@dataclass(frozen=True)
class Tried:
    """A model's answer to what was typed: the model (kept for the next text), and how long it took."""

    key: tuple  # the run, its weights and their time: a change reads the model again
    asked: tuple[str, str, str]  # the text, the second text and the question it answers
    model: FineTuned
    answer: Labelled | Tagged | Answered
    milliseconds: float


def weights_key(path: Path) -> tuple:
    """What identifies the weights the run answers with now (CheckpointError when it has none yet)."""
    weights = FineTuned.best_weights(RunDir(path)) / "model.safetensors"
    return str(path), str(weights), weights.stat().st_mtime_ns


def try_text(
    path: Path, key: tuple, kept: FineTuned | None, text: str, pair: str, question: str, progress: Progress
) -> Tried:
    """The run's answer to the text typed (its model read unless `kept` is the one `key` names); Cancelled when
    what is typed changed meanwhile."""
    model = kept if kept is not None else FineTuned(RunDir(path), Path(key[1]).parent)
    started = time.perf_counter()
    if model.kind == "classification":
        answer = model.label_text(text, pair or None)
    elif model.kind == "tokens":
        answer = model.tag_text(text)
    else:
        answer = model.answer_text(question, text, top_k=1, progress=progress)
    milliseconds = (time.perf_counter() - started) * 1000
    progress.check()
    return Tried(key, (text, pair, question), model, answer, milliseconds)


class TryItView(QWidget):
    """What the shown fine-tuning run answers to a text typed in, headed by the run it is."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path: Path | None = None
        self.kind = ""
        self.pairs: bool | None = False  # whether the run's classifier reads pairs (None: cannot tell)
        self._kept: Tried | None = None  # the last answer, with its model
        self.caption = ElidedLabel()
        bold = self.caption.font()
        bold.setBold(True)
        self.caption.setFont(bold)
        self.question_edit = QLineEdit()
        self.question_edit.setPlaceholderText("The question")
        self.text_edit = self._text_box("A text to try")
        self.pair_edit = self._text_box("The second text of the pair")
        self.question_edit.textChanged.connect(self._schedule)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.read_note = ToneLabel("warning")
        self.hint = QLabel(NO_RUN)
        self.hint.setWordWrap(True)
        self.bars = QWidget()
        self.grid = QGridLayout(self.bars)
        self.grid.setColumnStretch(3, 1)
        self.chips = TokenView()
        self.context = QTextBrowser()
        self.context.setOpenLinks(False)
        answers = QWidget()
        answer_layout = QVBoxLayout(answers)
        for part in (self.hint, self.bars, self.chips, self.context):
            answer_layout.addWidget(part)
        answer_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(answers)
        self.text_label, self.pair_label = QLabel("Text"), QLabel("Second text")
        self.question_label = QLabel("Question")
        inputs = QGridLayout()
        for row, (label, box) in enumerate(
            [
                (self.question_label, self.question_edit),
                (self.text_label, self.text_edit),
                (self.pair_label, self.pair_edit),
            ]
        ):
            inputs.addWidget(label, row, 0, Qt.AlignmentFlag.AlignTop)
            inputs.addWidget(box, row, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.caption)
        layout.addLayout(inputs)
        for part in (self.status, self.read_note):
            layout.addWidget(part)
        layout.addWidget(scroll, 1)
        self.runner = TaskRunner(self)
        self.runner.succeeded.connect(self._on_tried)
        self.runner.failed.connect(self._say_instead)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(DEBOUNCE_MS)
        self.timer.timeout.connect(self.try_now)
        self.set_run(None)

    def _text_box(self, placeholder: str) -> QPlainTextEdit:
        box = QPlainTextEdit()
        box.setPlaceholderText(placeholder)
        box.setTabChangesFocus(True)
        lines = box.fontMetrics().lineSpacing() * TEXT_LINES
        box.setFixedHeight(lines + 2 * box.frameWidth() + 8)
        box.textChanged.connect(self._schedule)
        return box

    # --- the run shown ------------------------------------------------------------------------------
    def set_run(self, path: Path | None) -> None:
        """Answer with `path`'s model from now on (None: no run); what was typed stays and is answered again."""
        if path != self.path:
            self._kept = None
        self.path = Path(path) if path is not None else None
        self.kind = self._kind_of(self.path)
        self.caption.setText(run_subject(self.path) if self.path is not None else "")
        self.caption.setVisible(self.path is not None)
        for box in (self.text_edit, self.pair_edit, self.question_edit):
            box.setEnabled(bool(self.kind))
        for part in (self.question_label, self.question_edit):
            part.setVisible(self.kind == "qa")
        self.text_label.setText("Context" if self.kind == "qa" else "Text")
        self.text_edit.setPlaceholderText("The context to answer from" if self.kind == "qa" else "A text to try")
        self.pairs = reads_pairs(RunDir(self.path)) if self.kind == "classification" else False  # its file's header
        for part in (self.pair_label, self.pair_edit):
            part.setVisible(self.pairs is not False)  # also when its training file is gone: it may read pairs
        self.refresh()

    def refresh(self) -> None:
        """Answer again now: the run's weights may have changed (a checkpoint, the run's end)."""
        self.timer.stop()
        self.try_now()

    @staticmethod
    def _kind_of(path: Path | None) -> str:
        if path is None:
            return ""
        try:
            task = RunDir(path).task
        except CheckpointError:
            return ""
        return task.kind if task else ""

    # --- answering ----------------------------------------------------------------------------------
    def _schedule(self) -> None:
        self.timer.start()

    def try_now(self) -> None:
        """Answer what is typed with the run's model in the background; say why not when it cannot."""
        text, pair, question = self._asked()
        if self.path is None or not self.kind:
            self.runner.cancel()
            self._say_instead(NO_RUN if self.path is None else f"{self.path.name} is not a fine-tuning run to try")
            return
        try:
            key = weights_key(self.path)
        except (CheckpointError, OSError) as exc:
            self.runner.cancel()
            self._say_instead(f"{str(exc)[:1].upper()}{str(exc)[1:]}: its answers appear here once it has some.")
            return
        if not text.strip() or (self.kind == "qa" and not question.strip()):
            self.runner.cancel()
            self._say_instead(TYPE_SOMETHING.get(self.kind, ""))
            return
        if self.pairs and not pair.strip():  # an empty second text is none: the model would read half a pair
            self.runner.cancel()
            self._say_instead(TYPE_THE_PAIR)
            return
        kept = self._kept.model if self._kept is not None and self._kept.key == key else None
        path = self.path
        self.runner.start(lambda progress: try_text(path, key, kept, text, pair, question, progress))

    def _asked(self) -> tuple[str, str, str]:
        return self.text_edit.toPlainText(), self.pair_edit.toPlainText(), self.question_edit.text()

    def _on_tried(self, tried: Tried) -> None:
        if self.path is None or tried.key[0] != str(self.path) or tried.asked != self._asked():
            return  # another run is shown, or another text typed, now: its answer is on its way
        self._kept = tried
        self._show_nothing()
        self.hint.hide()
        weights = Path(tried.key[1]).parent.name
        self.status.setText(
            f"Answered by {html.escape(tried.model.run.name)} / {html.escape(weights)} in {tried.milliseconds:.1f} ms"
        )
        self.status.show()
        if isinstance(tried.answer, Labelled):
            self._show_labels(tried.answer)
        elif isinstance(tried.answer, Tagged):
            self._show_tags(tried.answer)
        else:
            self._show_answer(tried.answer)

    def _say_instead(self, message: str) -> None:
        """`message` where the answers go (no model answered)."""
        self._show_nothing()
        self.status.setText("")
        self.status.hide()
        self.hint.setText(message)
        self.hint.show()

    def _show_nothing(self) -> None:
        while self.grid.count():
            widget = self.grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.bars.hide()
        self.chips.set_cells([])
        self.chips.hide()
        self.context.clear()
        self.context.hide()
        self.read_note.setText("")
        self.read_note.hide()

    def _say_what_was_read(self, said: str) -> None:
        self.read_note.setText(f"Cut: {said}." if said else "")
        self.read_note.setVisible(bool(said))

    # --- the three kinds of answer ------------------------------------------------------------------
    def _show_labels(self, labelled: Labelled) -> None:
        """Each label, its probability as a bar and in figures, the most probable first."""
        for row, answer in enumerate(labelled.scores[:MOST_LABELS]):
            bar = QProgressBar()
            bar.setRange(0, 1000)
            bar.setValue(round(answer["score"] * 1000))
            bar.setTextVisible(False)  # the share is read beside the bar
            bar.setFixedSize(BAR_WIDTH, 14)
            name = QLabel(f"<b>{html.escape(answer['label'])}</b>" if row == 0 else html.escape(answer["label"]))
            name.setToolTip(answer["label"])
            self.grid.addWidget(name, row, 0)
            self.grid.addWidget(bar, row, 1)
            self.grid.addWidget(QLabel(f"{answer['score']:.1%}"), row, 2)
        left = len(labelled.scores) - MOST_LABELS
        if left > 0:
            self.grid.addWidget(QLabel(f"and {left:,} less probable labels"), MOST_LABELS, 0, 1, 3)
        self.bars.show()
        self._say_what_was_read(labelled.reading.describe())

    def _show_tags(self, tagged: Tagged) -> None:
        """The text as chips: each entity (whole words, each tagged as its first piece is, as the model is scored,
        grouped as the pipeline's "first" aggregation groups them: the entities and scores `predict` prints, and
        the exported model finds) coloured by its type, the words between plain; every chip's tooltip names its
        words' tags and scores."""
        found = tagged.entities
        kinds = sorted({entity["entity_group"] for entity in found})
        colours = {kind: QColor(CHIP_COLOURS[i % len(CHIP_COLOURS)]) for i, kind in enumerate(kinds)}
        cells, position = [], 0
        for entity in [*found, None]:
            end = entity["start"] if entity is not None else len(tagged.text)
            between = _words_between(tagged.text, position, end)
            cells += [self._plain_cell(tagged, start, stop) for start, stop in between]
            if entity is None:
                break
            start, stop = entity["start"], entity["end"]
            tooltip = "\n".join(
                [f"{entity['entity_group']} (mean score {entity['score']:.1%})", *_word_lines(tagged, start, stop)]
            )
            text = f"{tagged.text[start:stop]} · {entity['entity_group']}"
            cells.append(TokenCell(text, colours[entity["entity_group"]], tooltip))
            position = stop
        self.chips.set_cells(cells)
        self.chips.show()
        found_said = "hover a word for its tag and score" if found else "no entities found"
        self.status.setText(f"{self.status.text()} · {found_said}")
        self._say_what_was_read(tagged.reading.describe())

    @staticmethod
    def _plain_cell(tagged: Tagged, start: int, stop: int) -> TokenCell:
        return TokenCell(tagged.text[start:stop], None, "\n".join(_word_lines(tagged, start, stop)))

    def _show_answer(self, answered: Answered) -> None:
        """The context with the best answer's characters highlighted, and its score; how much of a long question
        was read."""
        self._say_what_was_read(answered.question.describe())
        answers, context = answered.answers, self.text_edit.toPlainText()
        if not answers or not answers[0].get("answer"):
            self.status.setText(self.status.text() + " · no answer found in the context")
            self.context.setPlainText(context)
            self.context.show()
            return
        best = answers[0]
        palette = self.palette()
        tint = blended(palette.color(QPalette.ColorRole.Highlight), 0.45, palette.color(QPalette.ColorRole.Base))
        text_colour = palette.color(QPalette.ColorRole.Text).name()
        marked = (
            f"{html.escape(context[: best['start']])}"
            f"<span style='background:{tint.name()};color:{text_colour}'><b>"
            f"{html.escape(context[best['start'] : best['end']])}</b></span>"
            f"{html.escape(context[best['end'] :])}"
        )
        self.status.setText(f"{self.status.text()} · answer: <b>{html.escape(best['answer'])}</b>, "
                            f"score {best['score']:.1%}")  # fmt: skip
        self.context.setHtml(f"<p style='white-space:pre-wrap'>{marked}</p>")
        self.context.show()
        cursor = self.context.textCursor()  # a long context opens where the answer is, not at its top
        cursor.setPosition(best["start"])
        self.context.setTextCursor(cursor)
        self.context.ensureCursorVisible()

    def changeEvent(self, event) -> None:
        """The answer's highlight is blended over the background: a new scheme draws it again."""
        super().changeEvent(event)
        if (
            event.type() in PALETTE_CHANGES
            and self._kept is not None
            and not isinstance(self._kept.answer, (Labelled, Tagged))
        ):
            self._on_tried(self._kept)


def _words_between(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of the words (runs of characters but white space) of `text[start:end]`."""
    spans, position = [], start
    for word in text[start:end].split():
        begin = text.index(word, position)
        spans.append((begin, begin + len(word)))
        position = begin + len(word)
    return spans


def _word_lines(tagged: Tagged, start: int, stop: int) -> list[str]:
    """ "zyxxy: B-PER 98.1%" for each word the model tagged that begins within `start`–`stop` (its first piece's
    tag; said when its later pieces are tagged otherwise, where an entity can begin or end within it)."""
    return [
        f"{word['word']}: {word['entity']} {word['score']:.1%}"
        + (f" ({PIECES_DIFFER})" if word.get("pieces_differ") else "")
        for word in tagged.words
        if start <= word["start"] < stop
    ]


def _preview(workspace) -> TryItView:
    """The view on the newest fine-tuning run of the runs folder (none: it says how to get one)."""
    from mlm_studio.core.finetune.runs import finetune_runs

    view = TryItView()
    found = finetune_runs(workspace.runs_root).found
    view.set_run(found[0].path if found else None)
    return view


if __name__ == "__main__":  # the view alone: python -m mlm_studio.ui.panels.finetune.try_it
    from mlm_studio.ui.preview import preview

    preview(_preview, loaded=False)
