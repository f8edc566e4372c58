"""The Training panel alone, on a runs folder of its own: `python -m mlm_studio.ui.panels.training`."""

import tempfile
from pathlib import Path

from mlm_studio.ui.panels.training.panel import TrainingPanel
from mlm_studio.ui.preview import preview
from mlm_studio.ui.workspace import Workspace


def in_a_new_folder(workspace: Workspace) -> TrainingPanel:
    workspace.set_runs_root(Path(tempfile.mkdtemp(prefix="mlm-studio-runs-")))
    return TrainingPanel(workspace)


preview(in_a_new_folder)
