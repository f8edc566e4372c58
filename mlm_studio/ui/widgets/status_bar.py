"""The main window's status bar: the corpus, the current run, the device found in the background and the memory
the process holds, refreshed as it runs (the words are status_lines.py's)."""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from mlm_studio.core.runs.device import available_devices
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.widgets.status_lines import NO_CORPUS, corpus_line, memory_line, resident_memory_bytes, run_line

MEMORY_REFRESH_MS = 2000


class StatusBar(QStatusBar):
    """Says `devices_found` with the devices once `probe_devices` has found them."""

    devices_found = Signal(object)  # list of Device, the preferred first

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.device_label = QLabel("Device: detecting…")
        self.corpus_label = QLabel(NO_CORPUS)
        self.run_label = QLabel()
        self.run_label.setToolTip(
            "The run this window trains or last trained: the model the other panels offer first. Opening a run only "
            "shows it"
        )
        self.memory_label = QLabel()
        self.addWidget(self.corpus_label, 1)
        self.addWidget(self.run_label, 1)
        self.addPermanentWidget(self.device_label)
        self.addPermanentWidget(self.memory_label)
        self.device_probe = TaskRunner(self)
        self.device_probe.succeeded.connect(self._on_devices)
        self.device_probe.failed.connect(lambda message: self.device_label.setText(f"Device: unknown ({message})"))
        self.memory_timer = QTimer(self)
        self.memory_timer.timeout.connect(self.show_memory)
        self.memory_timer.start(MEMORY_REFRESH_MS)
        self.show_memory()

    def probe_devices(self) -> None:
        """Find the devices in the background (it imports PyTorch)."""
        self.device_probe.start(lambda progress: available_devices())

    def show_corpus(self, corpus) -> None:
        self.corpus_label.setText(corpus_line(corpus))

    def show_run(self, name: str | None, activity: str = "") -> None:
        self.run_label.setText(run_line(name, activity))

    def show_memory(self) -> None:
        self.memory_label.setText(memory_line(resident_memory_bytes()))

    def _on_devices(self, devices) -> None:
        self.device_label.setText(f"Device: {devices[0].label}")
        self.device_label.setToolTip("\n".join(d.label for d in devices))
        self.devices_found.emit(devices)
