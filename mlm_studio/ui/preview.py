"""A panel alone, as a developer previews it: `python -m mlm_studio.ui.panels.training`.

The panel gets a workspace holding the built-in corpus and a tokenizer trained on it (unless it starts
empty). With `MLM_STUDIO_PREVIEW_PNG` set, the preview saves a screenshot there and returns instead of running.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

from PySide6.QtWidgets import QApplication, QWidget

from mlm_studio.ui.tasks import stop_all_tasks
from mlm_studio.ui.workspace import Workspace

SCREENSHOT = "MLM_STUDIO_PREVIEW_PNG"


def preview(make: Callable[[Workspace], QWidget], loaded: bool = True, size: tuple[int, int] = (1200, 760)) -> None:
    """Show `make(workspace)` in a window of its own; `loaded`: the workspace holds the built-in corpus and
    its tokenizer."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    workspace = Workspace()
    if loaded:
        corpus, tokenizer = builtin_corpus_and_tokenizer()
        workspace.set_corpus(corpus)
        workspace.set_tokenizer(tokenizer)
    panel = make(workspace)
    panel.resize(*size)
    panel.show()
    app.processEvents()
    if os.environ.get(SCREENSHOT):
        panel.grab().save(os.environ[SCREENSHOT])
        panel.close()
        stop_all_tasks()  # what the panel started in the background ends before the caller goes on (or exits)
        return
    app.exec()


@functools.cache
def builtin_corpus_and_tokenizer():
    """The built-in corpus and a tokenizer trained on it, made once for the previews a process shows."""
    from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
    from mlm_studio.core.data.corpus import load_corpus
    from mlm_studio.core.data.tokenizer import train_tokenizer

    corpus = load_corpus([ensure_builtin_corpus()])
    return corpus, train_tokenizer(corpus.iter_documents(), total=corpus.documents)
