"""The Qt binding must not corrupt reference counts: the workbench emits millions of signals per session."""

import sys
import threading

from PySide6.QtCore import QObject, Signal


class Emitter(QObject):
    value = Signal(object)


def test_emitting_signals_keeps_reference_counts(qtbot):
    emitter = Emitter()
    received = []
    emitter.value.connect(received.append)
    true_before, none_before = sys.getrefcount(True), sys.getrefcount(None)
    for i in range(2000):
        emitter.value.emit(i)
    worker = threading.Thread(target=lambda: [emitter.value.emit(i) for i in range(2000)])
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: len(received) == 4000)
    assert sys.getrefcount(True) - true_before < 50
    assert abs(sys.getrefcount(None) - none_before) < 50
