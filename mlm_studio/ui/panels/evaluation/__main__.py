"""The Evaluation panel alone: `python -m mlm_studio.ui.panels.evaluation`."""

from mlm_studio.ui.panels.evaluation.panel import EvaluationPanel
from mlm_studio.ui.preview import preview

preview(EvaluationPanel, loaded=False)
