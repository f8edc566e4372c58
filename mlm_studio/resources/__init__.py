"""What the application shows and installs: its icon (SVG and PNGs), its launcher entry and its AppStream
metadata. Built from the top-level `resources/` folder by `resources/build.py`; found with `importlib.resources`."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
DESKTOP_ENTRY = "mlm-studio.desktop"
METAINFO = "io.github.mlm_studio.MLMStudio.metainfo.xml"


def resource(name: str) -> Path:
    """The packaged file `name` (a plain file inside the installed package)."""
    return Path(str(files(__name__) / name))


def icon_png(size: int) -> Path:
    return resource(f"mlm-studio-{size}.png")


def icon_svg() -> Path:
    return resource("mlm-studio.svg")
