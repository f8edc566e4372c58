import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.ui.panels.corpus.tokenizer_section import TokenizerSection
from mlm_studio.ui.workspace import Workspace

TIMEOUT_MS = 60_000


@pytest.fixture
def section(qtbot):
    widget = TokenizerSection(Workspace())
    qtbot.addWidget(widget)
    widget.resize(600, 400)
    widget.show()
    return widget


def test_a_tokenizer_is_trained_when_the_first_corpus_arrives(qtbot, section, builtin_corpus):
    assert not section.train_button.isEnabled() and not section.save_button.isEnabled()
    with qtbot.waitSignal(section.workspace.tokenizer_changed, timeout=TIMEOUT_MS):
        section.workspace.set_corpus(builtin_corpus)
    tokenizer = section.workspace.tokenizer
    assert tokenizer.vocab_size == 8000
    qtbot.waitUntil(lambda: section.save_button.isEnabled(), timeout=TIMEOUT_MS)
    assert "8,000 pieces, trained on 9," in section.summary.text() and "[UNK]" in section.summary.text()
    assert [cell.text for cell in section.pieces.cells] == tokenizer.tokens(section.sample_edit.text())


def test_the_sample_line_reads_from_its_beginning_in_a_narrow_field(qtbot, section):
    section.sample_edit.setFixedWidth(200)
    qtbot.waitExposed(section)
    edit = section.sample_edit
    assert edit.fontMetrics().horizontalAdvance(edit.text()) > edit.width()
    assert edit.cursorRect().left() < edit.fontMetrics().horizontalAdvance("M")


def test_retrain_with_settings_typed_by_the_user(qtbot, section, builtin_corpus):
    with qtbot.waitSignal(section.workspace.tokenizer_changed, timeout=TIMEOUT_MS):
        section.workspace.set_corpus(builtin_corpus)
    qtbot.waitUntil(lambda: section.train_button.isEnabled(), timeout=TIMEOUT_MS)
    section.vocab_spin.selectAll()
    qtbot.keyClicks(section.vocab_spin, "2000")
    section.lowercase_check.setChecked(False)
    with qtbot.waitSignal(section.workspace.tokenizer_changed, timeout=TIMEOUT_MS):
        qtbot.mouseClick(section.train_button, Qt.MouseButton.LeftButton)
    tokenizer = section.workspace.tokenizer
    assert tokenizer.vocab_size == 2000
    assert "Python" in tokenizer.tokens("Python is")
    section.sample_edit.setText("Python ✓")
    assert [cell.text for cell in section.pieces.cells][-1] == "[UNK] ✓"
    assert section.pieces.cells[-1].tooltip == "'✓' is not in the vocabulary: the model sees [UNK]"


def test_save_then_load_through_the_dialogs(qtbot, section, builtin_corpus, builtin_tokenizer, tmp_path, monkeypatch):
    section.workspace.set_tokenizer(builtin_tokenizer)
    section._update_buttons()
    target = tmp_path / "tok.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    qtbot.mouseClick(section.save_button, Qt.MouseButton.LeftButton)
    assert MLMTokenizer.load(target).fingerprint() == builtin_tokenizer.fingerprint()
    assert section.message_bar.level == "info"
    section.workspace.set_tokenizer(None)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(target), ""))
    with qtbot.waitSignal(section.workspace.tokenizer_changed, timeout=TIMEOUT_MS):
        qtbot.mouseClick(section.load_button, Qt.MouseButton.LeftButton)
    assert section.workspace.tokenizer.fingerprint() == builtin_tokenizer.fingerprint()
    qtbot.waitUntil(lambda: not section.runner.running, timeout=TIMEOUT_MS)
    assert "loaded from tok.json" in section.summary.text()


def test_a_bad_tokenizer_file_is_refused_and_the_current_one_kept(qtbot, section, builtin_tokenizer, tmp_path):
    section.workspace.set_tokenizer(builtin_tokenizer)
    bad = tmp_path / "vocab.txt"
    bad.write_text("hello\n")
    with qtbot.waitSignal(section.runner.finished, timeout=TIMEOUT_MS):
        section.load_path(bad)
    assert section.message_bar.level == "error" and "lacks the special token(s)" in section.message_bar.text
    assert section.workspace.tokenizer is builtin_tokenizer


def test_training_can_be_cancelled(qtbot, section, builtin_corpus, builtin_tokenizer):
    section.workspace.set_tokenizer(builtin_tokenizer)
    section.workspace.set_corpus(builtin_corpus)  # starts a statistics job; training replaces it
    with qtbot.waitSignal(section.runner.finished, timeout=TIMEOUT_MS):
        section.train()
        qtbot.mouseClick(section.cancel_button, Qt.MouseButton.LeftButton)
    assert section.workspace.tokenizer is builtin_tokenizer
    assert section.message_bar.level == "info" and "Cancelled" in section.message_bar.text


def test_a_tokenizer_chosen_while_one_is_being_trained_is_kept(qtbot, section, small_corpus, small_tokenizer):
    """The corpus starts a training; a tokenizer set meanwhile (an import, say) is not replaced when it ends."""
    with qtbot.waitSignal(section.runner.finished, timeout=TIMEOUT_MS):
        section.workspace.set_corpus(small_corpus)
        assert section.runner.running
        section.workspace.set_tokenizer(small_tokenizer)
    assert section.workspace.tokenizer is small_tokenizer


def test_a_grown_corpus_suggests_training_again(qtbot, section, small_corpus, builtin_corpus):
    with qtbot.waitSignal(section.workspace.tokenizer_changed, timeout=TIMEOUT_MS):
        section.workspace.set_corpus(small_corpus)
    qtbot.waitUntil(lambda: not section.runner.running, timeout=TIMEOUT_MS)
    assert f"trained on {small_corpus.documents:,} documents" in section.summary.text()
    assert "changed since" not in section.summary.text()
    section.workspace.set_corpus(builtin_corpus)  # the corpus grew: the vocabulary is kept, measured on it
    qtbot.waitUntil(lambda: not section.runner.running, timeout=TIMEOUT_MS)
    summary = section.summary.text()
    assert f"trained on {small_corpus.documents:,} documents" in summary
    assert f"it now has {builtin_corpus.documents:,} documents" in summary and "<b>Train</b>" in summary


def test_each_unknown_piece_names_the_characters_it_stands_for(qtbot, section, small_tokenizer):
    section.workspace.set_tokenizer(small_tokenizer)
    section.sample_edit.setText("def 数据 🙂 x")
    unknown = [cell for cell in section.pieces.cells if cell.text.startswith("[UNK]")]
    assert [cell.text for cell in unknown] == ["[UNK] 数", "[UNK] 据", "[UNK] 🙂"]  # one per character
    assert "'🙂' is not in the vocabulary" in unknown[2].tooltip
