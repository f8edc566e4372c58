"""The models a panel offers in its choosers: the current run, every saved pre-training run with a checkpoint (a
fine-tuned run has no masked-LM head: it is offered only where fine-tuning runs are shown), the folders the
user added (a Hugging Face model, or a run or checkpoint folder from elsewhere) and the models already in the local
Hugging Face cache (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QComboBox

from mlm_studio.core.models.hf_folder import is_hf_folder
from mlm_studio.ui.runs_folder import RunsSnapshot

NO_MODEL = "No trained model yet: train one, or choose a model folder"
READING = "Reading the runs folder…"


def model_combo(tooltip: str) -> QComboBox:
    """A chooser of models that says so while there is none to choose (an empty box read as a broken one)."""
    combo = QComboBox()
    combo.setToolTip(tooltip)
    combo.setPlaceholderText(NO_MODEL)
    # its width does not follow its longest text (the sentence above, a long run name): the window stays narrow
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(16)
    combo.setMinimumWidth(combo.fontMetrics().averageCharWidth() * 16)  # the placeholder would set it otherwise
    return combo


def model_entries(current_run: Path | None, runs: RunsSnapshot, folders: list[str]) -> list[tuple[str, str]]:
    """(label, path) of each model to offer, from the workspace's listing of the runs folder: the current run first,
    the cached Hub models (their snapshot folders) last."""
    entries = []
    if current_run is not None:
        entries.append((f"Current run: {current_run.name}", str(current_run)))
    entries += [(run.path.name, str(run.path)) for run in runs.with_checkpoint() if run.path != current_run]
    entries += [(f"{'Hugging Face' if is_hf_folder(f) else 'Folder'}: {Path(f).name}", f) for f in folders]
    added = {str(Path(f).resolve()) for f in folders}
    entries += [
        (f"Hub cache: {name}", str(folder)) for name, folder in runs.hub_models if str(folder.resolve()) not in added
    ]
    return entries


def refill(
    combo: QComboBox, entries: list[tuple[str, str | None]], keep: str | None, runs: RunsSnapshot | None = None
) -> None:
    """Put `entries` in `combo` (left as they are when it offers them already), choosing `keep` if it is among them
    (else the first), without signalling. A chooser of models listed from `runs` says, while it is empty, that the
    runs folder is being read or that it has no model."""
    if runs is not None:
        combo.setPlaceholderText(NO_MODEL if runs.read else READING)
    combo.blockSignals(True)
    if [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())] != entries:
        combo.clear()
        for label, path in entries:
            combo.addItem(label, path)
    index = combo.findData(keep)
    combo.setCurrentIndex(index if index >= 0 else 0)
    combo.blockSignals(False)
