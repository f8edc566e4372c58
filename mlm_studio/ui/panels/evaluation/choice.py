"""The Evaluation panel's choosers: which model (the current run, another run, a folder, a cached Hub model), which
of its checkpoints, and which model to compare it with. What they choose is one value, a `Choice` (results.py),
that the panel binds its results to. The model chooser follows the workspace's current run until the user picks
another model; a subject is never offered as its own comparison."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QPushButton,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QWidget,
)

from mlm_studio.core.models.hf_folder import is_hf_folder
from mlm_studio.core.runs.run_folder import RunDir, checkpoint_step
from mlm_studio.ui.panels.evaluation.results import Choice
from mlm_studio.ui.widgets.model_choice import NO_MODEL, model_entries, refill
from mlm_studio.ui.workspace import Workspace

LATEST = -1
MODEL_TIP = "A run, or a Hugging Face model scored on the Corpus panel's text"
FOLLOWING = "It follows the current run: a run trained or continued in this window is chosen here when it starts."
PICKED = "Picked here: it stays chosen when a run starts in this window (choose the current run to follow it again)."
COMPARE_TIP = (
    "A second model, side by side in every view (the masked samples, where it fails, what it learned, the task): "
    "another run, another checkpoint of this one, or an imported model (each scored on its own held-out blocks; two "
    "checkpoints of one run share theirs)"
)


class ElidedCombo(QComboBox):
    """A chooser whose text (or placeholder) is cut with "…" where it does not fit, its whole text then leading
    its tooltip."""

    def __init__(self, purpose: str, characters: int) -> None:
        super().__init__()
        self.purpose = purpose
        self.setToolTip(purpose)
        # its width does not follow its longest entry (a run's name and step): the window stays narrow
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(characters)
        self.setMinimumWidth(self.fontMetrics().averageCharWidth() * characters)  # else a placeholder's width

    def set_purpose(self, purpose: str) -> None:
        self.purpose = purpose
        self.setToolTip(purpose)
        self.update()

    def _option(self) -> QStyleOptionComboBox:
        """The style's description of the box, its placeholder as its text while nothing is chosen."""
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        if self.currentIndex() < 0 and self.placeholderText():
            option.palette.setBrush(QPalette.ColorRole.ButtonText, option.palette.placeholderText())
            option.currentText = self.placeholderText()
        return option

    def shown_text(self) -> str:
        """The text as painted: elided to the width of the box's text field."""
        option = self._option()
        room = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, self
        )
        return self.fontMetrics().elidedText(option.currentText, Qt.TextElideMode.ElideRight, room.width())

    def paintEvent(self, event) -> None:
        painter = QStylePainter(self)
        option = self._option()
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        whole, option.currentText = option.currentText, self.shown_text()
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)
        tip = self.purpose if option.currentText == whole else f"{whole}\n\n{self.purpose}"
        if tip != self.toolTip():
            self.setToolTip(tip)


class EvaluationChoice(QWidget):
    """The model, checkpoint and comparison choosers and the Model folder… button, in one row."""

    changed = Signal()  # the chosen model, checkpoint or comparison is another

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.folders: list[str] = []
        self.entries: list[tuple[str, str]] = []  # (label, path) of every model offered
        self.following = True  # the model chooser follows the current run: the user has not picked another
        self._choosing = False  # the chooser is set by the panel, not by the user
        self.model_combo = ElidedCombo(MODEL_TIP, 16)
        self.model_combo.setPlaceholderText(NO_MODEL)
        self.checkpoint_combo = ElidedCombo("Which checkpoint of the run: step through them to watch it learn", 12)
        self.compare_combo = ElidedCombo(COMPARE_TIP, 10)
        self.folder_button = QPushButton("Model folder…")
        self.folder_button.clicked.connect(self.browse)
        self.model_combo.currentIndexChanged.connect(self._on_model_chosen)
        self.model_combo.activated.connect(self._on_model_picked)  # the entry already chosen, chosen again
        self.checkpoint_combo.currentIndexChanged.connect(self._on_checkpoint_chosen)
        self.compare_combo.currentIndexChanged.connect(self.changed)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.model_combo, 2)
        layout.addWidget(self.checkpoint_combo, 1)
        layout.addWidget(self.compare_combo, 2)
        layout.addWidget(self.folder_button)
        self._update_model_tip()

    def current(self) -> Choice:
        """The choice, "latest checkpoint" as the step it is now (a new checkpoint makes it another choice)."""
        step = self.checkpoint_combo.currentData()
        if step == LATEST and self.checkpoint_combo.count() > 1:
            step = self.checkpoint_combo.itemData(1)
        other = self.compare_combo.currentData()
        other_name = self.compare_combo.currentText().removeprefix("compare with ") if other else ""
        path = self.model_combo.currentData()
        name = self.model_combo.currentText().removeprefix("Current run: ")
        if path is not None and self.checkpoint_combo.isEnabled():
            name += f", {self.checkpoint_combo.currentText()}"
        imported = path is not None and is_hf_folder(path)
        return Choice(path, None if step == LATEST else step, other, name, other_name, imported)

    # --- what is offered ----------------------------------------------------------------------------
    def refresh(self) -> None:
        """Every model offered again (a run was added, the runs folder changed), the choices kept where they can."""
        entries = model_entries(self.workspace.run, self.workspace.runs, self.folders)
        refill(self.model_combo, entries, self.model_combo.currentData(), self.workspace.runs)
        self.entries = entries
        self._list_checkpoints()
        self._update_model_tip()
        self.changed.emit()

    def _list_checkpoints(self) -> None:
        path, kept = self.model_combo.currentData(), self.checkpoint_combo.currentData()
        is_run = path is not None and not is_hf_folder(path)
        self.checkpoint_combo.blockSignals(True)  # refilled, not chosen
        self.checkpoint_combo.clear()
        self.checkpoint_combo.setEnabled(is_run)
        self.checkpoint_combo.addItem("latest checkpoint", LATEST)
        for checkpoint in reversed(RunDir(path).checkpoints()) if is_run else []:
            self.checkpoint_combo.addItem(checkpoint.name, checkpoint_step(checkpoint))
        self.checkpoint_combo.setCurrentIndex(max(0, self.checkpoint_combo.findData(kept)))
        self.checkpoint_combo.blockSignals(False)
        self._list_comparisons()

    def _list_comparisons(self) -> None:
        """The run's other checkpoints and the other models, never the chosen model and checkpoint itself."""
        path, step = self.model_combo.currentData(), self.checkpoint_combo.currentData()
        chosen = self.compare_combo.currentData()
        checkpoints = list(reversed(RunDir(path).checkpoints())) if self.checkpoint_combo.isEnabled() else []
        itself = next((c for c in checkpoints if checkpoint_step(c) == step), checkpoints[0] if checkpoints else None)
        offered = [("no comparison", None), *((f"compare with {c.name}", str(c)) for c in checkpoints if c != itself)]
        offered += [(f"compare with {label}", other) for label, other in self.entries if other != path]
        refill(self.compare_combo, offered, chosen)

    # --- the user's choices and the workspace's news ------------------------------------------------
    def _on_model_chosen(self) -> None:
        if not self._choosing:
            self._on_model_picked()
        self._list_checkpoints()
        self._update_model_tip()
        self.changed.emit()

    def _on_model_picked(self) -> None:
        """The user picked the model: the chooser follows the current run only if it is that one."""
        run = self.workspace.run
        self.following = run is not None and self.model_combo.currentData() == str(run)
        self._update_model_tip()

    def _on_checkpoint_chosen(self) -> None:
        self._list_comparisons()
        self.changed.emit()

    def follow(self, run: Path | None) -> None:
        """A run started or ended: the "Current run" entry is it; chosen unless the user picked another model."""
        self.refresh()
        if run is not None and self.following:
            self.choose(str(run))

    def choose(self, path: str) -> None:
        """Choose `path` for the user (the chooser keeps following the current run)."""
        self._choosing = True
        self.model_combo.setCurrentIndex(max(0, self.model_combo.findData(path)))
        self._choosing = False

    def browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A run or a Hugging Face model folder")
        if folder:
            self.add_folder(folder)

    def add_folder(self, folder: str, picked: bool = True) -> None:
        """Offer `folder` and choose it: `picked` by the user, or for the user only while the chooser follows."""
        if is_hf_folder(folder) and folder not in self.folders:
            self.folders.append(folder)
        self.refresh()
        if picked:
            self.model_combo.setCurrentIndex(max(0, self.model_combo.findData(folder)))
            self.following = False
            self._update_model_tip()
        elif self.following:
            self.choose(folder)

    def offer_imported(self, imported) -> None:
        """New runs start from an imported model: it is offered, chosen only while the chooser follows the current
        run."""
        if imported is not None:
            self.add_folder(str(imported.folder), picked=False)

    def _update_model_tip(self) -> None:
        run = self.workspace.run
        if self.model_combo.currentData() is None:
            self.model_combo.set_purpose(MODEL_TIP)
        elif self.following:
            self.model_combo.set_purpose(f"{MODEL_TIP}.\n{FOLLOWING}")
        else:
            current = f" (the current run is {run.name})" if run is not None else ""
            self.model_combo.set_purpose(f"{MODEL_TIP}.\n{PICKED}{current}")
