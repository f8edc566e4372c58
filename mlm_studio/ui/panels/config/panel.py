"""Training configuration panel: a preset, then every field of the run configuration, validated as typed.

The form is built from the engine's dataclasses, so a new field appears here by itself; `FIELDS` gives
each a label, a group and a tooltip with its usual range.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.config.continuation import continuation_recipe
from mlm_studio.core.config.families import FAMILIES, family_titles
from mlm_studio.core.config.presets import PRESETS, preset
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import PRECISIONS, ConfigError, ModelConfig, join_words
from mlm_studio.core.durations import format_duration, parse_duration
from mlm_studio.core.models.hf_folder import ImportedModel, import_model
from mlm_studio.core.shown import shown
from mlm_studio.ui.construction import Construction
from mlm_studio.ui.panels.config.fields import GROUPS, KEPT_ACROSS_PRESETS, OBJECTIVE_FIELDS, form_fields
from mlm_studio.ui.panels.config.form import GroupColumns, field_defaults, field_editor
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.theme import ToneLabel
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.workspace import Workspace

INVALID = "border: 1px solid #c0392b;"
CUSTOM = "custom"


class ConfigPanel(QWidget):
    """Edits the workspace's run configuration; only valid configurations reach the workspace."""

    validity_changed = Signal(str)  # "" when valid, else the reason

    def __init__(self, workspace: Workspace, parent: QWidget | None = None, sliced: bool = False) -> None:
        """`sliced`: leave the construction's steps to the window's launch; otherwise build it all."""
        super().__init__(parent)
        self.workspace = workspace
        self.error = ""
        self.editors: dict[tuple[str, str], QWidget] = {}
        self._applying = False
        self._devices = ["auto", "cpu"]
        self.import_runner = TaskRunner(self)
        self.import_runner.succeeded.connect(self._on_imported)
        self.import_runner.failed.connect(lambda message: self.message_bar.show_message(message, "error"))
        self.import_runner.finished.connect(lambda: self.import_button.setEnabled(True))
        self.construction = Construction(self._build(), sliced)

    def showEvent(self, event: QShowEvent) -> None:
        self.construction.finish()  # shown before the window has built it all
        super().showEvent(event)

    # --- layout -------------------------------------------------------------------------------------
    def _build(self) -> Iterator[None]:
        """The preset bar, then the fields one group per step; the workspace's news reaches the panel once it is
        whole, and it then shows the workspace's configuration."""
        self.preset_combo = QComboBox()
        for name in (*PRESETS, CUSTOM):
            self.preset_combo.addItem(name, name)
        self.preset_combo.setToolTip(
            "Model sizes (layers × hidden): tiny 2×128, mini 4×256, small 4×512, "
            "medium 8×512, base 12×768 (BERT); modern, a 3×128 ModernBERT, learns fastest on a CPU; electra, "
            "quickstart's 2×128 trained by replaced-token detection"
        )
        self.preset_combo.currentIndexChanged.connect(self._on_preset)
        self.load_button = QPushButton("Load…")
        self.load_button.setToolTip("Load a configuration (TOML), for example a run's config.toml")
        self.save_button = QPushButton("Save…")
        self.load_button.clicked.connect(self.load_dialog)
        self.save_button.clicked.connect(self.save_dialog)
        self.import_button = QPushButton("Import model…")
        self.import_button.setToolTip(
            f"Continue pre-training a Hugging Face {join_words(family_titles(), 'or')} folder on your corpus: its "
            "architecture and tokenizer are used"
        )
        self.import_button.clicked.connect(self.import_dialog)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        top = QHBoxLayout()
        self.preset_label = QLabel("Preset")
        top.addWidget(self.preset_label)
        top.addWidget(self.preset_combo)
        top.addWidget(self.summary, 1)
        top.addWidget(self.load_button)
        top.addWidget(self.save_button)
        top.addWidget(self.import_button)
        self.import_note = QLabel()
        self.import_note.setWordWrap(True)
        self.forget_button = QPushButton("Train from scratch")
        self.forget_button.setToolTip("Forget the imported model: new runs start from random weights again")
        self.forget_button.clicked.connect(lambda: self.workspace.set_initial_model(None))
        self.import_frame = QFrame()
        self.import_frame.setFrameShape(QFrame.Shape.StyledPanel)
        banner = QHBoxLayout(self.import_frame)
        banner.addWidget(self.import_note, 1)
        banner.addWidget(self.forget_button)
        self.import_frame.hide()

        self.error_label = ToneLabel("error")
        self.message_bar = MessageBar()

        groups = {name: QFormLayout() for name in GROUPS}
        self.fields = form_fields()
        for group in GROUPS:  # GROUPS is in the fields' order: the editors keep it
            yield
            for (section, name), (field_group, label, tooltip) in self.fields.items():
                if field_group == group:
                    editor = field_editor(section, name, self._devices, self._on_edit)
                    editor.setToolTip(tooltip)
                    caption = QLabel(label)
                    caption.setToolTip(tooltip)
                    groups[group].addRow(caption, editor)
                    self.editors[(section, name)] = editor
        self.tokenizer_note = QLabel()
        self.tokenizer_note.setWordWrap(True)
        groups["Model"].addRow("Vocabulary", self.tokenizer_note)
        self.group_boxes = {}
        for name in GROUPS:
            self.group_boxes[name] = QGroupBox(name.replace("&", "&&"))
            self.group_boxes[name].setLayout(groups[name])
        self.groups = GroupColumns(self.group_boxes)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.import_frame)
        layout.addWidget(self.error_label)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.groups, 1)
        self.show_config(self.workspace.config)
        self.workspace.config_changed.connect(self._on_workspace_config)
        self.workspace.tokenizer_changed.connect(lambda _: self._on_edit())
        self.workspace.initial_model_changed.connect(self._on_initial_model)

    # --- values -------------------------------------------------------------------------------------
    def show_config(self, config: RunConfig) -> None:
        """Put a configuration into the form (without treating it as an edit)."""
        self._applying = True
        try:
            sections = dict.fromkeys(section for section, _ in self.editors)
            shown = {section: {**field_defaults(section), **getattr(config, section).values()} for section in sections}
            for (section, name), editor in self.editors.items():
                value = shown[section][name]
                if isinstance(editor, QCheckBox):
                    editor.setChecked(value)
                elif isinstance(editor, QComboBox):
                    if editor.findData(value) < 0:
                        editor.addItem(value, value)
                    editor.setCurrentIndex(editor.findData(value))
                elif isinstance(editor, QSpinBox):
                    editor.setValue(value)
                elif name == "time_budget":
                    editor.setText(format_duration(value) if value else "0")
                else:
                    editor.setText(f"{value:g}")
            self.preset_combo.setCurrentIndex(
                self.preset_combo.findData(config.preset if config.preset in PRESETS else CUSTOM)
            )
        finally:
            self._applying = False
        self._on_edit(from_user=False)

    def read_config(self) -> RunConfig:
        """The configuration in the form; raises ConfigError naming the first problem."""
        values: dict[str, dict] = {section: {} for section in ("model", "data", "masking", "training")}
        for (section, name), editor in self.editors.items():
            if isinstance(editor, QCheckBox):
                values[section][name] = editor.isChecked()
            elif isinstance(editor, QComboBox):
                values[section][name] = editor.currentData()
            elif isinstance(editor, QSpinBox):
                values[section][name] = editor.value()
            elif name == "time_budget":
                try:
                    values[section][name] = parse_duration(editor.text() or "0")
                except ValueError as exc:
                    raise ConfigError(f"{{0}}: {exc}", (f"{section}.{name}",)) from None
            else:
                try:
                    values[section][name] = float(editor.text())
                except ValueError:
                    raise ConfigError(f"must be a number, not {shown(editor.text())}", (f"{section}.{name}",)) from None
        base = self.workspace.config
        family = values["model"]["family"]
        own = {f.name for f in FAMILIES[family].fields}
        model = {n: v for n, v in values["model"].items() if n in own or n in ModelConfig.shared_defaults()}
        tokenizer = self.workspace.tokenizer
        if tokenizer is not None:
            model.update(vocab_size=tokenizer.vocab_size, pad_token_id=tokenizer.pad_id)
        initial = self.workspace.initial_model
        config = RunConfig(
            model=initial.config if initial else replace(base.model.as_family(family), **model),
            data=replace(base.data, **values["data"]),
            masking=replace(base.masking, **values["masking"]),
            tokenizer=base.tokenizer,
            training=replace(base.training, **values["training"]),
            preset=self.preset_combo.currentData(),
        )
        return initial.run_config(config) if initial else config

    def set_devices(self, names: list[str]) -> None:
        """Offer the devices present on this machine (auto first)."""
        self._devices = ["auto", *names]
        editor = self.editors[("training", "device")]
        current = editor.currentData()
        self._applying = True
        editor.clear()
        for name in self._devices:
            editor.addItem(name, name)
        editor.setCurrentIndex(max(0, editor.findData(current)))
        self._applying = False
        self._on_edit(from_user=False)

    # --- reactions ----------------------------------------------------------------------------------
    def _on_preset(self) -> None:
        name = self.preset_combo.currentData()
        if self._applying or name == CUSTOM:
            return
        chosen, current = PRESETS[name], self.workspace.config
        yours = {key: getattr(current.training, key) for key in KEPT_ACROSS_PRESETS}
        training = replace(chosen.training, **yours)
        self.show_config(replace(current, model=chosen.model, training=training, preset=name))

    def _on_edit(self, *_, from_user: bool = True) -> None:
        if self._applying:
            return
        if from_user and self.message_bar.level == "error":
            self.message_bar.clear()  # a refused import or file changed nothing; the user has moved on
        if from_user and self.sender() is not None and self._is_model_editor(self.sender()):
            self._applying = True
            self.preset_combo.setCurrentIndex(self.preset_combo.findData(CUSTOM))
            self._applying = False
        self._couple_objective_and_family(self.sender() if from_user else None)
        self._update_precisions()
        self._show_family_fields()
        for editor in self.editors.values():
            editor.setStyleSheet("")
        try:
            config = self.read_config()
        except ConfigError as exc:
            self.summary.setText("<i>parameters and memory: once the configuration is valid</i>")
            self.summary.setToolTip("")
            keys = [tuple(name.split(".", 1)) for name in exc.fields]
            self._set_error(exc.naming([self.fields[key][1] if key in self.fields else ".".join(key) for key in keys]))
            for key in keys:
                if key in self.editors:
                    self.editors[key].setStyleSheet(INVALID)
            return
        self._set_error("")
        self._show_summary(config)
        self.workspace.set_config(config)

    def _is_model_editor(self, widget) -> bool:
        return any(editor is widget for key, editor in self.editors.items() if self.fields[key][0] == "Model")

    def _couple_objective_and_family(self, changed) -> None:
        """ELECTRA's objective trains an ELECTRA model: choosing it makes the model one, and choosing another
        family goes back to the masked-LM objective."""
        family, objective = self.editors[("model", "family")], self.editors[("training", "objective")]
        self._applying = True
        if changed is objective and objective.currentData() == "electra":
            family.setCurrentIndex(family.findData("electra"))
        elif changed is family and family.currentData() != "electra":
            objective.setCurrentIndex(objective.findData("mlm"))
        self._applying = False

    def _show_family_fields(self) -> None:
        """Only the fields the chosen family (and objective) has."""
        family = self.editors[("model", "family")].currentData()
        electra = self.editors[("training", "objective")].currentData() == "electra"
        form = self.editors[("model", "family")].parentWidget().layout()
        shown = {*ModelConfig.shared_defaults(), *(f.name for f in FAMILIES[family].fields)}
        for (section, name), editor in self.editors.items():
            if section == "model":
                form.setRowVisible(editor, name in shown)
            elif name in OBJECTIVE_FIELDS:
                form.setRowVisible(editor, electra)

    def _update_precisions(self) -> None:
        device = self.editors[("training", "device")].currentData() or "auto"
        allowed = PRECISIONS if device.startswith("cuda") else ("auto", "fp32", "bf16")
        editor = self.editors[("training", "precision")]
        for index in range(editor.count()):
            item = editor.model().item(index)
            item.setEnabled(editor.itemData(index) in allowed)
        if editor.currentData() not in allowed:
            editor.setCurrentIndex(editor.findData("fp32"))

    def _set_error(self, message: str) -> None:
        self.error = message
        self.error_label.setText(f"{message[0].upper()}{message[1:]}." if message else "")
        self.error_label.setVisible(bool(message))
        self.validity_changed.emit(message)

    def _show_summary(self, config: RunConfig) -> None:
        params = config.model.parameter_count()
        memory = config.training_memory_bytes() / 2**20
        t = config.training
        short = not t.epochs and not t.time_budget and t.warmup_steps >= t.max_steps  # its peak rate never reached
        warm = f" · warm-up {t.warmup_steps:,} ≥ {t.max_steps:,} steps: the learning rate never reaches its peak"
        self.summary.setText(
            f"<b>{params / 1e6:,.2f} M</b> parameters · about <b>{memory:,.0f} MiB</b> to train{warm if short else ''}"
        )
        self.summary.setToolTip(
            "The training process's peak on a CPU in fp32: Python, PyTorch and the data, weights, gradients and "
            "Adam's moments (16 bytes per parameter), and the activations kept for the backward pass; within 25% "
            "of the measured peak of every preset and family."
        )
        tokenizer = self.workspace.tokenizer
        if self.workspace.initial_model is not None:
            note = f"{config.model.vocab_size:,} pieces, the imported model's"
        elif tokenizer is not None:
            note = f"{tokenizer.vocab_size:,} pieces, from the Corpus panel's tokenizer"
        else:
            note = "set by the tokenizer (train or load one in the Corpus panel)"
        self.tokenizer_note.setText(note)

    def _on_workspace_config(self, config: RunConfig) -> None:
        try:
            mine = self.read_config()
        except ConfigError:
            mine = None
        if mine != config:
            self.show_config(config)

    # --- imported model ---------------------------------------------------------------------------------
    def import_dialog(self) -> None:
        caption = f"A Hugging Face {join_words(family_titles(), 'or')} folder (config.json, weights, tokenizer)"
        folder = QFileDialog.getExistingDirectory(self, caption)
        if folder:
            self.import_folder(folder)

    def import_folder(self, folder: str) -> None:
        """Read the folder in the background; on success new runs continue pre-training it."""
        self.import_button.setEnabled(False)
        self.message_bar.show_message(f"Importing {Path(folder).name}…", "info")
        self.import_runner.start(lambda progress: import_model(folder))

    def _on_imported(self, imported: ImportedModel) -> None:
        self.workspace.set_initial_model(imported)
        self.message_bar.show_message(
            f"Imported {imported.summary()}", "warning" if imported.fresh_head or imported.unused else "info"
        )

    def _on_initial_model(self, imported: ImportedModel | None) -> None:
        """An imported model fixes the architecture: the model fields and presets are locked until forgotten."""
        for key, editor in self.editors.items():
            if self.fields[key][0] == "Model":
                editor.setEnabled(imported is None)
        self.preset_combo.setVisible(imported is None)  # the imported model is the architecture, not a preset
        self.preset_label.setVisible(imported is None)
        self.import_frame.setVisible(imported is not None)
        if imported is not None:
            self.import_note.setText(
                f"New runs continue pre-training <b>{imported.folder.name}</b> ({imported.folder}): its "
                "architecture and tokenizer are fixed; the training fields are yours to set. They start from "
                f"{continuation_recipe(imported.config).describe()}."
            )
        self.show_config(self.workspace.config)

    # --- files --------------------------------------------------------------------------------------
    def load_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load a configuration", "", "Configurations (*.toml)")
        if path:
            self.load_path(path)

    def load_path(self, path: str) -> None:
        try:
            config = RunConfig.load(path, presets=preset)
        except ConfigError as exc:
            self.message_bar.show_message(str(exc), "error")
            return
        self.message_bar.show_message(f"Loaded {path}.", "info")
        self.show_config(config)

    def save_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the configuration", "config.toml", "Configurations (*.toml)")
        if path:
            self.save_path(path)

    def save_path(self, path: str) -> None:
        """Write the configuration to `path`, with the .toml suffix added where it lacks one; a file the suffix
        leads to is never overwritten (the user did not name it)."""
        target = Path(path)
        if target.suffix.lower() != ".toml":
            target = target.with_name(target.name + ".toml")
            if target.exists():
                self.message_bar.show_message(f"Not saved: {target} exists; choose another name.", "error")
                return
        try:
            self.read_config().save(target)
        except (ConfigError, OSError) as exc:
            self.message_bar.show_message(f"Not saved: {exc}", "error")
        else:
            self.message_bar.show_message(f"Saved {target}.", "info")
