"""Masking preview: real blocks of the corpus masked by the trainer's own masker, colour-coded token by
token, with the achieved rates measured over many blocks against the configured ones."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.config.sections import ConfigError, DataConfig, MaskingConfig
from mlm_studio.core.data.dataset import split_blocks, tokenize_corpus
from mlm_studio.core.data.masking import Masker, MaskKind
from mlm_studio.core.data.masking_preview import MaskingPreview, PreviewToken, masking_preview
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.run_folder import RunDir
from mlm_studio.ui.panels.config_fields import form_fields
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.theme import PALETTE_CHANGES, ToneLabel, tone
from mlm_studio.ui.widgets.measured_rates import MeasuredRates
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView
from mlm_studio.ui.workspace import Workspace

KIND_COLOURS = {
    MaskKind.MASK: QColor("#d9534f"),
    MaskKind.RANDOM: QColor("#f0a030"),
    MaskKind.KEPT: QColor("#4caf50"),
}
REPLACED = QColor("#9467bd")
INVALID_TINT = 0.22  # how much of the error tone an invalid field's background takes
SAMPLES = 4
MEASURED_BLOCKS = 1000
REFRESH_DELAY_MS = 120
EMPTY = "Load a corpus and a tokenizer in the Corpus panel to preview masking."
STRATEGY_LABELS = {"token": "Token", "whole_word": "Whole word", "span": "Span (SpanBERT)"}
# The form's words for the fields it sets, as its rows say them (messages use them too).
LABELS = {
    "masking.strategy": "Strategy",
    "masking.rate": "Rate",
    "masking.mask_fraction": "[MASK]",
    "masking.random_fraction": "Random",
    "masking.keep_fraction": "Keep",
    "masking.span_p": "Span p",
    "masking.max_span": "Longest span",
    "data.max_seq_len": "Block length",
    "data.packing": "Pack documents",
}


def field_label(name: str) -> str:
    """How the form says a field: its own label, or the Configuration panel's for a field set there."""
    if name in LABELS:
        return LABELS[name]
    section, _, field = name.partition(".")
    fields = form_fields()
    return f"{fields[(section, field)][1]} (Configuration)" if (section, field) in fields else name


def worded(error: ConfigError) -> str:
    """An invalid setting said with the form's words, as a sentence."""
    message = error.naming([field_label(name) for name in error.fields])
    return f"{message[0].upper()}{message[1:]}."


def token_cell(token: PreviewToken) -> TokenCell:
    """How one preview token is drawn: colour by what masking did (or what an ELECTRA generator wrote there),
    with a tooltip that says it."""
    if token.generated is not None and token.generated != token.original:
        text = f"{token.original} → {token.generated}"
        return TokenCell(text, REPLACED, f"the generator wrote '{token.generated}': the discriminator must flag it")
    if token.generated is not None:
        tip = f"the generator wrote '{token.original}' back: it counts as original"
        return TokenCell(token.original, KIND_COLOURS.get(token.kind), tip)
    if token.special:
        return TokenCell(token.original, None, f"{token.original}: a special token, never masked", muted=True)
    colour = KIND_COLOURS.get(token.kind)
    if token.kind == MaskKind.MASK:
        return TokenCell(token.original, colour, f"'{token.original}' → {token.shown}; the model predicts it")
    if token.kind == MaskKind.RANDOM:
        text = f"{token.original} → {token.shown}"
        return TokenCell(text, colour, f"'{token.original}' replaced by the random '{token.shown}'")
    if token.kind == MaskKind.KEPT:
        return TokenCell(token.original, colour, f"'{token.original}' kept, but the model predicts it")
    return TokenCell(token.original, None, "not selected")


class MaskingPanel(QWidget):
    """Controls on the left; samples, measured rates and span lengths on the right."""

    preview_updated = Signal()

    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        self.tokenized = None
        self.blocks = None
        self.preview: MaskingPreview | None = None
        self.preview_config: MaskingConfig | None = None  # the settings `preview` was measured with
        self.settings_version = 0  # counts the form's changes: a preview of an older version is stale
        self.invalid: set[str] = set()  # the fields at fault (as `section.field`)
        self.data_runner = TaskRunner(self)
        self.data_runner.progress.connect(self._on_progress)
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
        self._build()
        workspace.corpus_changed.connect(self.prepare_data)
        workspace.tokenizer_changed.connect(self.prepare_data)
        workspace.config_changed.connect(self.show_config)
        workspace.run_changed.connect(lambda _: self.on_checkpoint())
        self.show_config(workspace.config)
        self._on_strategy()
        self.on_checkpoint()
        self.prepare_data()

    # --- layout -------------------------------------------------------------------------------------
    def _build(self) -> None:
        controls = self._build_controls()
        self.message_bar = MessageBar()
        self.progress_bar = QProgressBar()
        self.progress_bar.hide()
        self.stale_label = ToneLabel("warning")
        self.stale_label.hide()
        self.empty_label = QLabel(EMPTY)
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.sample_views = [TokenView() for _ in range(SAMPLES)]
        samples = QWidget()
        samples_layout = QVBoxLayout(samples)
        for i, view in enumerate(self.sample_views):
            if i:
                line = QFrame()
                line.setFrameShape(QFrame.Shape.HLine)
                line.setFrameShadow(QFrame.Shadow.Sunken)
                samples_layout.addWidget(line)
            samples_layout.addWidget(view)
        samples_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(samples)

        self.rates = MeasuredRates()
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(scroll)
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
        layout.addWidget(controls)
        layout.addLayout(results, 1)

    def _build_controls(self) -> QWidget:
        """The masking and sample settings, and the legend of the token colours."""
        self.strategy_combo = QComboBox()
        for value, label in STRATEGY_LABELS.items():
            self.strategy_combo.addItem(label, value)
        self.strategy_combo.setToolTip(
            "Token: each piece on its own. Whole word: all pieces of a word together. "
            "Span: runs of whole words with geometric lengths (SpanBERT)"
        )
        defaults = MaskingConfig()
        self.rate_spin = _fraction_spin(defaults.rate, 0.01, 0.99, "Share of tokens to predict (BERT: 0.15)")
        self.mask_spin = _fraction_spin(defaults.mask_fraction, 0, 1, "Of those: replaced by [MASK] (BERT: 0.8)")
        self.random_spin = _fraction_spin(defaults.random_fraction, 0, 1, "Of those: replaced by a random token (0.1)")
        self.keep_spin = _fraction_spin(defaults.keep_fraction, 0, 1, "Of those: left unchanged (0.1)")
        self.span_p_spin = _fraction_spin(defaults.span_p, 0.01, 1, "Geometric law of span lengths (SpanBERT: 0.2)")
        self.max_span_spin = QSpinBox()
        self.max_span_spin.setRange(1, 64)
        self.max_span_spin.setValue(defaults.max_span)
        self.max_span_spin.setToolTip("Longest span in words (SpanBERT: 10)")
        self.length_spin = QSpinBox()
        self.length_spin.setRange(16, 1024)
        self.length_spin.setSingleStep(16)
        self.length_spin.setValue(DataConfig.max_seq_len)
        self.length_spin.setToolTip("Tokens per block, [CLS] and [SEP] included")
        self.packing_check = QCheckBox(LABELS["data.packing"])
        self.packing_check.setChecked(DataConfig.packing)
        self.packing_check.setToolTip("Fill blocks with consecutive documents; otherwise one document per padded block")
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, 2**31 - 1)
        self.reroll_button = QPushButton("Re-roll")
        self.reroll_button.setToolTip("Draw new samples and a new masking (next seed)")
        self.reroll_button.clicked.connect(lambda: self.seed_spin.setValue(self.seed_spin.value() + 1))
        self.generator_check = QCheckBox("the generator's replacements")
        self.generator_check.setToolTip(
            "ELECTRA: what the current run's generator (its latest checkpoint) writes at the selected positions, "
            "which is what the discriminator sees; available once an ELECTRA run has a checkpoint"
        )
        self.generator_check.toggled.connect(self._on_edit)
        self.validation_label = ToneLabel("error")

        self.editors = {
            "masking.strategy": self.strategy_combo,
            "masking.rate": self.rate_spin,
            "masking.mask_fraction": self.mask_spin,
            "masking.random_fraction": self.random_spin,
            "masking.keep_fraction": self.keep_spin,
            "masking.span_p": self.span_p_spin,
            "masking.max_span": self.max_span_spin,
            "data.max_seq_len": self.length_spin,
        }
        masking_box = QGroupBox("Masking")
        form = QFormLayout(masking_box)
        for name, editor in self.editors.items():
            if name.startswith("masking."):
                form.addRow(LABELS[name], editor)
        form.addRow(self.validation_label)
        data_box = QGroupBox("Samples")
        data_form = QFormLayout(data_box)
        data_form.addRow(LABELS["data.max_seq_len"], self.length_spin)
        data_form.addRow(self.packing_check)
        seed_row = QHBoxLayout()
        seed_row.addWidget(self.seed_spin, 1)
        seed_row.addWidget(self.reroll_button)
        data_form.addRow("Seed", seed_row)
        data_form.addRow(self.generator_check)
        legend = TokenView()
        legend.set_cells(
            [
                TokenCell("[MASK]", KIND_COLOURS[MaskKind.MASK], "replaced by [MASK]"),
                TokenCell("random → new", KIND_COLOURS[MaskKind.RANDOM], "replaced by a random token"),
                TokenCell("kept", KIND_COLOURS[MaskKind.KEPT], "unchanged, but predicted"),
                TokenCell("a → b", REPLACED, "ELECTRA: replaced by the generator"),
                TokenCell("untouched", None, "not selected"),
                TokenCell("[CLS]", None, "special token, never masked", muted=True),
            ]
        )
        legend_box = QGroupBox("Legend")
        QVBoxLayout(legend_box).addWidget(legend)
        controls = QWidget()
        controls_layout = QVBoxLayout(controls)
        controls_layout.setContentsMargins(0, 0, 0, 0)
        controls_layout.addWidget(masking_box)
        controls_layout.addWidget(data_box)
        controls_layout.addWidget(legend_box)
        controls_layout.addStretch(1)
        controls.setFixedWidth(300)

        for spin in (self.rate_spin, self.mask_spin, self.random_spin, self.keep_spin, self.span_p_spin):
            spin.valueChanged.connect(self._on_edit)
        self.max_span_spin.valueChanged.connect(self._on_edit)
        self.seed_spin.valueChanged.connect(self._on_edit)
        self.strategy_combo.currentIndexChanged.connect(self._on_strategy)
        self.length_spin.valueChanged.connect(self._on_data_settings)
        self.packing_check.toggled.connect(self._on_data_settings)
        return controls

    # --- configuration ------------------------------------------------------------------------------
    def masking_config(self) -> MaskingConfig:
        """The configuration in the controls; raises ValueError with the reason when invalid."""
        return MaskingConfig(
            rate=self.rate_spin.value(),
            mask_fraction=self.mask_spin.value(),
            random_fraction=self.random_spin.value(),
            keep_fraction=self.keep_spin.value(),
            strategy=self.strategy_combo.currentData(),
            span_p=self.span_p_spin.value(),
            max_span=self.max_span_spin.value(),
        )

    def data_config(self) -> DataConfig:
        return replace(
            self.workspace.config.data, max_seq_len=self.length_spin.value(), packing=self.packing_check.isChecked()
        )

    def show_config(self, config) -> None:
        """Reflect the workspace configuration's masking and data settings in the controls."""
        m, d = config.masking, config.data
        if m == self._masking_or_none() and d == self.data_config():
            return
        controls = (
            self.strategy_combo,
            self.rate_spin,
            self.mask_spin,
            self.random_spin,
            self.keep_spin,
            self.span_p_spin,
            self.max_span_spin,
            self.length_spin,
            self.packing_check,
        )
        for control in controls:
            control.blockSignals(True)
        self.strategy_combo.setCurrentIndex(self.strategy_combo.findData(m.strategy))
        for spin, value in (
            (self.rate_spin, m.rate),
            (self.mask_spin, m.mask_fraction),
            (self.random_spin, m.random_fraction),
            (self.keep_spin, m.keep_fraction),
            (self.span_p_spin, m.span_p),
            (self.max_span_spin, m.max_span),
            (self.length_spin, d.max_seq_len),
        ):
            spin.setValue(value)
        self.packing_check.setChecked(d.packing)
        for control in controls:
            control.blockSignals(False)
        self._on_strategy()
        self._on_data_settings()

    def _masking_or_none(self) -> MaskingConfig | None:
        try:
            return self.masking_config()
        except ValueError:
            return None

    def _push_config(self) -> None:
        """Share valid masking and data settings with the rest of the workbench."""
        masking = self._masking_or_none()
        if masking is None:
            return
        config = self.workspace.config
        try:
            updated = replace(
                config,
                masking=masking,
                data=replace(config.data, max_seq_len=self.length_spin.value(), packing=self.packing_check.isChecked()),
            )
        except ConfigError as exc:
            self._show_invalid(exc)
            return
        self.workspace.set_config(updated)

    def _on_strategy(self) -> None:
        span = self.strategy_combo.currentData() == "span"
        self.span_p_spin.setEnabled(span)
        self.max_span_spin.setEnabled(span)
        self.rates.span_box.setVisible(span)
        self._on_edit()

    def _on_edit(self) -> None:
        self._settings_changed()
        try:
            self.masking_config()
        except ConfigError as exc:
            self._refresh_timer.stop()
            self._show_invalid(exc)
            return
        self._show_invalid(None)
        self._push_config()
        self._refresh_timer.start()

    def _show_invalid(self, error: ConfigError | None) -> None:
        """Say why the settings are invalid and tint the fields at fault (no style sheet: it would replace
        the spin boxes' native arrows); None clears both."""
        self.validation_label.setText(worded(error) if error else "")
        self.invalid = {name for name in (error.fields if error else ()) if name in self.editors}
        self._tint_invalid()
        if error is not None and self.preview is not None:  # what is shown no longer matches the form
            self._show_empty(True, "Masked samples and rates return once the settings on the left are valid.")

    def _tint_invalid(self) -> None:
        base, error = self.palette().color(QPalette.ColorRole.Base), tone("error")
        tinted = QColor.fromRgbF(
            *(b + INVALID_TINT * (e - b) for b, e in zip(base.getRgbF()[:3], error.getRgbF()[:3], strict=True))
        )
        for name, editor in self.editors.items():
            palette = QPalette()
            palette.setResolveMask(0)  # every other colour inherited: the field follows the scheme
            if name in self.invalid:
                palette.setColor(QPalette.ColorRole.Base, tinted)
            editor.setPalette(palette)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES and self.invalid:
            self._tint_invalid()

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

    def _on_progress(self, done: int, total: int, message: str) -> None:
        self.progress_bar.setFormat(f"{message} %p%")
        if total > 0:
            self.progress_bar.setRange(0, total)
            self.progress_bar.setValue(done)

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
            config = self.masking_config()
        except ValueError:
            return
        masker = Masker.for_tokenizer(config, tokenizer)
        blocks, seed, version = self.blocks, self.seed_spin.value(), self.settings_version
        run = str(self.workspace.run) if self.generator_check.isEnabled() and self.generator_check.isChecked() else ""

        def work(progress: Progress):
            generator = FillMask.from_path(run).model if run else None
            preview = masking_preview(blocks, tokenizer, masker, seed, SAMPLES, MEASURED_BLOCKS, progress, generator)
            return version, config, preview

        self.preview_runner.start(work)

    def on_checkpoint(self, _path: str = "") -> None:
        """Offer the generator's replacements once the current run is an ELECTRA run with a checkpoint."""
        run = self.workspace.run
        electra = run is not None and _has_generator(run)
        self.generator_check.setEnabled(electra)
        if electra and self.generator_check.isChecked():
            self._refresh_timer.start()

    def _on_preview(self, result: tuple[int, MaskingConfig, MaskingPreview]) -> None:
        version, config, preview = result
        self.preview, self.preview_config = preview, config
        self.stale_label.setVisible(version != self.settings_version)
        self._show_empty(False)
        for view, sample in zip(self.sample_views, preview.samples):
            view.set_cells([token_cell(token) for token in sample])
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
    except (OSError, ValueError, CheckpointError):
        return False


def _fraction_spin(value: float, low: float, high: float, tooltip: str) -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setRange(low, high)
    spin.setDecimals(2)
    spin.setSingleStep(0.05)
    spin.setValue(value)
    spin.setToolTip(tooltip)
    return spin


if __name__ == "__main__":
    from mlm_studio.ui.preview import preview

    preview(MaskingPanel)
