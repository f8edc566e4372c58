"""Masking preview: real blocks of the corpus masked by the trainer's own masker, colour-coded token by
token, with the achieved rates measured over many blocks against the configured ones."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.config.sections import ConfigError, DataConfig, MaskingConfig
from mlm_studio.core.data.dataset import split_blocks, tokenize_corpus
from mlm_studio.core.data.masking import Masker
from mlm_studio.core.data.masking_preview import MaskingPreview, masking_preview
from mlm_studio.core.errors import UserError
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.ui.construction import Construction
from mlm_studio.ui.panels.masking.form import MaskingForm
from mlm_studio.ui.panels.masking.masked_samples import MaskedSamples
from mlm_studio.ui.tasks import TaskRunner, show_progress
from mlm_studio.ui.theme import ToneLabel
from mlm_studio.ui.widgets.measured_rates import MeasuredRates
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.workspace import Workspace

SAMPLES = 4
MEASURED_BLOCKS = 1000
REFRESH_DELAY_MS = 120
EMPTY = "Load a corpus and a tokenizer in the Corpus panel to preview masking."


class MaskingPanel(QWidget):
    """Controls on the left; samples, measured rates and span lengths on the right."""

    preview_updated = Signal()

    def __init__(self, workspace: Workspace, parent: QWidget | None = None, sliced: bool = False) -> None:
        """`sliced`: leave the construction's steps to the window's launch; otherwise build it all."""
        super().__init__(parent)
        self.workspace = workspace
        self.tokenized = None
        self.blocks = None
        self.preview: MaskingPreview | None = None
        self.preview_config: MaskingConfig | None = None  # the settings `preview` was measured with
        self.settings_version = 0  # counts the form's changes: a preview of an older version is stale
        self.data_runner = TaskRunner(self)
        self.data_runner.progress.connect(lambda *report: show_progress(self.progress_bar, *report))
        self.data_runner.succeeded.connect(self._on_data)
        self.data_runner.failed.connect(lambda message: self.message_bar.show_message(message, "error"))
        self.data_runner.finished.connect(self._on_data_finished)
        self.preview_runner = TaskRunner(self)
        self.preview_runner.succeeded.connect(self._on_preview)
        self.preview_runner.failed.connect(lambda message: self.message_bar.show_message(message, "error"))
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(REFRESH_DELAY_MS)
        self._refresh_timer.timeout.connect(self.refresh)
        self.construction = Construction(self._build(), sliced)

    def showEvent(self, event: QShowEvent) -> None:
        self.construction.finish()  # shown before the window has built it all
        super().showEvent(event)

    # --- layout -------------------------------------------------------------------------------------
    def _build(self) -> Iterator[None]:
        """The form, the samples, the measured rates, one per step; the workspace's news reaches the panel once
        it is whole, and it then shows the workspace as it is."""
        self.form = MaskingForm()
        self.form.edited.connect(self._on_edit)
        self.form.data_edited.connect(self._on_data_settings)
        self.form.strategy_changed.connect(self._on_strategy)
        self.message_bar = MessageBar()
        self.progress_bar = QProgressBar()
        self.progress_bar.hide()
        self.stale_label = ToneLabel("warning")
        self.stale_label.hide()
        self.empty_label = QLabel(EMPTY)
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        yield
        self.samples = MaskedSamples(SAMPLES)
        yield
        self.rates = MeasuredRates()
        right = QSplitter(Qt.Orientation.Vertical)
        right.setObjectName("masking-samples-rates")
        right.addWidget(self.samples)
        right.addWidget(self.rates)
        right.setSizes([420, 260])

        results = QVBoxLayout()
        results.addWidget(self.message_bar)
        results.addWidget(self.progress_bar)
        results.addWidget(self.stale_label)
        results.addWidget(self.empty_label)
        results.addWidget(right, 1)
        self.results = right
        layout = QHBoxLayout(self)
        layout.addWidget(self.form)
        layout.addLayout(results, 1)
        self.workspace.corpus_changed.connect(self.prepare_data)
        self.workspace.tokenizer_changed.connect(self.prepare_data)
        self.workspace.config_changed.connect(self.show_config)
        self.workspace.run_changed.connect(lambda _: self.on_checkpoint())
        self.show_config(self.workspace.config)
        self.form.on_strategy()
        self.on_checkpoint()
        self.prepare_data()

    # --- configuration ------------------------------------------------------------------------------
    def data_config(self) -> DataConfig:
        length, packing = self.form.length_spin.value(), self.form.packing_check.isChecked()
        return replace(self.workspace.config.data, max_seq_len=length, packing=packing)

    def show_config(self, config) -> None:
        """Reflect the workspace configuration's masking and data settings in the controls."""
        m, d = config.masking, config.data
        if m == self._masking_or_none() and d == self.data_config():
            return
        self.form.set_config(config)
        self.form.on_strategy()
        self._on_data_settings()

    def _masking_or_none(self) -> MaskingConfig | None:
        try:
            return self.form.masking_config()
        except UserError:
            return None

    def _push_config(self) -> None:
        """Share valid masking and data settings with the rest of the workbench."""
        masking = self._masking_or_none()
        if masking is None:
            return
        config = self.workspace.config
        try:
            updated = replace(config, masking=masking, data=self.data_config())
        except ConfigError as exc:
            self._show_invalid(exc)
            return
        self.workspace.set_config(updated)

    def _on_strategy(self, span: bool) -> None:
        self.rates.show_spans(span)
        self._on_edit()

    def _on_edit(self) -> None:
        self._settings_changed()
        try:
            self.form.masking_config()
        except ConfigError as exc:
            self._refresh_timer.stop()
            self._show_invalid(exc)
            return
        self._show_invalid(None)
        self._push_config()
        self._refresh_timer.start()

    def _show_invalid(self, error: ConfigError | None) -> None:
        """The form says what is invalid (None: nothing); the samples and rates leave while they do not match it."""
        self.form.show_invalid(error)
        if error is not None and self.preview is not None:  # what is shown no longer matches the form
            self._show_empty(True, "Masked samples and rates return once the settings on the left are valid.")

    def _settings_changed(self) -> None:
        """The samples and rates shown no longer match the form until a preview of the new settings arrives."""
        self.settings_version += 1
        self.stale_label.setText("These samples and rates are from the previous settings; masking again…")
        self.stale_label.setVisible(self.results.isVisibleTo(self))

    # --- data and preview ---------------------------------------------------------------------------
    def prepare_data(self) -> None:
        """Tokenize the workspace corpus (cached) and cut it into blocks, in the background."""
        corpus, tokenizer = self.workspace.corpus, self.workspace.tokenizer
        self.tokenized = self.blocks = None
        self._show_empty(True)
        if corpus is None or tokenizer is None:
            self.data_runner.cancel()
            return
        config = self.data_config()

        def work(progress: Progress):
            tokenized = tokenize_corpus(corpus, tokenizer, progress)
            return tokenized, split_blocks(tokenized, config, tokenizer)[0]

        self.progress_bar.setRange(0, 0)
        self.progress_bar.show()
        self.data_runner.start(work)

    def _on_data_settings(self) -> None:
        self._settings_changed()
        self._push_config()
        if self.tokenized is not None and self.workspace.tokenizer is not None:
            self.blocks = split_blocks(self.tokenized, self.data_config(), self.workspace.tokenizer)[0]
            self.refresh()

    def _on_data(self, result) -> None:
        self.tokenized, self.blocks = result
        self.refresh()

    def _on_data_finished(self) -> None:
        self.progress_bar.hide()

    def refresh(self) -> None:
        """Mask new samples and measure the rates with the current settings."""
        tokenizer = self.workspace.tokenizer
        if self.blocks is None or tokenizer is None or len(self.blocks) == 0:
            return
        try:
            config = self.form.masking_config()
        except UserError:
            return
        masker = Masker.for_tokenizer(config, tokenizer)
        blocks, seed, version = self.blocks, self.form.seed_spin.value(), self.settings_version
        generator = self.form.generator_check
        run = str(self.workspace.run) if generator.isEnabled() and generator.isChecked() else ""

        def work(progress: Progress):
            generator = FillMask.from_path(run).model if run else None
            preview = masking_preview(blocks, tokenizer, masker, seed, SAMPLES, MEASURED_BLOCKS, progress, generator)
            return version, config, preview

        self.preview_runner.start(work)

    def on_checkpoint(self, _path: str = "") -> None:
        """Offer the generator's replacements once the current run is an ELECTRA run with a checkpoint."""
        run = self.workspace.run
        electra = run is not None and _has_generator(run)
        self.form.generator_check.setEnabled(electra)
        self.form.update_legend()
        if electra and self.form.generator_check.isChecked():
            self._refresh_timer.start()

    def _on_preview(self, result: tuple[int, MaskingConfig, MaskingPreview]) -> None:
        version, config, preview = result
        self.preview, self.preview_config = preview, config
        self.stale_label.setVisible(version != self.settings_version)
        self._show_empty(False)
        self.samples.show_samples(preview.samples)
        self.rates.show_preview(config, preview)
        self.preview_updated.emit()

    def _show_empty(self, empty: bool, why: str = EMPTY) -> None:
        self.empty_label.setText(why)
        self.empty_label.setVisible(empty)
        self.results.setVisible(not empty)
        self.stale_label.setVisible(self.stale_label.isVisibleTo(self) and not empty)


def _has_generator(run) -> bool:
    folder = RunDir(run)
    try:
        return folder.latest_checkpoint() is not None and folder.config.training.objective == "electra"
    except (OSError, UserError):
        return False
