"""The navigation's icons, drawn as simple line glyphs in the palette's text colour (readable on a light or a dark
window, unlike the platform's stock pictures) and each saying what its panel is about."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPainterPath, QPalette, QPen, QPixmap

SIZE = 20  # of the glyphs' drawing box; painted at 2× for sharp high-density screens
SCALE = 2
MODES = ((QIcon.Mode.Normal, QPalette.ColorRole.WindowText), (QIcon.Mode.Selected, QPalette.ColorRole.HighlightedText))


def _pages(p: QPainter) -> None:  # a corpus: a sheet of text lines
    p.drawRoundedRect(QRectF(4, 2, 12, 16), 1.5, 1.5)
    for y in (6, 9, 12, 15):
        p.drawLine(QPointF(7, y), QPointF(13 if y < 15 else 11, y))


def _masked(p: QPainter) -> None:  # masking: a row of tokens, one hidden
    for x in (1.5, 7.5, 13.5):
        p.drawRect(QRectF(x, 7, 5, 6))
    p.fillRect(QRectF(7.5, 7, 5, 6), p.pen().color())


def _sliders(p: QPainter) -> None:  # configuration: three sliders
    for y, knob in ((5, 13), (10, 6), (15, 11)):
        p.drawLine(QPointF(2, y), QPointF(18, y))
        p.setBrush(p.pen().color())
        p.drawEllipse(QPointF(knob, y), 2, 2)
        p.setBrush(Qt.BrushStyle.NoBrush)


def _curve(p: QPainter) -> None:  # training: a falling loss curve over its axes
    p.drawLine(QPointF(2, 2), QPointF(2, 18))
    p.drawLine(QPointF(2, 18), QPointF(18, 18))
    path = QPainterPath(QPointF(4, 4))
    path.cubicTo(QPointF(7, 14), QPointF(10, 14), QPointF(17, 15))
    p.drawPath(path)


def _bubble(p: QPainter) -> None:  # the playground: a question in a speech bubble
    path = QPainterPath()
    path.addRoundedRect(QRectF(2, 2, 16, 11), 3, 3)
    p.drawPath(path)
    p.drawLine(QPointF(6, 13), QPointF(5, 18))
    p.drawLine(QPointF(5, 18), QPointF(10, 13))
    for x in (6.5, 10, 13.5):
        p.drawPoint(QPointF(x, 7.5))


def _bars(p: QPainter) -> None:  # evaluation: measured bars
    for x, top in ((3, 11), (8, 5), (13, 8)):
        p.drawRect(QRectF(x, top, 4, 17 - top))


def _target(p: QPainter) -> None:  # fine-tuning: a target hit
    p.drawEllipse(QPointF(10, 10), 8, 8)
    p.drawEllipse(QPointF(10, 10), 4.5, 4.5)
    p.setBrush(p.pen().color())
    p.drawEllipse(QPointF(10, 10), 1.5, 1.5)


GLYPHS: dict[str, Callable[[QPainter], None]] = {
    "Corpus": _pages,
    "Masking preview": _masked,
    "Configuration": _sliders,
    "Training": _curve,
    "Playground": _bubble,
    "Evaluation": _bars,
    "Fine-tune": _target,
}


def panel_icon(title: str, palette: QPalette) -> QIcon:
    """The glyph of the panel called `title` in `palette`'s text colour, and in its highlighted text colour when
    selected."""
    icon = QIcon()
    for mode, role in MODES:
        icon.addPixmap(_drawn(GLYPHS[title], palette.color(role)), mode)
    return icon


def _drawn(glyph: Callable[[QPainter], None], colour: QColor) -> QPixmap:
    pixmap = QPixmap(SIZE * SCALE, SIZE * SCALE)
    pixmap.setDevicePixelRatio(SCALE)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = QPen(colour, 1.6)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    painter.setPen(pen)
    glyph(painter)
    painter.end()
    return pixmap
