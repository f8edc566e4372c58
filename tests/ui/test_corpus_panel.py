import json
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QFileDialog

from mlm_studio.ui.panels.corpus.panel import CorpusPanel
from mlm_studio.ui.panels.corpus.report import BUILTIN_LABEL
from mlm_studio.ui.workspace import Workspace
from tests.core.hub_layout import add_snapshot, point_main_at, use_cache

LOAD_TIMEOUT_MS = 60_000


@pytest.fixture
def panel(qtbot):
    widget = CorpusPanel(Workspace())
    qtbot.addWidget(widget)
    widget.resize(1000, 700)
    widget.show()
    return widget


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def column(panel, index):
    return [panel.table.item(row, index).text() for row in range(panel.table.rowCount())]


def click_and_wait(qtbot, panel, button):
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_add_files_through_the_dialog(qtbot, panel, tmp_path, monkeypatch):
    a = write(tmp_path / "a.txt", "alpha beta\n\ngamma")
    b = write(tmp_path / "b.jsonl", json.dumps({"text": "delta epsilon zeta"}) + "\n")
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *args, **kw: ([str(a), str(b)], ""))
    click_and_wait(qtbot, panel, panel.add_files_button)
    assert column(panel, 0) == ["a.txt", "b.jsonl"]
    assert column(panel, 2) == ["loaded", "loaded"]
    assert column(panel, 3) == ["2", "1"]
    assert panel.workspace.corpus.documents == 3
    assert "<b>3</b> documents" in panel.statistics.totals.text() and "<b>6</b> words" in panel.statistics.totals.text()
    assert panel.message_bar.text == ""
    assert "delta epsilon zeta" in panel.statistics.samples.toPlainText()


def test_add_folder_through_the_dialog(qtbot, panel, tmp_path, monkeypatch):
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    write(tmp_path / "docs" / "one.txt", "one")
    write(tmp_path / "docs" / "sub" / "two.md", "two")
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kw: str(tmp_path / "docs"))
    click_and_wait(qtbot, panel, panel.add_folder_button)
    assert column(panel, 0) == ["one.txt", "two.md"]


def test_bad_sources_are_listed_with_reasons_and_good_ones_kept(qtbot, panel, tmp_path):
    good = write(tmp_path / "good.txt", "fine text")
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x00\x01\x02")
    bad_json = write(tmp_path / "bad.jsonl", '{"text": "kept"}\n{oops\n')
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([good, binary, bad_json])
    statuses = dict(zip(column(panel, 0), column(panel, 2)))
    assert statuses["blob.txt"].startswith("skipped: binary file")
    assert statuses["bad.jsonl"] == "loaded" and statuses["good.txt"] == "loaded"
    assert dict(zip(column(panel, 0), column(panel, 6)))["bad.jsonl"] == "1"
    assert panel.message_bar.level == "warning"
    assert "blob.txt (binary file" in panel.message_bar.text and "1 problem line(s)" in panel.message_bar.text
    row = column(panel, 0).index("bad.jsonl")
    panel.table.selectRow(row)
    assert "line 2: invalid JSON" in panel.details.text()


def test_nothing_usable_shows_an_error_and_keeps_the_previous_corpus(qtbot, panel, tmp_path):
    f = write(tmp_path / "d.jsonl", json.dumps({"text": "kept text"}) + "\n")
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([f])
    before = panel.workspace.corpus
    panel.options_row.field_edit.clear()
    qtbot.keyClicks(panel.options_row.field_edit, "missing")
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        qtbot.keyClick(panel.options_row.field_edit, Qt.Key.Key_Return)
    assert panel.workspace.corpus is before
    assert panel.message_bar.level == "error"
    assert "No usable text" in panel.message_bar.text and "d.jsonl: no usable text" in panel.message_bar.text
    assert "line 1: no field 'missing'" in panel.message_bar.text
    assert "previous corpus is kept" in panel.message_bar.text
    assert column(panel, 0) == ["d.jsonl"]


def test_remove_selected_source(qtbot, panel, tmp_path):
    a = write(tmp_path / "a.txt", "alpha")
    b = write(tmp_path / "b.txt", "beta gamma")
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([a, b])
    assert not panel.remove_button.isEnabled()
    panel.table.selectRow(0)
    assert panel.remove_button.isEnabled()
    click_and_wait(qtbot, panel, panel.remove_button)
    assert column(panel, 0) == ["b.txt"]
    assert panel.workspace.corpus.words == 2


def test_removing_the_last_source_clears_the_corpus(qtbot, panel, tmp_path):
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([write(tmp_path / "a.txt", "alpha")])
    panel.table.selectRow(0)
    with qtbot.waitSignal(panel.workspace.corpus_changed):
        qtbot.mouseClick(panel.remove_button, Qt.MouseButton.LeftButton)
    assert panel.workspace.corpus is None and panel.table.rowCount() == 0
    assert panel.statistics.totals.text() == "No corpus loaded"


def test_use_builtin_corpus(qtbot, panel):
    click_and_wait(qtbot, panel, panel.builtin_button)
    assert column(panel, 0) == [BUILTIN_LABEL]
    assert panel.workspace.corpus.documents > 5_000
    _x, y = panel.statistics.histogram_curve.getData()
    assert y.sum() == panel.workspace.corpus.documents


def test_drag_and_drop_adds_files(qtbot, panel, tmp_path):
    f = write(tmp_path / "dropped.txt", "dropped words here")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(f))])
    event = QDropEvent(
        QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.dropEvent(event)
    assert column(panel, 0) == ["dropped.txt"]


def test_changing_the_text_unit_rereads(qtbot, panel, tmp_path):
    f = write(tmp_path / "a.txt", "one\ntwo\n\nthree")
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([f])
    assert panel.workspace.corpus.documents == 2
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.options_row.unit_combo.setCurrentIndex(panel.options_row.unit_combo.findData("line"))
    assert panel.workspace.corpus.documents == 3


def test_typing_a_jsonl_field_rereads(qtbot, panel, tmp_path):
    f = write(tmp_path / "d.jsonl", json.dumps({"body": "in the body"}) + "\n" + json.dumps({"text": "t"}) + "\n")
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([f])
    assert list(panel.workspace.corpus.iter_documents()) == ["t"]
    panel.options_row.field_edit.clear()
    assert "border" in panel.options_row.field_edit.styleSheet()  # an empty name is marked as typed
    qtbot.keyClicks(panel.options_row.field_edit, "body")
    assert panel.options_row.field_edit.styleSheet() == ""
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        qtbot.keyClick(panel.options_row.field_edit, Qt.Key.Key_Return)
    assert list(panel.workspace.corpus.iter_documents()) == ["in the body"]


def test_cancel_keeps_the_previous_corpus(qtbot, panel, tmp_path):
    small = write(tmp_path / "small.txt", "small")
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([small])
    before = panel.workspace.corpus
    big = tmp_path / "big.txt"
    with open(big, "w") as out:
        for _ in range(300_000):
            out.write("many words on many lines\n")
    panel.options_row.unit_combo.blockSignals(True)
    panel.options_row.unit_combo.setCurrentIndex(panel.options_row.unit_combo.findData("line"))
    panel.options_row.unit_combo.blockSignals(False)
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([big])
        assert panel.progress_row.isVisibleTo(panel) and not panel.add_files_button.isEnabled()
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert panel.workspace.corpus is before
    assert panel.message_bar.level == "info" and "cancelled" in panel.message_bar.text
    assert not panel.progress_row.isVisibleTo(panel) and panel.add_files_button.isEnabled()


def test_parquet_shards_and_compressed_files_are_sources_like_any_other(qtbot, panel, tmp_path, monkeypatch):
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "shards").mkdir()
    pq.write_table(pa.table({"text": ["alpha beta", None, "gamma"]}), tmp_path / "shards" / "train-0.parquet")
    (tmp_path / "shards" / "notes.jsonl.gz").write_bytes(gzip.compress(b'{"text": "delta epsilon"}\n'))
    (tmp_path / "shards" / "cut.txt.gz").write_bytes(gzip.compress(b"zeta eta theta\n" * 400)[:-30])
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kw: str(tmp_path / "shards"))
    click_and_wait(qtbot, panel, panel.add_folder_button)
    rows = {
        name: (kind, status, documents) for name, kind, status, documents in zip(*(column(panel, i) for i in range(4)))
    }
    assert rows["train-0.parquet"][1:] == ("loaded", "2") and rows["notes.jsonl.gz"][1:] == ("loaded", "1")
    assert rows["cut.txt.gz"][1].startswith("skipped: damaged or cut short compressed data")
    assert panel.workspace.corpus.documents == 3


def test_a_hub_dataset_in_the_local_cache_is_added_by_its_name(qtbot, panel, tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PySide6.QtWidgets import QInputDialog

    shard = pa.BufferOutputStream()
    pq.write_table(pa.table({"text": ["alpha beta", "gamma delta"]}), shard)
    files = {"data/train-00000-of-00001.parquet": shard.getvalue().to_pybytes()}
    point_main_at(add_snapshot(tmp_path / "hub", "someone/notes", files, "main", kind="dataset"))
    use_cache(monkeypatch, tmp_path / "hub")
    monkeypatch.setattr(QInputDialog, "getText", lambda *args, **kw: ("someone/notes", True))
    click_and_wait(qtbot, panel, panel.hub_button)
    assert column(panel, 0) == ["train-00000-of-00001.parquet"] and panel.workspace.corpus.documents == 2
    monkeypatch.setattr(QInputDialog, "getText", lambda *args, **kw: ("nobody/absent", True))
    click_and_wait(qtbot, panel, panel.hub_button)
    assert any("not in the local Hugging Face cache" in status for status in column(panel, 2))


def test_an_empty_histogram_counts_from_zero(qtbot, panel):
    (low, high) = panel.statistics.histogram.getViewBox().viewRange()[1]
    assert low >= 0 and high > 0


def test_the_histograms_last_bar_says_it_holds_the_longest_documents(qtbot, panel, tmp_path):
    """Lengths past the 99th percentile are counted in the last bar: its axis says from where."""
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([write(tmp_path / "even.txt", "\n\n".join(["one two three"] * 100))])
    assert panel.statistics.histogram.getAxis("bottom").labelText == "words per document"
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([write(tmp_path / "long.txt", " ".join(["word"] * 50))])
    assert panel.statistics.histogram.getAxis("bottom").labelText == "words per document (the last bar: 3 or more)"
    axis = panel.statistics.histogram.getAxis("bottom")
    middle = axis.label.pos().x() + axis.label.boundingRect().width() / 2
    assert abs(middle - axis.width() / 2) <= 1  # the longer title is centred under the axis, as the short one was
    _x, y = panel.statistics.histogram_curve.getData()
    assert y.sum() == 101


def test_the_clicked_source_stays_in_view(qtbot, panel, tmp_path):
    """Its details appear below the table and take room from it; the row the user clicked is still shown."""
    panel.resize(900, 460)  # a laptop's share: the table shows a few rows
    paths = [write(tmp_path / f"s{n:02d}.txt", f"words of source {n}\n\nmore {n}") for n in range(12)]
    with qtbot.waitSignal(panel.loading_finished, timeout=LOAD_TIMEOUT_MS):
        panel.add_paths([str(p) for p in paths])
    table = panel.table
    last = table.rowCount() - 1
    table.scrollToBottom()
    qtbot.waitUntil(lambda: table.viewport().rect().contains(table.visualRect(table.model().index(last, 0))))
    rect, height = table.visualRect(table.model().index(last, 0)), table.height()
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert panel.details.text()
    qtbot.waitUntil(lambda: table.height() < height)  # the details took room from the table
    row = table.visualRect(table.model().index(last, 0))
    assert table.viewport().rect().contains(row) and table.selectionModel().selectedRows()[0].row() == last
