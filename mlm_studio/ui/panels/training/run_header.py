"""The Training panel's account of the run it shows, beside its Start, Pause and Stop buttons: a progress bar and a
status line that belong to that run (live while it trains, else its outcome from its files), and while a training
runs out of sight, which run trains and a button back to it."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QSizePolicy, QWidget

from mlm_studio.core.durations import format_duration
from mlm_studio.core.runs.history import RunSummary, evaluation_said, outcome
from mlm_studio.core.runs.records import StartedRecord, StepRecord
from mlm_studio.ui.widgets.elided_label import ElidedLabel


class RunHeader(QWidget):
    """The panel tells it what to show; it keeps nothing of the runs itself."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.progress_bar = QProgressBar()
        self.progress_bar.setFormat("%v / %m steps")
        self.progress_bar.setMinimumWidth(160)
        self.status_label = ElidedLabel()
        self.live_label = ElidedLabel()  # which run trains while another is shown
        self.back_button = QPushButton("Show the training run")
        self.back_button.setToolTip("Show the curves and progress of the run being trained")
        self.back_button.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.progress_bar, 2)
        layout.addWidget(self.status_label, 3)
        layout.addWidget(self.live_label, 3)
        layout.addWidget(self.back_button)
        self.show_elsewhere("")
        self.show_nothing()

    # --- a run from its files -----------------------------------------------------------------------
    def show_nothing(self) -> None:
        """No run shown: no bar (an idle one looks like an empty field), no status; the row's room goes to the
        buttons' neighbours."""
        self.progress_bar.hide()
        self.status_label.setText("")
        self.hide()

    def show_outcome(self, name: str, summary: RunSummary) -> None:
        """`name`'s state and the step it reached of its total in the bar; its last evaluation, with its step, in
        the status line; the whole outcome in the bar's tooltip."""
        bar = self.progress_bar
        if summary.time_budget > 0:
            bar.setFormat(f"{summary.state} · %v / %m s")
            bar.setRange(0, max(round(summary.time_budget), 1))
            bar.setValue(min(round(summary.elapsed), bar.maximum()))
        else:
            bar.setFormat(f"{summary.state} · %v / %m steps" if summary.total_steps else f"{summary.state} · step %v")
            bar.setRange(0, max(summary.total_steps, summary.step, 1))
            bar.setValue(summary.step)
        bar.setToolTip(f"{name}: {outcome(summary)}")
        self._fit_bar()
        bar.show()
        reached = f"step {summary.step:,}; " if summary.time_budget > 0 else ""
        evaluation = evaluation_said(summary.val_loss, summary.val_accuracy, summary.val_step)
        self.status_label.setText(f"{name}: {reached}{evaluation}")
        self.show()

    def show_missing(self, name: str, reason: str) -> None:
        self.progress_bar.hide()
        self.status_label.setText(f"{name}: {reason}")
        self.show()

    # --- the run being trained ----------------------------------------------------------------------
    def show_preparing(self, said: str) -> None:
        self.progress_bar.setFormat("%v / %m steps")
        self.progress_bar.setToolTip("")
        self.progress_bar.setRange(0, 0)  # busy until the preparation reports what it does
        self.progress_bar.show()
        self.status_label.setText(f"{said}: preparing the corpus's blocks and the model…")
        self.show()

    def show_prepare_progress(self, done: int, total: int, message: str) -> None:
        """The bar says what is being prepared and how far it is ("Tokenizing the corpus… 40%")."""
        self.progress_bar.setFormat(f"{message}… %p%")
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(min(done, max(total, 1)))
        self._fit_bar()

    def _fit_bar(self) -> None:
        """Wide enough for its text whole: a state and a count never lose their end."""
        bar = self.progress_bar
        bar.setMinimumWidth(max(160, bar.fontMetrics().horizontalAdvance(bar.text()) + 32))

    def show_started(self, started: StartedRecord) -> None:
        bar = self.progress_bar
        bar.setToolTip("")
        if started.time_budget > 0:  # measured in seconds of the budget
            bar.setFormat("%v / %m s")
            bar.setRange(0, round(started.time_budget))
            bar.setValue(0)
        else:
            bar.setFormat("%v / %m steps")
            bar.setRange(0, started.total_steps)
            bar.setValue(started.step)
        self._fit_bar()
        bar.show()
        self.status_label.setText("training: the first figures come with the first logged step")
        self.show()

    def show_step(self, record: StepRecord, seconds: bool, paused: bool, left: float) -> None:
        """The bar at the step (or second of the budget); the status line: the step's loss, pace and time left
        (while paused, no countdown)."""
        bar = self.progress_bar
        bar.setValue(min(round(record.elapsed), bar.maximum()) if seconds else record.step)
        said = f"step {record.step:,} · loss {record.loss:.3f}"
        if paused:
            self.status_label.setText(f"{said} · paused: the ETA resumes with training")
        else:
            self.status_label.setText(f"{said} · {record.tokens_per_second:,.0f} tok/s · ETA {format_duration(left)}")

    def show_stopping(self) -> None:
        self.status_label.setText("Stopping after this step…")

    def show_elsewhere(self, said: str) -> None:
        """`said`: which run trains while another is shown ("" when none does, or it is the one shown)."""
        self.live_label.setText(said)
        self.live_label.setVisible(bool(said))
        self.back_button.setVisible(bool(said))
