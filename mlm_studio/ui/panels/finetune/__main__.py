"""The Fine-tune panel alone: `python -m mlm_studio.ui.panels.finetune`."""

from mlm_studio.ui.panels.finetune.panel import FinetunePanel
from mlm_studio.ui.preview import preview

preview(FinetunePanel)
