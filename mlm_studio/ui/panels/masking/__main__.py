"""The Masking preview panel alone: `python -m mlm_studio.ui.panels.masking`."""

from mlm_studio.ui.panels.masking.panel import MaskingPanel
from mlm_studio.ui.preview import preview

preview(MaskingPanel)
