"""The state shared by all panels: corpus, reading options, tokenizer, run configuration and current run."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from mlm_studio.core.config import RunConfig, preset
from mlm_studio.core.corpus import Corpus, ReadOptions
from mlm_studio.core.tokenizer import MLMTokenizer

DEFAULT_PRESET = "quickstart"


class Workspace(QObject):
    """One current workspace; panels read it and subscribe to its `*_changed` signals."""

    corpus_changed = Signal(object)  # Corpus | None
    tokenizer_changed = Signal(object)  # MLMTokenizer | None
    config_changed = Signal(object)  # RunConfig
    run_changed = Signal(object)  # Path | None: the run being trained or last opened

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._corpus: Corpus | None = None
        self._tokenizer: MLMTokenizer | None = None
        self._config = preset(DEFAULT_PRESET)
        self._run: Path | None = None
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

    @property
    def config(self) -> RunConfig:
        return self._config

    def set_config(self, config: RunConfig) -> None:
        if config != self._config:
            self._config = config
            self.config_changed.emit(config)

    @property
    def run(self) -> Path | None:
        return self._run

    def set_run(self, run: Path | None) -> None:
        self._run = run
        self.run_changed.emit(run)
