"""Exporting a run as a Hugging Face folder from the window: where to, whether to replace an earlier export, and
the export itself in the background, its outcome said in a message bar."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from mlm_studio.core.hf import export_model, is_hf_folder
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.message_bar import MessageBar


class RunExporter(TaskRunner):
    """Asks, then exports; `succeeded` carries the folder written."""

    def __init__(self, parent: QWidget, message_bar: MessageBar, log: Callable[[str], None]) -> None:
        super().__init__(parent)
        self.window, self.message_bar, self.log = parent, message_bar, log
        self.succeeded.connect(self._on_exported)
        self.failed.connect(lambda message: message_bar.show_message(message, "error"))

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
        overwrite = False
        if is_hf_folder(out):
            question = f"{out} holds an exported model. Replace it?"
            if QMessageBox.question(self.window, "Replace the export?", question) != QMessageBox.StandardButton.Yes:
                return
            overwrite = True
        self.export(run, Path(out), overwrite)

    def export(self, run: Path, out: Path, overwrite: bool = False) -> None:
        """Export in the background; the outcome appears in the message bar."""
        self.message_bar.show_message(f"Exporting {run.name} to {out}…", "info")
        self.start(lambda progress: export_model(run, out, overwrite=overwrite, progress=progress))

    def _on_exported(self, out: Path) -> None:
        self.message_bar.show_message(
            f"Exported to {out}. transformers loads it with AutoModelForMaskedLM.from_pretrained and "
            "AutoTokenizer.from_pretrained; the playground can open it too.",
            "info",
        )
        self.log(f"Exported to {out}")
