"""The Training panel's curves: the live plots under their x-axis, smoothing, zoom and export controls, with the
reading of the values under the mouse among them (the whole reading in its tooltip when it is cut)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSlider, QVBoxLayout, QWidget

from mlm_studio.ui.widgets.elided_label import ElidedLabel
from mlm_studio.ui.widgets.live_plots import X_AXES, LivePlots


class PlotsArea(QWidget):
    """The plots and what steers them; the panel connects the export buttons to its exporter."""

    def __init__(self, sliced: bool = False, parent: QWidget | None = None) -> None:
        """`sliced`: leave the live plots' construction, one plot per step, to the window's launch."""
        super().__init__(parent)
        self.plots = LivePlots(sliced=sliced)
        self.axis_combo = QComboBox()
        for axis in X_AXES:
            self.axis_combo.addItem(f"x: {axis}", axis)
        self.axis_combo.currentIndexChanged.connect(lambda: self.plots.set_axis(self.axis_combo.currentData()))
        self.smoothing_slider = QSlider(Qt.Orientation.Horizontal)
        self.smoothing_slider.setRange(0, 99)
        self.smoothing_slider.setValue(round(self.plots.smoothing * 100))
        self.smoothing_slider.setToolTip(
            "Smoothing of the training curves, 0 to 0.99: TensorBoard's debiased exponential moving average "
            "(the raw values stay visible, faint)"
        )
        self.smoothing_label = QLabel(f"smoothing {self.plots.smoothing:.2f}")
        self.smoothing_slider.valueChanged.connect(self._set_smoothing)
        self.zoom_button = QPushButton("Reset zoom")
        self.zoom_button.setToolTip("Show every curve whole again (zoom with the wheel, pan by dragging)")
        self.zoom_button.clicked.connect(self.plots.reset_zoom)
        self.png_button = QPushButton("Export plots…")
        self.png_button.setToolTip("Save the plots as a PNG at twice the screen's resolution")
        self.csv_button = QPushButton("Export CSV…")
        self.csv_button.setToolTip("Save the current run's metrics as a CSV file, one row per record")
        self.readout = ElidedLabel()  # between the controls: the plots keep the height a line of its own takes
        self.plots.hovered.connect(self.readout.setText)
        bar = QHBoxLayout()
        bar.addWidget(self.axis_combo)
        bar.addWidget(self.smoothing_label)
        bar.addWidget(self.smoothing_slider)
        bar.addWidget(self.readout, 1)
        for button in (self.zoom_button, self.png_button, self.csv_button):
            bar.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.plots, 1)

    def state(self) -> dict[str, object]:
        """What the window remembers of the plots: the x-axis and the smoothing (percent)."""
        return {"axis": self.axis_combo.currentData(), "smoothing": self.smoothing_slider.value()}

    def restore(self, state: dict[str, object]) -> None:
        """Return to a remembered `state` (values as a settings file gives them); one of another kind or out of its
        range is ignored."""
        axis = self.axis_combo.findData(str(state.get("axis", "")))
        if axis >= 0:
            self.axis_combo.setCurrentIndex(axis)
        slider = self.smoothing_slider
        try:
            smoothing = int(str(state.get("smoothing", "")).strip())
        except ValueError:
            return
        if slider.minimum() <= smoothing <= slider.maximum():
            slider.setValue(smoothing)

    def _set_smoothing(self, percent: int) -> None:
        self.plots.set_smoothing(percent / 100)
        self.smoothing_label.setText(f"smoothing {percent / 100:.2f}")
