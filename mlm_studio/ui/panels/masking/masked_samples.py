"""How the masking preview draws masked blocks: each token coloured by what masking did to it (or by what an
ELECTRA generator wrote there), with a tooltip that says it, and the legend of those colours."""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

from mlm_studio.core.data.masking import MaskKind
from mlm_studio.core.data.masking_preview import PreviewToken
from mlm_studio.ui.widgets.token_view import TokenCell, TokenView

KIND_COLOURS = {
    MaskKind.MASK: QColor("#d9534f"),
    MaskKind.RANDOM: QColor("#f0a030"),
    MaskKind.KEPT: QColor("#4caf50"),
}
REPLACED = QColor("#9467bd")


def token_cell(token: PreviewToken) -> TokenCell:
    """One preview token as a chip."""
    if token.generated is not None and token.generated != token.original:
        text = f"{token.original} → {token.generated}"
        return TokenCell(text, REPLACED, f"the generator wrote '{token.generated}': the discriminator must flag it")
    if token.generated is not None:
        tip = f"the generator wrote '{token.original}' back: it counts as original"
        return TokenCell(token.original, KIND_COLOURS.get(token.kind), tip)
    if token.special:
        return TokenCell(token.original, None, f"{token.original}: a special token, never masked", muted=True)
    colour = KIND_COLOURS.get(token.kind)
    if token.kind == MaskKind.MASK:
        return TokenCell(token.original, colour, f"'{token.original}' → {token.shown}; the model predicts it")
    if token.kind == MaskKind.RANDOM:
        text = f"{token.original} → {token.shown}"
        return TokenCell(text, colour, f"'{token.original}' replaced by the random '{token.shown}'")
    if token.kind == MaskKind.KEPT:
        return TokenCell(token.original, colour, f"'{token.original}' kept, but the model predicts it")
    return TokenCell(token.original, None, "not selected")


def legend_cells(generator: bool = False) -> list[TokenCell]:
    """A chip of each colour, saying what it means; the generator's replacement's only where one is shown (an
    ELECTRA run's)."""
    return [
        TokenCell("[MASK]", KIND_COLOURS[MaskKind.MASK], "replaced by [MASK]"),
        TokenCell("random → new", KIND_COLOURS[MaskKind.RANDOM], "replaced by a random token"),
        TokenCell("kept", KIND_COLOURS[MaskKind.KEPT], "unchanged, but predicted"),
        *([TokenCell("a → b", REPLACED, "ELECTRA: replaced by the generator")] if generator else []),
        TokenCell("untouched", None, "not selected"),
        TokenCell("[CLS]", None, "special token, never masked", muted=True),
    ]


def legend(generator: bool = False) -> TokenView:
    """The legend of the colours as chips (`generator`: with the generator's replacement)."""
    view = TokenView()
    view.set_cells(legend_cells(generator))
    return view


class MaskedSamples(QScrollArea):
    """A few masked blocks one under the other, separated by a line."""

    def __init__(self, count: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.views = [TokenView() for _ in range(count)]
        samples = QWidget()
        layout = QVBoxLayout(samples)
        for i, view in enumerate(self.views):
            if i:
                line = QFrame()
                line.setFrameShape(QFrame.Shape.HLine)
                line.setFrameShadow(QFrame.Shadow.Sunken)
                layout.addWidget(line)
            layout.addWidget(view)
        layout.addStretch(1)
        self.setWidgetResizable(True)
        self.setWidget(samples)

    def show_samples(self, samples: list[list[PreviewToken]]) -> None:
        for view, sample in zip(self.views, samples):
            view.set_cells([token_cell(token) for token in sample])
