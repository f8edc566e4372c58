"""The one state of the workspace that every panel reads and listens to: corpus, reading options, tokenizer, run
configuration, an imported model that new runs continue pre-training, the runs folder and what it lists (read once
for every panel, off the GUI thread: at first, when another folder is chosen and when a run changes), the current
run (the one this window trains or last trained: the model the other panels default to) and the run the Training
panel shows. Showing a run is looking at it; it never changes what another panel has chosen."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from mlm_studio.core.config.continuation import from_scratch
from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.data.corpus import Corpus, ReadOptions
from mlm_studio.ui.tasks import TaskRunner

if TYPE_CHECKING:
    from mlm_studio.core.data.tokenizer import MLMTokenizer
    from mlm_studio.core.models.hf_folder import ImportedModel
    from mlm_studio.ui.runs_folder import RunsFolder, RunsSnapshot


class Workspace(QObject):
    """One current workspace; panels read it and subscribe to its `*_changed` signals."""

    corpus_changed = Signal(object)  # Corpus | None
    tokenizer_changed = Signal(object)  # MLMTokenizer | None
    config_changed = Signal(object)  # RunConfig
    run_changed = Signal(object)  # Path | None: the run this window trains or last trained
    shown_run_changed = Signal(object)  # Path | None: the run whose curves the Training panel shows
    initial_model_changed = Signal(object)  # ImportedModel | None: what new runs start from
    runs_changed = Signal()  # the runs folder is another, or what it lists changed (`runs`)

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
        self._folder: RunsFolder | None = None  # made when first read: it imports the engine
        self._runs: RunsSnapshot | None = None  # None: no listing of this folder has arrived since it was chosen
        self._reader = TaskRunner(self)
        self._reader.succeeded.connect(self._on_runs_read)
        self._reader.finished.connect(self._read_again)
        self._again = False
        self._closing = False

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
            self._runs = None
            self._again = self._reader.running  # a reading of the folder before: this one's follows it
            self.runs_changed.emit()

    @property
    def runs(self) -> RunsSnapshot:
        """What the runs folder holds, as last read. The first asking after the folder is chosen starts its reading
        off the GUI thread and gets an empty listing that is not `read`; `runs_changed` says when the listing
        arrives."""
        if self._runs is None:
            from mlm_studio.ui.runs_folder import RunsSnapshot

            if not self._reader.running:  # one running reads this folder, or one more follows it
                self.runs_updated()
            return RunsSnapshot.being_read(self._runs_root)
        return self._runs

    def read_runs(self) -> None:
        """Read the runs folder again now, on this thread (only the runs whose files changed): a run this window
        starts is listed before its first record arrives. Before the folder's first listing has arrived, that
        reading (every run) goes on off the GUI thread instead, and one more follows it."""
        if self._runs is None:
            self.runs_updated()
            return
        self._on_runs_read(self._runs_folder().read(self._runs_root))

    def runs_updated(self) -> None:
        """A run in the folder was added, changed (a checkpoint) or ended: the folder is read again off the GUI
        thread (only the runs whose files changed), then `runs_changed` says so if what it lists changed. Asked
        while a reading runs, one more follows it."""
        if self._closing:
            return
        if self._reader.running:
            self._again = True
            return
        folder, root = self._runs_folder(), self._runs_root
        self._reader.start(lambda progress: folder.read(root))

    def close(self) -> None:
        """The window closes: no reading of the runs folder starts from now on (the one running ends on its own)."""
        self._closing = True

    @property
    def reading_runs(self) -> bool:
        """Whether the runs folder is being read again (what `runs` holds may change when it ends)."""
        return self._reader.running or self._again

    def _runs_folder(self) -> RunsFolder:
        if self._folder is None:
            from mlm_studio.ui.runs_folder import RunsFolder

            self._folder = RunsFolder()
        return self._folder

    def _on_runs_read(self, snapshot: RunsSnapshot) -> None:
        if snapshot.root == self._runs_root and snapshot != self._runs:
            self._runs = snapshot
            self.runs_changed.emit()

    def _read_again(self) -> None:
        if self._again:
            self._again = False
            self.runs_updated()
