"""The Evaluation panel's Search tab, used as a person would: evaluate a run, embed the corpus, type a query, press
Enter, read the ranked documents with their cosines; another evaluation forgets the embedded documents."""

import threading

import pytest
from PySide6.QtCore import Qt

from mlm_studio.ui.panels.evaluation.panel import EvaluationPanel
from mlm_studio.ui.workspace import Workspace

TIMEOUT_MS = 120_000


@pytest.fixture
def panel(qtbot, trained_runs, small_corpus):
    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_runs_root(trained_runs)
    widget = EvaluationPanel(workspace)
    qtbot.addWidget(widget)
    widget.resize(1280, 720)
    widget.show()
    return widget


def test_embed_type_a_query_press_enter_and_see_ranked_documents(qtbot, panel, trained_runs, small_corpus, tmp_path):
    view = panel.search_view
    assert panel.tabs.tabText(panel.tabs.indexOf(view)) == "Search"
    panel.tabs.setCurrentWidget(view)
    qtbot.mouseClick(view.embed_button, Qt.MouseButton.LeftButton)
    assert view.message_bar.level == "warning" and "Evaluate a model" in view.message_bar.text
    assert not view.query_edit.isEnabled()

    panel.model_combo.setCurrentIndex(panel.model_combo.findData(str(trained_runs / "late")))
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.evaluate_button, Qt.MouseButton.LeftButton)
    assert view.layer_spin.maximum() == 1
    with qtbot.waitSignal(view.embedded, timeout=TIMEOUT_MS):
        qtbot.mouseClick(view.embed_button, Qt.MouseButton.LeftButton)
    documents = list(small_corpus.iter_documents())
    distinct = {" ".join(d.split()) for d in documents}
    assert len(view.index.texts) == len(distinct) == 355 and len(documents) == 400  # 45 repeat another's text
    assert view.message_bar.text == (
        f"Embedded 400 documents with {panel.results.subject.title}. 45 of them repeat another's text: 355 distinct "
        "texts are searched."
    )
    assert view.query_edit.isEnabled() and view.embed_button.isEnabled() and view.progress_bar.isHidden()

    query = min((d for d in documents if len(d) > 30), key=len)  # a document of the corpus, typed in
    view.k_spin.setValue(5)
    qtbot.keyClicks(view.query_edit, query)
    with qtbot.waitSignal(view.searched, timeout=TIMEOUT_MS):
        qtbot.keyClick(view.query_edit, Qt.Key.Key_Return)
    table = view.table
    assert table.rowCount() == 5
    assert [table.item(r, 0).text() for r in range(5)] == ["1", "2", "3", "4", "5"]
    scores = [float(table.item(r, 1).text()) for r in range(5)]
    assert scores[0] == 1.0 and scores == sorted(scores, reverse=True)
    assert table.item(0, 2).text() == " ".join(query.split())
    assert [h.text for h in view.hits] == [h.text for h in view.index.nearest(query, 5)]
    view.grab().save(str(tmp_path / "search.png"))

    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):  # another model: its own vectors are needed
        qtbot.mouseClick(panel.evaluate_button, Qt.MouseButton.LeftButton)
    assert view.index is None and table.rowCount() == 0 and not view.query_edit.isEnabled()


def test_embedding_can_be_cancelled(qtbot, panel, trained_runs, monkeypatch):
    """Cancel pressed while the documents are read: the engine's next check stops it (held until then, so the
    embedding cannot end first)."""
    from mlm_studio.ui.panels.evaluation import search_view

    panel.model_combo.setCurrentIndex(panel.model_combo.findData(str(trained_runs / "late")))
    with qtbot.waitSignal(panel.evaluated, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.evaluate_button, Qt.MouseButton.LeftButton)
    pressed = threading.Event()
    monkeypatch.setattr(search_view, "build_index", lambda *args: pressed.wait(60) and args[-1].check())
    view = panel.search_view
    with qtbot.waitSignal(view.runner.cancelled, timeout=TIMEOUT_MS):
        view.embed()
        assert view.cancel_button.isVisibleTo(view) and not view.embed_button.isEnabled()
        qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
        pressed.set()
    assert view.message_bar.text == "Cancelled." and view.index is None and view.embed_button.isEnabled()
