"""What the Fine-tune panel's tests share: filling its form, running it to the end, reading its tables."""

from mlm_studio.core.runs.control import IDLE

TIMEOUT_MS = 120_000


def fill(panel, task_file, kind="classification", epochs=2.0):
    panel.form.task_edit.setText(str(task_file))
    panel.form.kind_combo.setCurrentIndex(panel.form.kind_combo.findData(kind))
    panel.form.epochs.setValue(epochs)
    panel.form.learning_rate.setValue(5e-3)
    panel.form.batch_size.setValue(8)


def run_to_the_end(qtbot, panel):
    if panel.controller.state == IDLE:
        panel.start_button.click()
    qtbot.waitUntil(lambda: panel.controller.state == IDLE, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: not panel.mistakes_task.running, timeout=TIMEOUT_MS)


def cells(table):
    return [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
