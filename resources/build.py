"""Build what the application ships from these sources: the icon's PNGs at the standard sizes, rendered from the
SVG, and a copy of every file into the package (`mlm_studio/resources/`). Run after changing anything here:

    python resources/build.py
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "mlm_studio" / "resources"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
SHIPPED = ("icons/mlm-studio.svg", "mlm-studio.desktop", "io.github.mlm_studio.MLMStudio.metainfo.xml")


def render_icons() -> list[Path]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(HERE / "icons" / "mlm-studio.svg"))
    written = []
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        path = HERE / "icons" / f"mlm-studio-{size}.png"
        image.save(str(path))
        written.append(path)
    return written


def main() -> None:
    pngs = [p.relative_to(HERE).as_posix() for p in render_icons()]
    for name in (*SHIPPED, *pngs):
        target = PACKAGE / Path(name).name
        shutil.copyfile(HERE / name, target)
        print(f"{name} → {target.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
