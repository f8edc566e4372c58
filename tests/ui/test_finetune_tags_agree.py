"""A tagger gives one answer per word: the chips of the window's Try it, `predict --json` (in a subprocess) and the
exported model's pipeline with the aggregation its model card names (`"first"`) tag every word as the test scores
read it, on its first piece, even where the model tags a word's later pieces otherwise; grouping every piece by its
own tag (`"simple"`) would split such a word across two types."""

import json
import os
import subprocess
import sys

import pytest

from mlm_studio.ui.panels.finetune.try_it import TryItView

transformers = pytest.importorskip("transformers")

TIMEOUT_MS = 60_000
TEXTS = [  # names the tagger learned, glued into words of several pieces it never saw, and alone
    "to kjqqjzyxxy, wyzzy!  the   qqjkq",
    "a zyxwyz of kjqzxy",
    "the zyxxy wyzzy of a list",
    "kjqqj qjkkj is the zxyzx wxxyz.",
    "wyzzyzyxxy of qjkkjkjqqj",
]


def _per_character(text, found):
    """Each character's entity type in `found` ({"entity_group", "start", "end"}), None outside any."""
    types = [None] * len(text)
    for entity in found:
        types[entity["start"] : entity["end"]] = [entity["entity_group"]] * (entity["end"] - entity["start"])
    return types


def _on_screen(view, text):
    """Each character's type as the chips show it: an entity chip is "its text · TYPE", a plain one a word."""
    types, cursor = [None] * len(text), 0
    for cell in view.chips.cells:
        shown, kind = cell.text.rsplit(" · ", 1) if cell.background is not None else (cell.text, None)
        start = text.index(shown, cursor)
        types[start : start + len(shown)] = [kind] * len(shown)
        cursor = start + len(shown)
    return types


def _word_types(words, types):
    """Each word's set of types over its characters: one, where a word is never split."""
    return [{types[i] for i in range(word["start"], word["end"])} for word in words]


def test_tags_on_screen_in_predict_json_and_from_the_exported_pipeline_agree_word_by_word(qtbot, exported_tagger):
    ours, exported = exported_tagger
    assert 'aggregation_strategy="first"' in (exported / "README.md").read_text(encoding="utf-8")  # as the card says
    pipe = transformers.pipeline("token-classification", model=str(exported), aggregation_strategy="first")
    printed = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "predict", str(ours.run.path), "-", "--json"],
        input="\n".join(TEXTS), capture_output=True, text=True, timeout=300, encoding="utf-8",
        env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    from_predict = [json.loads(line) for line in printed.stdout.splitlines()]
    view = TryItView()
    qtbot.addWidget(view)
    view.set_run(ours.run.path)
    differing = split_by_pieces = 0
    for text, predicted in zip(TEXTS, from_predict, strict=True):
        with qtbot.waitSignal(view.runner.succeeded, timeout=TIMEOUT_MS):
            view.text_edit.setPlainText(text)
        tagged = ours.tag_text(text)
        words = tagged.words
        scored = [tag.split("-", 1)[-1] if tag != "O" else None for tag in ours.tag([w["word"] for w in words])]
        expected = [{kind} for kind in scored]  # as the test scores read each word: on its first piece
        assert _word_types(words, _on_screen(view, text)) == expected, text
        assert _word_types(words, _per_character(text, predicted)) == expected, text
        assert _word_types(words, _per_character(text, pipe(text))) == expected, text
        differing += sum(word["pieces_differ"] for word in words)
        split_by_pieces += sum(
            len(kinds) > 1 for kinds in _word_types(words, _per_character(text, tagged.piece_entities))
        )
    assert differing >= 2  # the case at hand: words whose later pieces the model tags otherwise
    assert split_by_pieces >= 1  # which "simple" would have split across two types
