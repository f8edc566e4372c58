"""The Qt binding must not corrupt reference counts: the workbench emits millions of signals per session."""

import gc
import sys
import threading

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Signal


class Emitter(QObject):
    value = Signal(object)


def test_emitting_signals_keeps_reference_counts(qtbot):
    emitter = Emitter()
    received = []
    emitter.value.connect(received.append)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # earlier tests' widgets, deleted later
    QCoreApplication.processEvents()
    gc.collect()
    gc.disable()  # a collection freeing earlier tests' objects in between would move the counts by itself
    try:
        true_before, none_before = sys.getrefcount(True), sys.getrefcount(None)
        for i in range(2000):
            emitter.value.emit(i)
        worker = threading.Thread(target=lambda: [emitter.value.emit(i) for i in range(2000)])
        worker.start()
        worker.join()
        qtbot.waitUntil(lambda: len(received) == 4000)
        true_after, none_after = sys.getrefcount(True), sys.getrefcount(None)
    finally:
        gc.enable()
    assert true_after - true_before < 50  # a binding that loses one per emission would be 4,000 off
    assert abs(none_after - none_before) < 50
