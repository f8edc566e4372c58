"""Every panel opens alone (`python -m mlm_studio.ui.panels.<name>`), as a developer previews it."""

import os
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

PANELS = (
    "corpus",
    "corpus.tokenizer_section",
    "masking",
    "config",
    "training",
    "playground",
    "evaluation",
    "finetune",
    "finetune.try_it",
)
SCRIPT = """
import os, runpy, sys
for name in sys.argv[1:]:
    os.environ["MLM_STUDIO_PREVIEW_PNG"] = os.path.join(os.environ["OUT"], name + ".png")
    runpy.run_module("mlm_studio.ui.panels." + name, run_name="__main__")
"""


@pytest.mark.slow  # a fresh interpreter shows nine panels
def test_every_panel_has_a_preview_that_shows_it(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *PANELS],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OUT": str(tmp_path), "QT_QPA_PLATFORM": "offscreen"},
    )
    assert done.returncode == 0, done.stderr
    for name in PANELS:
        image = QImage(str(tmp_path / f"{name}.png"))
        assert image.width() >= 500 and image.height() >= 500, name
