"""The Playground panel alone: `python -m mlm_studio.ui.panels.playground`."""

from mlm_studio.ui.panels.playground.panel import PlaygroundPanel
from mlm_studio.ui.preview import preview

preview(PlaygroundPanel, loaded=False)
