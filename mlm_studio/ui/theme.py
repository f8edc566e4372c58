"""How the application looks: its icon, and a light or a dark palette (following the system's scheme unless
the user chose one), with text colours that keep a contrast of at least 4.5:1 on their background."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRectF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPainter, QPalette, QPen, QPixmap
from PySide6.QtWidgets import QApplication, QLabel, QProxyStyle, QStyle, QWidget

from mlm_studio.resources import ICON_SIZES, icon_png, icon_svg

SCHEMES = ("system", "light", "dark")
PALETTE_CHANGES = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
# Text that says something: an error, a warning (a reason to wait), on each scheme's window background.
TONES = {
    "light": {"error": "#b0281a", "warning": "#8a4b00", "info": "#1f5a99"},
    "dark": {"error": "#ff8a80", "warning": "#f5b656", "info": "#8cc4ff"},
}
# Backgrounds that mark spans of text: a question's gold answer, the model's answer, and where the two overlap;
# black text on the light scheme's, white on the dark one's, each at least 4.5:1.
SPANS = {
    "light": {"gold": "#a8e6b8", "predicted": "#ffcf8a", "both": "#c9d98f"},
    "dark": {"gold": "#1d6b3a", "predicted": "#8a4a06", "both": "#5a5a12"},
}
INDICATORS = (QStyle.PrimitiveElement.PE_IndicatorCheckBox, QStyle.PrimitiveElement.PE_IndicatorRadioButton)
DARK_WINDOW = 0.2  # a window darker than this luminance gets outlined indicators
OUTLINE_SHARE = 0.6  # of the text colour over the field: 5:1 on the dark scheme's field
_DARK = {
    QPalette.ColorRole.Window: "#2b2d30",
    QPalette.ColorRole.WindowText: "#e6e6e6",
    QPalette.ColorRole.Base: "#1e1f22",
    QPalette.ColorRole.AlternateBase: "#26282b",
    QPalette.ColorRole.ToolTipBase: "#3c3f41",
    QPalette.ColorRole.ToolTipText: "#f0f0f0",
    QPalette.ColorRole.Text: "#e6e6e6",
    QPalette.ColorRole.Button: "#35373b",
    QPalette.ColorRole.ButtonText: "#e6e6e6",
    QPalette.ColorRole.BrightText: "#ff6b6b",
    QPalette.ColorRole.Highlight: "#3d7fc4",
    QPalette.ColorRole.HighlightedText: "#ffffff",
    QPalette.ColorRole.Link: "#8cc4ff",
    QPalette.ColorRole.PlaceholderText: "#a3a3a3",
    # the shades frames and separators are drawn with (the light scheme's would draw white lines)
    QPalette.ColorRole.Light: "#4b4e53",
    QPalette.ColorRole.Midlight: "#3e4145",
    QPalette.ColorRole.Mid: "#232427",
    QPalette.ColorRole.Dark: "#1b1c1f",
    QPalette.ColorRole.Shadow: "#111214",
}


def app_icon() -> QIcon:
    """MLM Studio's icon: the SVG for any size, the PNGs where a platform picks by size."""
    icon = QIcon(str(icon_svg()))
    for size in ICON_SIZES:
        icon.addFile(str(icon_png(size)))
    return icon


def resolved(scheme: str) -> str:
    """ "light" or "dark": the scheme itself, or the system's for "system"."""
    if scheme != "system":
        return scheme
    dark = QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark
    return "dark" if dark else "light"


def palette_for(scheme: str) -> QPalette:
    """The palette of a resolved scheme on the application's style."""
    palette = QApplication.style().standardPalette()
    if scheme == "dark":
        for role, colour in _DARK.items():
            palette.setColor(role, QColor(colour))
        for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
            palette.setColor(QPalette.ColorGroup.Disabled, role, QColor("#8c8c8c"))  # greyed out, 3.5:1 on a button
    else:
        palette.setColor(QPalette.ColorRole.PlaceholderText, QColor("#666666"))
    return palette


class OutlinedIndicators(QProxyStyle):
    """The application's style, with check boxes and radio buttons outlined in a colour that stands out from the
    field behind them (3:1 at least, as WCAG asks of a control's boundary): the style's own outline, a shade darker
    than the window, all but vanishes on a dark one."""

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        super().drawPrimitive(element, option, painter, widget)
        if element not in INDICATORS or _luminance(option.palette.color(QPalette.ColorRole.Window)) > DARK_WINDOW:
            return
        base, text = option.palette.color(QPalette.ColorRole.Base), option.palette.color(QPalette.ColorRole.Text)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(blended(text, OUTLINE_SHARE, base), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        box = QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5)
        if element == QStyle.PrimitiveElement.PE_IndicatorRadioButton:
            painter.drawEllipse(box)
        else:
            painter.drawRoundedRect(box, 2, 2)
        painter.restore()


def apply_scheme(app: QApplication, scheme: str) -> str:
    """Give the application the scheme's palette and tones; returns the resolved scheme."""
    actual = resolved(scheme)
    if not isinstance(app.style(), OutlinedIndicators):
        app.setStyle(OutlinedIndicators(app.style().name()))
    app.setProperty("scheme", actual)  # read by the tone labels as the palette change reaches them
    app.setPalette(palette_for(actual))
    return actual


def tone(name: str) -> QColor:
    """The colour of a tone ("error", "warning", "info") in the current scheme."""
    scheme = QApplication.instance().property("scheme") or "light"
    return QColor(TONES[scheme][name])


def span_colour(name: str) -> QColor:
    """The background of a marked span ("gold", "predicted", "both") in the current scheme."""
    scheme = QApplication.instance().property("scheme") or "light"
    return QColor(SPANS[scheme][name])


class ToneLabel(QLabel):
    """A label whose text has a tone (an error, a warning), readable in either scheme."""

    def __init__(self, tone_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tone_name = tone_name
        self.setWordWrap(True)
        self._recolour()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            self._recolour()

    def _recolour(self) -> None:
        colour, palette = tone(self.tone_name), self.palette()
        if palette.color(QPalette.ColorRole.WindowText) != colour:  # setting it sends a palette change again
            palette.setColor(QPalette.ColorRole.WindowText, colour)
            self.setPalette(palette)


def glyph_icon(icon: QIcon, palette: QPalette, size: int = 16) -> QIcon:
    """`icon`'s shape in the palette's button text colour, enabled and disabled: a dark glyph would all but vanish
    from a dark button, most of all greyed out."""
    shape = icon.pixmap(size, size)
    glyph = QIcon()
    modes = ((QIcon.Mode.Normal, QPalette.ColorGroup.Active), (QIcon.Mode.Disabled, QPalette.ColorGroup.Disabled))
    for mode, group in modes:
        pixmap = QPixmap(shape.size())
        pixmap.setDevicePixelRatio(shape.devicePixelRatio())
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.drawPixmap(0, 0, shape)
        painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceIn)
        painter.fillRect(pixmap.rect(), palette.color(group, QPalette.ColorRole.ButtonText))
        painter.end()
        glyph.addPixmap(pixmap, mode)
    return glyph


def contrast(a: QColor, b: QColor) -> float:
    """WCAG's contrast ratio of two colours, 1 to 21."""
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def blended(colour: QColor, share: float, background: QColor) -> QColor:
    """`colour` laid over `background` at `share` (0 to 1) of its strength: a tint that suits either scheme."""
    mixed = (b + (c - b) * share for c, b in zip(colour.getRgbF()[:3], background.getRgbF()[:3]))
    return QColor.fromRgbF(*mixed)


def readable_on(background: QColor) -> QColor:
    """Near-black or white, whichever contrasts more with `background`."""
    black, white = QColor("#111111"), QColor("#ffffff")
    return black if contrast(black, background) >= contrast(white, background) else white


def _luminance(colour: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())
