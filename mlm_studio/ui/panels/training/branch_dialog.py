"""*Branch from here…*: a new run from a checkpoint of the selected run, asked as `train --branch` asks it: the
checkpoint's step, the batches to skip and the settings to change (one `section.field = value` a line, read as
`--set` reads its values). The engine resolves the request the command line makes (`core/training/branching.py`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.config.run_config import value_from_text
from mlm_studio.core.errors import UserError
from mlm_studio.core.runs.run_folder import RunDir, checkpoint_step
from mlm_studio.core.training.request import TrainingRequest

MOST_STEPS = 2**31 - 1  # a spin box's ceiling
EXAMPLE = "training.learning_rate = 2e-4\ntraining.warmup_steps = 0"


class BranchDialog(QDialog):
    """The branch to make of `run`; `request(runs_root)` once accepted. Settings that are not settings, or whose
    values the run's configuration refuses, keep the dialog open, saying why."""

    def __init__(self, run: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run = RunDir(run)
        self.setWindowTitle(f"Branch {self.run.name}")
        self.step = QComboBox()
        for checkpoint in self.run.checkpoints():
            self.step.addItem(f"{checkpoint_step(checkpoint):,}", checkpoint_step(checkpoint))
        self.step.setCurrentIndex(self.step.count() - 1)
        self.step.setToolTip("The checkpoint the branch starts from: its steps continue from this one")
        self.skip = QCheckBox("Skip the batches of the steps after")
        self.skip_from, self.skip_to = QSpinBox(), QSpinBox()
        for box in (self.skip_from, self.skip_to):
            box.setRange(0, MOST_STEPS)
            box.setGroupSeparatorShown(True)
        skipping = QHBoxLayout()
        for widget in (self.skip, self.skip_from, QLabel("up to step"), self.skip_to):
            skipping.addWidget(widget)
        self.skip.setToolTip("Pass over these batches (around a loss spike): the branch trains on the ones after")
        self.settings = QPlainTextEdit()
        self.settings.setPlaceholderText(EXAMPLE)
        self.settings.setToolTip("The settings the branch changes, one section.field = value a line, as --set")
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.hide()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.branch_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.branch_button.setText("Branch")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("From the checkpoint at step", self.step)
        form.addRow(skipping)
        form.addRow("Settings changed", self.settings)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)
        self.step.currentIndexChanged.connect(self._follow_step)
        self._follow_step()

    def _follow_step(self) -> None:
        """A skip range begins at the branch step or after it (the batches before are in its weights already),
        at first right there, skipping one batch."""
        step = self.step.currentData() or 0
        for box in (self.skip_from, self.skip_to):
            box.setMinimum(step)
        self.skip_from.setValue(step)
        self.skip_to.setValue(max(self.skip_to.value(), step + 1))

    def settings_given(self) -> tuple[tuple[str, object], ...]:
        """The settings typed, checked against the run's configuration (UserError: the sentence that says why)."""
        given = []
        for number, line in enumerate(self.settings.toPlainText().splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            name, equals, value = line.partition("=")
            if not equals or "." not in name:
                raise UserError(f"Line {number}: write section.field = value, e.g. {EXAMPLE.splitlines()[0]}.")
            given.append((name.strip(), value_from_text(value.strip())))
        self.run.config.with_values(dict(given), "the branch's settings")  # a ConfigError says what is wrong
        return tuple(given)

    def accept(self) -> None:
        try:
            self.settings_given()
        except UserError as exc:
            self.problem.setText(str(exc))
            self.problem.show()
            return
        super().accept()

    def request(self, runs_root: Path) -> TrainingRequest:
        """The branch asked for, made under `runs_root`."""
        skipped = (self.skip_from.value(), self.skip_to.value()) if self.skip.isChecked() else None
        return TrainingRequest(
            branch=self.run.path,
            from_step=self.step.currentData(),
            skip_batches=skipped,
            settings=self.settings_given(),
            runs_root=runs_root,
        )
