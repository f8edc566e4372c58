"""The Configuration panel alone: `python -m mlm_studio.ui.panels.config`."""

from mlm_studio.ui.panels.config.panel import ConfigPanel
from mlm_studio.ui.preview import preview

preview(ConfigPanel)
