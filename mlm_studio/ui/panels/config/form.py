"""The Configuration form's parts: an editor for each engine field, chosen by its default's type, and the groups
of fields laid out in as many columns as the width holds."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QCheckBox, QComboBox, QGridLayout, QGroupBox, QLineEdit, QScrollArea, QSpinBox, QWidget

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.ui.panels.config.fields import CHOICE_TITLES, GROUPS, choices_of

ARRANGEMENTS = {  # columns: each group's (row, column, rows spanned)
    3: {
        "Model": (0, 0, 2),
        "Optimisation": (0, 1, 1),
        "Schedule": (1, 1, 1),
        "Data & masking": (0, 2, 1),
        "Hardware": (1, 2, 1),
    },
    2: {
        "Model": (0, 0, 2),
        "Hardware": (2, 0, 1),
        "Optimisation": (0, 1, 1),
        "Schedule": (1, 1, 1),
        "Data & masking": (2, 1, 1),
    },
    1: {name: (row, 0, 1) for row, name in enumerate(GROUPS)},
}
COMBO_CHARACTERS = 14


def field_defaults(section: str) -> dict:
    """Each field of a section with its default; the model's with every family's own fields."""
    return ModelConfig.field_defaults() if section == "model" else getattr(RunConfig(), section).values()


def field_editor(section: str, name: str, devices: list[str], edited: Callable[..., None]) -> QWidget:
    """A check box, a chooser, a number or a line of text, as the field's default is; `edited` on each change."""
    default = field_defaults(section)[name]
    if isinstance(default, bool):
        editor = QCheckBox()
        editor.toggled.connect(edited)
    elif choices_of(name) or name == "device":
        editor = QComboBox()
        editor.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        editor.setMinimumContentsLength(COMBO_CHARACTERS)  # a long choice is elided, not the form widened
        for choice in choices_of(name) or devices:
            title = FAMILIES[choice].title if name == "family" else CHOICE_TITLES.get(choice, choice)
            editor.addItem(title, choice)
        editor.currentIndexChanged.connect(edited)
    elif isinstance(default, int):
        editor = QSpinBox()
        editor.setRange(0, 10**9)
        editor.setGroupSeparatorShown(True)
        editor.valueChanged.connect(edited)
    else:
        editor = QLineEdit()
        editor.textEdited.connect(edited)
    return editor


class GroupColumns(QScrollArea):
    """The groups in three, two or one columns (ARRANGEMENTS): as many as fit, so nothing is cut and the form
    scrolls only downwards. The count is chosen again whenever the width or the groups' own sizes change: on a
    resize, when first shown (after the style has given the fields their real sizes) and when a group's layout
    asks for room."""

    def __init__(self, boxes: dict[str, QGroupBox], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.boxes = boxes
        self.grid = QGridLayout()
        self.columns = 0
        self._arrange(max(ARRANGEMENTS))
        form = QWidget()
        form.setLayout(self.grid)
        form.installEventFilter(self)
        self.setWidgetResizable(True)
        self.setWidget(form)

    def _arrange(self, columns: int) -> None:
        if columns == self.columns:
            return
        for box in self.boxes.values():
            self.grid.removeWidget(box)
        for name, (row, column, span) in ARRANGEMENTS[columns].items():
            self.grid.addWidget(self.boxes[name], row, column, span, 1)
        self.columns = columns

    def _width_for(self, columns: int) -> int:
        """The narrowest form that shows every group whole in `columns` columns."""
        widths = [0] * columns
        for name, (_, column, _) in ARRANGEMENTS[columns].items():
            widths[column] = max(widths[column], self.boxes[name].minimumSizeHint().width())
        margins = self.grid.contentsMargins()
        return sum(widths) + self.grid.spacing() * (columns - 1) + margins.left() + margins.right()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._reflow()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._reflow()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest and self.isVisible():
            self._reflow()
        return False

    def _reflow(self) -> None:
        room = self.width() - 2 * self.frameWidth() - self.verticalScrollBar().sizeHint().width()
        self._arrange(next((n for n in sorted(ARRANGEMENTS, reverse=True) if self._width_for(n) <= room), 1))
