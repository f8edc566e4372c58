"""The engine must be usable without Qt: import every core module with Qt made unimportable."""

import subprocess
import sys

SCRIPT = r"""
import importlib, pkgutil, sys

BLOCKED = ("PySide6", "shiboken6", "pyqtgraph", "superqt", "qtpy", "PyQt5", "PyQt6")

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked in this test")

sys.meta_path.insert(0, Block())
import mlm_studio.core as core
names = [m.name for m in pkgutil.walk_packages(core.__path__, "mlm_studio.core.")]
for name in names:
    importlib.import_module(name)
import mlm_studio.cli
import mlm_studio.commands.parser
leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
assert not leaked, leaked
print(len(names))
"""


def test_every_core_module_imports_without_qt():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= 5


def test_the_configuration_imports_without_torch_or_tokenizers():
    script = (
        "import sys, mlm_studio.core.config.run_config, mlm_studio.core.config.sections\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'tokenizers', 'PySide6'}))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


WINDOW_RULES = (
    "mlm_studio.ui.panels.corpus.report",
    "mlm_studio.ui.panels.playground.masked_text",
    "mlm_studio.ui.panels.playground.prediction",
    "mlm_studio.ui.widgets.status_lines",
)


def test_the_rules_the_window_shows_import_without_qt():
    """What the Corpus panel says of a corpus, how the Playground predicts and edits its sentence, and what the
    status bar says are kept apart from their widgets, and are tested without a window."""
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]: importlib.import_module(name)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'PySide6', 'shiboken6', 'pyqtgraph'}))"
    )
    result = subprocess.run([sys.executable, "-c", script, *WINDOW_RULES], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
