"""The one state of the workspace that every panel reads and listens to: corpus, reading options, tokenizer, run
configuration, an imported model that new runs continue pre-training, the runs folder (and when its runs change),
the current run (the one this window trains or last trained: the model the other panels default to) and the run the
Training panel shows. Showing a run is looking at it; it never changes what another panel has chosen."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from mlm_studio.core.config.continuation import from_scratch
from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.data.corpus import Corpus, ReadOptions

if TYPE_CHECKING:
    from mlm_studio.core.data.tokenizer import MLMTokenizer
    from mlm_studio.core.models.hf_folder import ImportedModel


class Workspace(QObject):
    """One current workspace; panels read it and subscribe to its `*_changed` signals."""

    corpus_changed = Signal(object)  # Corpus | None
    tokenizer_changed = Signal(object)  # MLMTokenizer | None
    config_changed = Signal(object)  # RunConfig
    run_changed = Signal(object)  # Path | None: the run this window trains or last trained
    shown_run_changed = Signal(object)  # Path | None: the run whose curves the Training panel shows
    initial_model_changed = Signal(object)  # ImportedModel | None: what new runs start from
    runs_changed = Signal()  # the runs folder is another, or a run in it was added, changed or ended

    def __init__(self, parent: QObject | None = None, runs_root: Path | None = None) -> None:
        super().__init__(parent)
        if runs_root is None:
            from mlm_studio.core.storage.user_folders import default_runs_dir

            runs_root = default_runs_dir()
        self._runs_root = Path(runs_root)
        self._shown: Path | None = None
        self._corpus: Corpus | None = None
        self._tokenizer: MLMTokenizer | None = None
        self._config = preset(DEFAULT_PRESET)
        self._run: Path | None = None
        self._initial: ImportedModel | None = None
        self._scratch = self._config.training  # the training settings before an import, restored after it
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
        """Another tokenizer than the imported model's ends the import: that model cannot read its ids."""
        if self._initial is not None and tokenizer is not self._initial.tokenizer:
            self.set_initial_model(None)
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
    def initial_model(self) -> ImportedModel | None:
        return self._initial

    def set_initial_model(self, imported: ImportedModel | None) -> None:
        """New runs continue pre-training `imported`: its tokenizer and architecture become the workspace's
        (the sequence length shortened if the model reads fewer positions), and its continuation recipe the
        learning rate and warm-up. None returns to fresh models, with the learning rate and warm-up from before
        the import where they are still the recipe's."""
        if imported is None and self._initial is not None:
            self.set_config(from_scratch(self._config, self._scratch))
        elif imported is not None and self._initial is None:
            self._scratch = self._config.training
        self._initial = imported
        if imported is not None:
            config = self._config
            limit = imported.config.max_tokens()
            if config.data.max_seq_len > limit:
                config = replace(config, data=replace(config.data, max_seq_len=limit))
            from mlm_studio.core.training.runs import continuing

            self.set_config(continuing(config, imported)[0])
            self.set_tokenizer(imported.tokenizer)
        self.initial_model_changed.emit(imported)

    @property
    def run(self) -> Path | None:
        return self._run

    def set_run(self, run: Path | None) -> None:
        """The run this window trains (or last trained): the model panels offer first, as "Current run"."""
        if run != self._run:
            self._run = run
            self.run_changed.emit(run)

    @property
    def shown_run(self) -> Path | None:
        return self._shown

    def show_run(self, run: Path | None) -> None:
        """The Training panel now shows `run`'s curves and status; no other panel's choice changes."""
        if run != self._shown:
            self._shown = run
            self.shown_run_changed.emit(run)

    @property
    def runs_root(self) -> Path:
        return self._runs_root

    def set_runs_root(self, root: Path) -> None:
        """Every panel lists, trains and fine-tunes into `root` from now on."""
        root = Path(root)
        if root != self._runs_root:
            self._runs_root = root
            self.runs_changed.emit()

    def runs_updated(self) -> None:
        """A run in the folder was added, changed (a checkpoint) or ended: every list of runs reads it again."""
        self.runs_changed.emit()
