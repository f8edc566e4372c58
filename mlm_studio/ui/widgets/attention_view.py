"""Attention for one sentence: one head's map (rows attend to columns) or the rollout of all the layers, chosen
from a grid of every layer's and head's small map; each cell's probability on hover."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QImage, QPainter, QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.evaluation.explain.attention import AttentionMaps
from mlm_studio.ui.theme import PALETTE_CHANGES

INK = {"light": "#0072b2", "dark": "#56b4e9"}  # attention's one hue, Okabe and Ito's blue (lighter on a dark ground)
ROLLOUT = "rollout"
CELL = 14  # pixels of a cell of the large map
SMALL = 40  # pixels of a small map in the overview


def ink_on(base: QColor) -> QColor:
    """The hue of attention over the background `base`: the more attention, the further from the background."""
    return QColor(INK["dark" if base.lightnessF() < 0.5 else "light"])


def shaded(values: np.ndarray, ink: QColor, base: QColor) -> QImage:
    """An image of a map, one pixel per cell: `ink` laid over `base` in proportion to each value (the largest
    value at full strength), to be drawn scaled."""
    largest = float(values.max()) if values.size else 0.0
    share = (values / largest if largest > 0 else np.zeros_like(values))[..., None]  # (L, L, 1)
    low, high = (np.asarray(colour.getRgb()[:3], dtype=np.float64) for colour in (base, ink))
    rgb = np.ascontiguousarray((low + (high - low) * share).round().astype(np.uint8))  # (L, L, 3)
    height, width = values.shape
    return QImage(rgb.data, width, height, 3 * width, QImage.Format.Format_RGB888).copy()


class HeatMap(QWidget):
    """An (L, L) map of probabilities with the pieces along both sides; rows attend to columns."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.values = np.zeros((0, 0))
        self.labels: tuple[str, ...] = ()
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def set_map(self, values: np.ndarray, labels: tuple[str, ...]) -> None:
        self.values, self.labels = values, labels
        self.updateGeometry()
        self.update()

    def _margin(self) -> int:
        metrics = QFontMetrics(self.font())
        return max((metrics.horizontalAdvance(label) for label in self.labels), default=0) + 6

    def _cell(self) -> int:
        length = max(len(self.labels), 1)
        room = min(self.width(), self.height()) - self._margin()
        return max(4, min(CELL, room // length))

    def sizeHint(self) -> QSize:
        side = self._margin() + CELL * len(self.labels)
        return QSize(side, side)

    def cell_at(self, point: QPoint) -> tuple[int, int] | None:
        margin, cell = self._margin(), self._cell()
        row, column = (point.y() - margin) // cell, (point.x() - margin) // cell
        length = len(self.labels)
        return (row, column) if 0 <= row < length and 0 <= column < length and point.x() >= margin else None

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        palette = self.palette()
        base = palette.color(QPalette.ColorRole.Base)
        ink = ink_on(base)
        margin, cell = self._margin(), self._cell()
        if self.values.size:
            side = cell * len(self.labels)
            painter.drawImage(QRect(margin, margin, side, side), shaded(self.values, ink, base))
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        if cell >= QFontMetrics(self.font()).height() * 0.6:
            for number, label in enumerate(self.labels):
                painter.drawText(QRect(0, margin + number * cell, margin - 4, cell), Qt.AlignmentFlag.AlignRight, label)
                painter.save()
                painter.translate(margin + number * cell, margin - 4)
                painter.rotate(-90)
                painter.drawText(QRect(0, 0, margin - 4, cell), Qt.AlignmentFlag.AlignLeft, label)
                painter.restore()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            place = self.cell_at(event.pos())
            if place is None:
                QToolTip.hideText()
                return True
            row, column = place
            value = float(self.values[row, column])
            QToolTip.showText(event.globalPos(), f"{self.labels[row]} → {self.labels[column]}: {value:.3f}", self)
            return True
        return super().event(event)


class HeadGrid(QWidget):
    """Every layer's heads as small maps, a row per layer; clicking one chooses it."""

    chosen = Signal(int, int)  # layer, head (0 for the first)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.maps: np.ndarray = np.zeros((0, 0, 0, 0))
        self.selected = (0, 0)
        self.setMouseTracking(True)

    def set_maps(self, maps: np.ndarray) -> None:
        self.maps = maps
        self.resize(self.sizeHint())
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:
        layers, heads = self.maps.shape[:2]
        return QSize(heads * (SMALL + 4), layers * (SMALL + 4))

    def head_at(self, point: QPoint) -> tuple[int, int] | None:
        layer, head = point.y() // (SMALL + 4), point.x() // (SMALL + 4)
        layers, heads = self.maps.shape[:2]
        return (layer, head) if 0 <= layer < layers and 0 <= head < heads else None

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        palette = self.palette()
        base = palette.color(QPalette.ColorRole.Base)
        ink = ink_on(base)
        layers, heads = self.maps.shape[:2]
        for layer in range(layers):
            for head in range(heads):
                left, top = head * (SMALL + 4), layer * (SMALL + 4)
                painter.drawImage(QRect(left, top, SMALL, SMALL), shaded(self.maps[layer, head], ink, base))
                if (layer, head) == self.selected:
                    painter.setPen(palette.color(QPalette.ColorRole.Highlight))
                    painter.drawRect(left - 1, top - 1, SMALL + 1, SMALL + 1)

    def mousePressEvent(self, event) -> None:
        place = self.head_at(event.position().toPoint())
        if place is not None:
            self.selected = place
            self.update()
            self.chosen.emit(*place)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            place = self.head_at(event.pos())
            if place is not None:
                QToolTip.showText(event.globalPos(), f"layer {place[0] + 1}, head {place[1] + 1}", self)
            return True
        return super().event(event)


class AttentionView(QWidget):
    """Choose a layer and a head (or the rollout) and see its map; the overview of every head beside it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.maps: AttentionMaps | None = None
        self.layer_combo = QComboBox()
        self.layer_combo.setToolTip("The layer whose attention is shown, or the rollout of all of them")
        self.head_combo = QComboBox()
        self.head_combo.setToolTip("One head, or the mean of the layer's heads")
        self.layer_combo.currentIndexChanged.connect(self._show)
        self.head_combo.currentIndexChanged.connect(self._show)
        self.heat_map = HeatMap()
        self.grid = HeadGrid()
        self.grid.chosen.connect(self.choose)
        self.note = QLabel()
        self.note.setWordWrap(True)
        choice = QHBoxLayout()
        choice.addWidget(QLabel("Layer"))
        choice.addWidget(self.layer_combo)
        choice.addWidget(QLabel("head"))
        choice.addWidget(self.head_combo)
        choice.addStretch(1)
        grid_area = QScrollArea()  # a deep model's grid scrolls rather than widen the window
        grid_area.setWidget(self.grid)
        grid_area.setFrameShape(QFrame.Shape.NoFrame)
        overview = QVBoxLayout()
        overview.addWidget(QLabel("Every head (a row per layer)"))
        overview.addWidget(grid_area, 1)
        body = QHBoxLayout()
        body.addWidget(self.heat_map, 1)
        body.addLayout(overview)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(choice)
        layout.addWidget(self.note)
        layout.addLayout(body, 1)

    def show_maps(self, maps: AttentionMaps) -> None:
        self.maps = maps
        for combo in (self.layer_combo, self.head_combo):
            combo.blockSignals(True)
            combo.clear()
        for layer in range(maps.layers):
            self.layer_combo.addItem(str(layer + 1), layer)
        self.layer_combo.addItem(ROLLOUT, ROLLOUT)
        self.head_combo.addItem("mean", None)
        for head in range(maps.heads):
            self.head_combo.addItem(str(head + 1), head)
        for combo in (self.layer_combo, self.head_combo):
            combo.blockSignals(False)
        self.grid.set_maps(maps.maps)
        self._show()

    def clear(self) -> None:
        """No map: the explanation they belonged to has gone."""
        self.maps = None
        for combo in (self.layer_combo, self.head_combo):
            combo.blockSignals(True)
            combo.clear()
            combo.blockSignals(False)
        self.note.setText("")
        self.heat_map.set_map(np.zeros((0, 0)), ())
        self.grid.set_maps(np.zeros((0, 0, 0, 0)))

    def choose(self, layer: int, head: int) -> None:
        """Show `layer`'s `head` (0 for the first)."""
        self.layer_combo.setCurrentIndex(self.layer_combo.findData(layer))
        self.head_combo.setCurrentIndex(self.head_combo.findData(head))

    def shown(self) -> np.ndarray:
        """The map on display: a head's, a layer's heads' mean, or the rollout."""
        layer, head = self.layer_combo.currentData(), self.head_combo.currentData()
        if layer == ROLLOUT:
            return self.maps.rollout()
        return self.maps.maps[layer].mean(0) if head is None else self.maps.maps[layer, head]

    def _show(self) -> None:
        if self.maps is None or self.layer_combo.currentIndex() < 0:
            return
        rollout = self.layer_combo.currentData() == ROLLOUT
        self.head_combo.setEnabled(not rollout)
        if not rollout and self.head_combo.currentData() is not None:
            self.grid.selected = (self.layer_combo.currentData(), self.head_combo.currentData())
            self.grid.update()
        self.note.setText(
            "Rollout: how much each row's output draws on each column's piece through every layer, the residual "
            "connections counted (Abnar & Zuidema 2020)."
            if rollout
            else "Each row: where that piece attended."
        )
        self.heat_map.set_map(self.shown(), self.maps.pieces)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in PALETTE_CHANGES:
            self.heat_map.update()
            self.grid.update()
