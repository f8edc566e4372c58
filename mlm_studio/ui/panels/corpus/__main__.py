"""The Corpus panel alone: `python -m mlm_studio.ui.panels.corpus`."""

from mlm_studio.ui.panels.corpus.panel import CorpusPanel
from mlm_studio.ui.preview import preview

preview(CorpusPanel, loaded=False, size=(1000, 700))
