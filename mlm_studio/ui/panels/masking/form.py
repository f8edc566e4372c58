"""The Masking preview's settings: masking (strategy, rate, the [MASK] / random / keep split, spans), the samples
(block length, packing, seed, ELECTRA's generator) and the legend of the token colours, in the form's words."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ConfigError, DataConfig, MaskingConfig
from mlm_studio.ui.panels.config.fields import form_fields
from mlm_studio.ui.panels.masking.masked_samples import legend, legend_cells
from mlm_studio.ui.theme import PALETTE_CHANGES, ToneLabel, blended, tone

INVALID_TINT = 0.22  # how much of the error tone an invalid field's background takes
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


class MaskingForm(QWidget):
    """The settings' editors; says which are invalid and why."""

    edited = Signal()  # a masking setting, the seed or the generator's box
    data_edited = Signal()  # the block length or packing
    strategy_changed = Signal(bool)  # whether it is span masking

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.invalid: set[str] = set()  # the fields at fault (as `section.field`)
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
        self.generator_check.toggled.connect(self.edited)
        self.generator_check.toggled.connect(self.update_legend)
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
        legend_box = QGroupBox("Legend")
        self.legend = legend()
        QVBoxLayout(legend_box).addWidget(self.legend)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(masking_box)
        layout.addWidget(data_box)
        layout.addWidget(legend_box)
        layout.addStretch(1)
        self.setFixedWidth(300)

        for spin in (self.rate_spin, self.mask_spin, self.random_spin, self.keep_spin, self.span_p_spin):
            spin.valueChanged.connect(self.edited)
        self.max_span_spin.valueChanged.connect(self.edited)
        self.seed_spin.valueChanged.connect(self.edited)
        self.strategy_combo.currentIndexChanged.connect(self.on_strategy)
        self.length_spin.valueChanged.connect(self.data_edited)
        self.packing_check.toggled.connect(self.data_edited)

    def update_legend(self) -> None:
        """The generator's chip is in the legend while its replacements are shown."""
        self.legend.set_cells(legend_cells(self.generator_check.isEnabled() and self.generator_check.isChecked()))

    def on_strategy(self) -> None:
        """The span fields enabled for span masking alone; says which it is."""
        span = self.strategy_combo.currentData() == "span"
        self.span_p_spin.setEnabled(span)
        self.max_span_spin.setEnabled(span)
        self.strategy_changed.emit(span)

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

    def set_config(self, config: RunConfig) -> None:
        """Show a configuration's masking and data settings, without signalling each change."""
        m, d = config.masking, config.data
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

    def show_invalid(self, error: ConfigError | None) -> None:
        """Say why the settings are invalid and tint the fields at fault (no style sheet: it would replace
        the spin boxes' native arrows); None clears both."""
        self.validation_label.setText(worded(error) if error else "")
        self.invalid = {name for name in (error.fields if error else ()) if name in self.editors}
        self._tint_invalid()

    def _tint_invalid(self) -> None:
        base, error = self.palette().color(QPalette.ColorRole.Base), tone("error")
        tinted = blended(error, INVALID_TINT, base)
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


def _fraction_spin(value: float, low: float, high: float, tooltip: str) -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setRange(low, high)
    spin.setDecimals(2)
    spin.setSingleStep(0.05)
    spin.setValue(value)
    spin.setToolTip(tooltip)
    return spin
