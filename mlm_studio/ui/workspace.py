"""The state shared by all panels: the current corpus, how it is read, and the tokenizer."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from mlm_studio.core.corpus import Corpus, ReadOptions
from mlm_studio.core.tokenizer import MLMTokenizer


class Workspace(QObject):
    """One current workspace; panels read it and subscribe to its `*_changed` signals."""

    corpus_changed = Signal(object)  # Corpus | None
    tokenizer_changed = Signal(object)  # MLMTokenizer | None

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._corpus: Corpus | None = None
        self._tokenizer: MLMTokenizer | None = None
        self.read_options = ReadOptions()

    @property
    def corpus(self) -> Corpus | None:
        return self._corpus

    def set_corpus(self, corpus: Corpus | None) -> None:
        self._corpus = corpus
        if corpus is not None:
            self.read_options = corpus.options
        self.corpus_changed.emit(corpus)

    @property
    def tokenizer(self) -> MLMTokenizer | None:
        return self._tokenizer

    def set_tokenizer(self, tokenizer: MLMTokenizer | None) -> None:
        self._tokenizer = tokenizer
        self.tokenizer_changed.emit(tokenizer)
