"""The live plots of a fine-tuning: one metric per plot, each axis naming it. The training loss beside the
validation loss (both in nats), the training accuracy, and apart from it the validation score that chooses the best
checkpoint (macro-F1, entity F1 for entity tags, answer F1 for questions); the learning rate, the gradient norm and
the speed; and the hint that stands in their place until a run's first record."""

from __future__ import annotations

from typing import ClassVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from mlm_studio.core.finetune.scores import score_field
from mlm_studio.ui.widgets.curve_data import CURVES
from mlm_studio.ui.widgets.live_plots import LivePlots
from mlm_studio.ui.widgets.plots import recolour

VALIDATION = "validation"  # the plot of the validation score
NO_SCORE_YET = "validation score"  # its axis until the first validation names the score
CURVES_HINT = (
    "The curves of a fine-tuning appear here while it trains: the training loss and accuracy, the validation score "
    "after each epoch, the learning rate, the gradient norm and the speed.\n\nChoose a model and a labelled task "
    "file above, then Start, or Compare to see whether pre-training helps: your model against the same architecture "
    "from scratch, over several seeds; Search recipe finds the learning rate and epochs (on the Recipe tab)."
)


def curves_hint() -> QLabel:
    """What stands where the curves will be, until a run's first record."""
    hint = QLabel(CURVES_HINT)
    hint.setWordWrap(True)
    hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
    hint.setMargin(24)
    return hint


class FinetunePlots(LivePlots):
    """The plots a fine-tuning has values for (no cloze probes, no replaced-token detection), the training
    accuracy and the validation score each on an axis of its own."""

    PLOTS: ClassVar[dict[str, tuple[str, bool]]] = {
        "loss": ("loss", False),
        "accuracy": ("training accuracy", False),
        VALIDATION: (NO_SCORE_YET, False),
        "learning_rate": ("learning rate", False),
        "grad_norm": ("gradient norm", False),
        "throughput": ("tokens / s", False),
    }

    def _build(self):
        yield from super()._build()
        self.plots[VALIDATION].getAxis("left").percent = True  # a share, read as a percentage

    def add(self, kind: str, record: dict) -> None:
        """A record's values in their plots; a validation's score in the validation plot, named on its axis."""
        if kind != "validation":
            super().add(kind, record)
            return
        super().add(kind, {**record, "macro_f1": None, "entity_f1": None, "f1": None})  # its loss, beside training's
        field, name = score_field(record)
        if record.get(field) is None:
            return
        curve = CURVES[kind][field]
        series = self._curve(
            f"{kind}_{field}", VALIDATION, f"validation {name}", curve.colour, "share", width=2, symbol="o"
        )
        series.append(record["step"], record.get("tokens_seen", 0), record.get("elapsed", 0.0), record[field])
        self._name_axis(f"validation {name}")

    def clear(self) -> None:
        super().clear()
        self._name_axis(NO_SCORE_YET)

    def _name_axis(self, name: str) -> None:
        plot = self.plots[VALIDATION]
        if plot.getAxis("left").labelText != name:
            plot.setLabel("left", name)
            recolour(plot)
