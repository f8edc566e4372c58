"""The tokenizer part of the Corpus panel: train WordPiece on the corpus, or load / save one; inspect it."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from PySide6.QtCore import QEvent, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.config.sections import MAX_VOCAB, MIN_VOCAB, TokenizerConfig
from mlm_studio.core.data.corpus import Corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer, TokenizerStats, train_tokenizer
from mlm_studio.core.errors import UserError
from mlm_studio.core.progress import Progress
from mlm_studio.ui.tasks import TaskRunner, show_progress
from mlm_studio.ui.theme import PALETTE_CHANGES, blended
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView
from mlm_studio.ui.workspace import Workspace

STATS_DOCUMENTS = 5000
SAMPLE_TEXT = "Masked language models learn unexpectedly much from predicting hidden words."
# a word's pieces in one of two tints, an unknown piece in red: laid over the scheme's background, light or dark
PIECE_TINTS = ((QColor("#1f77b4"), 0.3), (QColor("#ff7f0e"), 0.3))
UNKNOWN_TINT = (QColor("#d62728"), 0.55)


@dataclass(frozen=True)
class _Outcome:
    tokenizer: MLMTokenizer
    stats: TokenizerStats | None
    origin: str
    trained_on: int | None = None  # documents, when trained here


def _stats(tokenizer: MLMTokenizer, corpus: Corpus | None) -> TokenizerStats | None:
    return tokenizer.stats(islice(corpus.iter_documents(), STATS_DOCUMENTS)) if corpus else None


class TokenizerSection(QGroupBox):
    """Trains a tokenizer automatically the first time a corpus appears, so the workbench is ready to use."""

    busy_changed = Signal(bool)

    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__("Tokenizer", parent)
        self.workspace = workspace
        self.origin = ""
        self.trained_on: int | None = None  # documents the tokenizer was trained on here
        self._tokenizer_at_start: MLMTokenizer | None = None
        self.runner = TaskRunner(self)
        self.runner.progress.connect(lambda *report: show_progress(self.progress_bar, *report))
        self.runner.succeeded.connect(self._on_ready)
        self.runner.failed.connect(lambda message: self.message_bar.show_message(message, "error"))
        self.runner.cancelled.connect(lambda: self.message_bar.show_message("Cancelled; nothing changed.", "info"))
        self.runner.finished.connect(self._on_finished)
        self._build()
        workspace.corpus_changed.connect(self._on_corpus)
        workspace.initial_model_changed.connect(self._on_initial_model)
        self._update_buttons()

    def _build(self) -> None:
        self.vocab_spin = QSpinBox()
        self.vocab_spin.setRange(MIN_VOCAB, MAX_VOCAB)
        self.vocab_spin.setSingleStep(1000)
        self.vocab_spin.setValue(TokenizerConfig.vocab_size)
        self.vocab_spin.setGroupSeparatorShown(True)
        self.vocab_spin.setToolTip("Word pieces in the vocabulary, special tokens included (BERT uses 30,522)")
        self.min_freq_spin = QSpinBox()
        self.min_freq_spin.setRange(1, 10_000)
        self.min_freq_spin.setValue(TokenizerConfig.min_frequency)
        self.min_freq_spin.setToolTip("A pair of pieces must occur this often to be merged into one")
        self.lowercase_check = QCheckBox("lowercase and strip accents")
        self.lowercase_check.setChecked(TokenizerConfig.lowercase)
        self.train_button = QPushButton("Train")
        self.train_button.setToolTip("Train a WordPiece vocabulary on the current corpus")
        self.load_button = QPushButton("Load…")
        self.load_button.setToolTip("Load a tokenizer.json or a BERT vocab.txt")
        self.save_button = QPushButton("Save…")
        self.train_button.clicked.connect(self.train)
        self.load_button.clicked.connect(self.load_dialog)
        self.save_button.clicked.connect(self.save_dialog)
        settings = QHBoxLayout()
        settings.addWidget(QLabel("Vocabulary"))
        settings.addWidget(self.vocab_spin)
        settings.addWidget(QLabel("min. frequency"))
        settings.addWidget(self.min_freq_spin)
        settings.addStretch(1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.lowercase_check)
        buttons.addStretch(1)
        for button in (self.train_button, self.load_button, self.save_button):
            buttons.addWidget(button)

        self.progress_bar = QProgressBar()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.runner.cancel)
        progress = QHBoxLayout()
        progress.setContentsMargins(0, 0, 0, 0)
        progress.addWidget(self.progress_bar, 1)
        progress.addWidget(self.cancel_button)
        self.progress_row = QWidget()
        self.progress_row.setLayout(progress)
        self.progress_row.hide()
        self.message_bar = MessageBar()

        self.summary = QLabel("No tokenizer yet")
        self.summary.setWordWrap(True)
        self.sample_edit = QLineEdit(SAMPLE_TEXT)
        self.sample_edit.setCursorPosition(0)  # a field narrower than the line shows its beginning, not its end
        self.sample_edit.setToolTip("Type any text to see it as word pieces")
        self.sample_edit.textChanged.connect(self._update_pieces)
        self.pieces = TokenView()
        info = QFormLayout()
        info.addRow("Try a line", self.sample_edit)
        info.addRow("Pieces", self.pieces)

        layout = QVBoxLayout(self)
        layout.addLayout(settings)
        layout.addLayout(buttons)
        layout.addWidget(self.progress_row)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.summary)
        layout.addLayout(info)
        layout.addStretch(1)

    # --- actions ------------------------------------------------------------------------------------
    def config(self) -> TokenizerConfig:
        return TokenizerConfig(self.vocab_spin.value(), self.min_freq_spin.value(), self.lowercase_check.isChecked())

    def train(self) -> None:
        corpus = self.workspace.corpus
        if corpus is None:
            self.message_bar.show_message("Load a corpus first: the tokenizer is trained on it.", "warning")
            return
        config = self.config()
        origin = f"trained on {corpus.documents:,} documents"

        def work(progress: Progress) -> _Outcome:
            tokenizer = train_tokenizer(corpus.iter_documents(), config, corpus.documents, progress)
            return _Outcome(tokenizer, _stats(tokenizer, corpus), origin, corpus.documents)

        self._start(work)

    def load_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Load a tokenizer", "", "Tokenizers (tokenizer.json vocab.txt *.json *.txt);;All files (*)"
        )
        if path:
            self.load_path(path)

    def load_path(self, path: str | Path) -> None:
        corpus = self.workspace.corpus

        def work(progress: Progress) -> _Outcome:
            tokenizer = MLMTokenizer.load(path)
            return _Outcome(tokenizer, _stats(tokenizer, corpus), f"loaded from {Path(path).name}")

        self._start(work)

    def save_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Save the tokenizer", "tokenizer.json", "tokenizer.json (*.json);;BERT vocab.txt (*.txt)"
        )
        if path:
            self.save_path(path)

    def save_path(self, path: str | Path) -> None:
        tokenizer = self.workspace.tokenizer
        if tokenizer is None:
            return
        try:
            saved = tokenizer.save(path)
        except (OSError, UserError) as exc:
            self.message_bar.show_message(f"Could not save the tokenizer: {exc}", "error")
        else:
            self.message_bar.show_message(f"Saved to {saved}.", "info")

    def _start(self, work) -> None:
        self._tokenizer_at_start = self.workspace.tokenizer
        self.message_bar.clear()
        self.progress_bar.setRange(0, 0)
        self.progress_row.show()
        self.runner.start(work)
        self._update_buttons()
        self.busy_changed.emit(True)

    # --- outcomes -----------------------------------------------------------------------------------
    def _on_corpus(self, corpus: Corpus | None) -> None:
        tokenizer = self.workspace.tokenizer
        if corpus is None or self.runner.running:
            self._update_buttons()
        elif tokenizer is None:
            self.train()
        else:
            origin, trained_on = self.origin, self.trained_on
            self._start(lambda progress: _Outcome(tokenizer, _stats(tokenizer, corpus), origin, trained_on))

    def _on_initial_model(self, imported) -> None:
        """An imported model brings its tokenizer: show it, measured on the corpus."""
        if imported is None:
            return
        corpus, tokenizer = self.workspace.corpus, imported.tokenizer
        origin = f"imported with {imported.folder.name}"
        self._start(lambda progress: _Outcome(tokenizer, _stats(tokenizer, corpus), origin))

    def _on_ready(self, outcome: _Outcome) -> None:
        chosen_meanwhile = self.workspace.tokenizer is not self._tokenizer_at_start
        if chosen_meanwhile and outcome.tokenizer is not self.workspace.tokenizer:
            return  # another tokenizer was set (an import, say) while this one was made: the later choice stands
        self.origin, self.trained_on = outcome.origin, outcome.trained_on
        text = f"<b>WordPiece</b>, {outcome.tokenizer.vocab_size:,} pieces, {outcome.origin}."
        if outcome.stats is not None:
            text += (
                f"<br>On the corpus: <b>{outcome.stats.unknown_rate:.2%}</b> [UNK] · "
                f"<b>{outcome.stats.pieces_per_word:.2f}</b> pieces per word"
            )
        corpus = self.workspace.corpus
        if outcome.trained_on is not None and corpus is not None and corpus.documents != outcome.trained_on:
            text += (
                f"<br>The corpus has changed since: it now has {corpus.documents:,} documents. Press <b>Train</b> "
                "to fit the vocabulary to it."
            )
        self.summary.setText(text)
        if outcome.tokenizer is not self.workspace.tokenizer:
            self.workspace.set_tokenizer(outcome.tokenizer)
        self._update_pieces()

    def _on_finished(self) -> None:
        self.progress_row.hide()
        self._update_buttons()
        self.busy_changed.emit(False)

    def _update_pieces(self) -> None:
        tokenizer = self.workspace.tokenizer
        if tokenizer is None:
            self.pieces.set_cells([])
            return
        text = self.sample_edit.text()
        encoding = tokenizer.backend.encode(text, add_special_tokens=False)
        cells, word, unk = [], -1, tokenizer.specials.unk
        base = self.palette().color(QPalette.ColorRole.Base)
        for piece, (start, end) in zip(encoding.tokens, encoding.offsets):
            if not piece.startswith("##"):
                word += 1
            if piece == unk:  # which characters it stands for
                written = text[start:end]
                tooltip = f"'{written}' is not in the vocabulary: the model sees {unk}"
                cells.append(TokenCell(f"{unk} {written}", blended(*UNKNOWN_TINT, base), tooltip))
                continue
            tooltip = "continues the word" if word >= 0 and piece.startswith("##") else "starts a word"
            cells.append(TokenCell(piece, blended(*PIECE_TINTS[word % 2], base), tooltip))
        self.pieces.set_cells(cells)

    def changeEvent(self, event: QEvent) -> None:
        """The chips are tinted over the background: a new colour scheme tints them again."""
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES and hasattr(self, "pieces"):
            self._update_pieces()

    def _update_buttons(self) -> None:
        busy = self.runner.running
        self.train_button.setEnabled(not busy and self.workspace.corpus is not None)
        self.load_button.setEnabled(not busy)
        self.save_button.setEnabled(not busy and self.workspace.tokenizer is not None)


if __name__ == "__main__":  # the section alone: python -m mlm_studio.ui.panels.corpus.tokenizer_section
    from mlm_studio.ui.preview import preview

    preview(TokenizerSection, size=(520, 640))
