"""Taking a run out of the window: its plots as a PNG, its metrics as CSV, and the model as a Hugging Face folder
(where to, whether to replace an earlier export, the export itself in the background); every outcome is said
in the panel's message bar."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from mlm_studio.core.interop.export import export_choice, replaces_export, write_export
from mlm_studio.core.models.hf_folder import InteropError
from mlm_studio.core.runs.history import metrics_csv
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.live_plots import LivePlots
from mlm_studio.ui.widgets.message_bar import MessageBar

# how `transformers` loads a fine-tuning run's export, by its kind (version 5 has no question-answering pipeline)
LOADED_BY = {
    "classification": 'pipeline("text-classification")',
    "tokens": 'pipeline("token-classification")',
    "qa": "AutoModelForQuestionAnswering and AutoTokenizer (docs/finetuning.md shows how its answers are read)",
}


class RunExporter(TaskRunner):
    """Asks, then exports; `succeeded` carries the Hugging Face folder written."""

    def __init__(self, parent: QWidget, message_bar: MessageBar, log: Callable[[str], None]) -> None:
        super().__init__(parent)
        self.window, self.message_bar, self.log = parent, message_bar, log
        self.succeeded.connect(self._on_exported)
        self.failed.connect(lambda message: message_bar.show_message(message, "error"))

    def plots_dialog(self, plots: LivePlots) -> None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Export the plots", "training.png", "PNG images (*.png)")
        if path:
            self.save_plots(plots, path)

    def save_plots(self, plots: LivePlots, path: str) -> bool:
        """The six plots as a PNG at twice the screen's resolution."""
        path = path if Path(path).suffix else path + ".png"
        try:
            plots.export(path)
        except OSError as exc:
            self.message_bar.show_message(f"Could not export the plots: {exc}", "error")
            return False
        self.message_bar.show_message(f"Saved the plots to {path}.", "info")
        return True

    def csv_dialog(self, run: Path | None) -> None:
        if run is None:
            self.message_bar.show_message("Open or train a run first.", "warning")
            return
        path, _ = QFileDialog.getSaveFileName(self.window, "Export the metrics", "metrics.csv", "CSV files (*.csv)")
        if path:
            try:
                Path(path).write_text(metrics_csv(RunDir(run).read_metrics()), encoding="utf-8")
            except (OSError, CheckpointError) as exc:
                self.message_bar.show_message(f"Could not export: {exc}", "error")

    def ask(self, run: Path | None, runs_root: Path) -> None:
        """Ask where to write `run` (or a run folder the user picks), then export it."""
        if run is None:
            chosen = QFileDialog.getExistingDirectory(self.window, "The run to export", str(runs_root))
            if not chosen:
                return
            run = Path(chosen)
        out = QFileDialog.getExistingDirectory(self.window, "An empty folder for the exported model", str(run.parent))
        if not out:
            return
        try:
            replacing = replaces_export(out)
        except (InteropError, OSError) as exc:
            self.message_bar.show_message(f"Could not export: {exc}", "error")
            return
        if replacing:
            question = f"{out} holds an exported model. Replace it?"
            if QMessageBox.question(self.window, "Replace the export?", question) != QMessageBox.StandardButton.Yes:
                return
        self.export(run, Path(out), replacing)

    def export(self, run: Path, out: Path, overwrite: bool = False) -> None:
        """Export in the background; the outcome appears in the message bar."""
        self.message_bar.show_message(f"Exporting {run.name} to {out}…", "info")
        try:
            task = RunDir(run).task
        except CheckpointError:  # the export says why it cannot read the run
            task = None
        self._loaded_by = (
            LOADED_BY[task.kind]
            if task
            else "AutoModelForMaskedLM.from_pretrained and AutoTokenizer.from_pretrained; the playground opens it too"
        )
        self.start(lambda progress: _exported(run, out, overwrite, progress))

    def _on_exported(self, exported: tuple[Path, str]) -> None:
        out, note = exported
        said = f"Exported to {out}. transformers loads it with {self._loaded_by}."
        self.message_bar.show_message(f"{said} Note: {note}" if note else said, "warning" if note else "info")
        self.log(f"Exported to {out}")


def _exported(run: Path, out: Path, overwrite: bool, progress) -> tuple[Path, str]:
    """Export `run` into `out`: the folder written, and what the user should know of the weights taken ("" for
    nothing: a run another process is still training gives its best so far)."""
    choice = export_choice(run)
    return write_export(choice, out, overwrite=overwrite, progress=progress), choice.note
