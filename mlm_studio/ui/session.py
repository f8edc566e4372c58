"""What the window remembers between starts (QSettings): geometry and splitters, the last panel, the corpus
sources and reading options, the configuration, the probes, the runs folder and the current run, the plots' axis and
smoothing, the playground's choice of exact weights, the Fine-tune form, the task probe's labelled file, and the
colour scheme.

Every value is read through a validator: one of another type, another version or out of its widget's range is
ignored (the default stays), never fatal. Splitters are remembered by their `objectName`, so a state always returns
to the splitter that saved it whatever order the panels were built in, and only its sizes return: the orientation
is the layout's, never the settings file's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings
from PySide6.QtWidgets import QListWidget, QSplitter

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.data.builtin_corpus import builtin_corpus_location
from mlm_studio.core.data.corpus import ReadOptions
from mlm_studio.core.training.probes import Probe

if TYPE_CHECKING:
    from mlm_studio.ui.panels.corpus.panel import CorpusPanel
    from mlm_studio.ui.panels.evaluation.panel import EvaluationPanel
    from mlm_studio.ui.panels.finetune.panel import FinetunePanel
    from mlm_studio.ui.panels.playground.panel import PlaygroundPanel
    from mlm_studio.ui.panels.training.panel import TrainingPanel
    from mlm_studio.ui.workspace import Workspace

SPLITTERS = "splitters"
PENDING = "splitter-state-pending"  # the name of a splitter's restorer until it is first shown
VERSION = 2  # of what is written here; 1 saved splitters by their index
T = TypeVar("T")


class Remembered(Protocol):
    """A panel whose values the window remembers between starts."""

    def state(self) -> dict[str, object]: ...
    def restore(self, state: dict[str, object]) -> None: ...


class Window(Protocol):
    """What is remembered of the main window (its `MainWindow` restores and saves itself through this module)."""

    workspace: Workspace
    corpus_panel: CorpusPanel
    training_panel: TrainingPanel
    playground_panel: PlaygroundPanel
    evaluation_panel: EvaluationPanel
    finetune_panel: FinetunePanel
    navigation: QListWidget
    scheme: str  # "system", "light" or "dark"

    def saveGeometry(self) -> QByteArray: ...
    def restoreGeometry(self, geometry: QByteArray) -> bool: ...
    def findChildren(self, kind: type[T]) -> list[T]: ...


def restore(window: Window, settings: QSettings | None) -> None:
    """Reopen the last session, or the built-in corpus on first start. Each value is restored on its own: a bad
    one costs only itself."""
    paths = []
    if settings is not None:
        for step in _RESTORE_STEPS:
            try:
                step(window, settings)
            except (ValueError, TypeError, OverflowError, KeyError, ConfigError):
                pass  # from another version or a damaged file: that value keeps its default
        paths = [p for p in _value(settings, "corpus/paths", list, []) if isinstance(p, str) and p]
    if paths and paths != [str(builtin_corpus_location())]:
        window.corpus_panel.add_paths(paths)
    else:
        window.corpus_panel.use_builtin()


def bounded_int(settings: QSettings, key: str, default: int, low: int, high: int) -> int:
    """An integer setting within [`low`, `high`]; anything else (text, a float, a huge number) gives `default`."""
    raw = settings.value(key, default)
    try:
        number = int(str(raw).strip())
    except (TypeError, ValueError):
        return default
    return number if low <= number <= high else default


def _value(settings: QSettings, key: str, kind: type[T], default: T, valid: Callable[[T], bool] = bool) -> T:
    """A setting of type `kind` that `valid` accepts, else `default` (a list stored with one item reads as a string)."""
    raw: Any = settings.value(key, default)
    if kind is list and isinstance(raw, str):
        raw = [raw]
    return raw if isinstance(raw, kind) and valid(raw) else default


def _restore_options(window: Window, settings: QSettings) -> None:
    window.corpus_panel.set_options(
        ReadOptions(
            text_unit=str(settings.value("corpus/text_unit", "paragraph")),
            jsonl_field=str(settings.value("corpus/jsonl_field", "text")),
            table_column=str(settings.value("corpus/table_column", "text")),
        )
    )


def _restore_config(window: Window, settings: QSettings) -> None:
    config = _value(settings, "training/config", str, "")
    if config:
        window.workspace.set_config(RunConfig.from_toml(config, "saved settings"))


def _restore_probes(window: Window, settings: QSettings) -> None:
    probes = _value(settings, "training/probes", str, "")
    if probes:
        window.training_panel.set_probes([Probe(**p) for p in json.loads(probes)])


def remembered_panels(window: Window) -> list[tuple[str, Remembered]]:
    """The panels that give their remembered values (`state()`) and take them back (`restore`), each with the
    settings group that keeps them."""
    return [
        ("plots", window.training_panel),
        ("playground", window.playground_panel),
        ("finetune", window.finetune_panel),
        ("evaluation", window.evaluation_panel),
    ]


def _restore_panels(window: Window, settings: QSettings) -> None:
    """Each panel's remembered values, as the settings file gives them: the panel checks each one."""
    for group, panel in remembered_panels(window):
        keys = [key for key in panel.state() if settings.contains(f"{group}/{key}")]
        panel.restore({key: settings.value(f"{group}/{key}") for key in keys})


def _restore_splitters(window: Window, settings: QSettings) -> None:
    """Each named splitter's sizes, as saved by this version, once it is shown at its real size (sizes given to a
    splitter not yet laid out would be stretched on the way there); its orientation stays the layout's."""
    if bounded_int(settings, "session/version", 1, 1, VERSION) != VERSION:
        return  # splitters saved by their index belong to whichever splitter came first then: not restored
    for splitter in named_splitters(window):
        state = settings.value(f"{SPLITTERS}/{splitter.objectName()}")
        if isinstance(state, QByteArray):
            if splitter.isVisible():
                _restore_splitter(splitter, state)
            else:
                _RestoreWhenShown(splitter, state)


def _restore_splitter(splitter: QSplitter, state: QByteArray) -> None:
    orientation = splitter.orientation()
    splitter.restoreState(state)
    splitter.setOrientation(orientation)


class _RestoreWhenShown(QObject):
    """Restores a splitter's state the first time it is shown, then goes."""

    def __init__(self, splitter: QSplitter, state: QByteArray) -> None:
        super().__init__(splitter)
        self.setObjectName(PENDING)
        self.state = state
        splitter.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show:
            watched.removeEventFilter(self)
            self.setObjectName("")
            _restore_splitter(watched, self.state)
            self.deleteLater()
        return False


def _restore_current_run(window: Window, settings: QSettings) -> None:
    """The run the window last trained stays the current run, where it still is a pre-training run."""
    from mlm_studio.core.runs.history import PRETRAINING, run_kind

    path = _value(settings, "runs/current", str, "")
    if path and (Path(path) / "config.toml").is_file() and run_kind(path) == PRETRAINING:
        window.workspace.set_run(Path(path))


def _restore_panel(window: Window, settings: QSettings) -> None:
    last = window.navigation.count() - 1
    window.navigation.setCurrentRow(bounded_int(settings, "window/panel", 0, 0, last))


_RESTORE_STEPS = (
    _restore_options,
    _restore_config,
    _restore_probes,
    _restore_splitters,
    _restore_current_run,
    _restore_panels,  # after the current run: the Fine-tune form then offers it, and takes back the model it had
    _restore_panel,
)


def named_splitters(window: Window) -> list[QSplitter]:
    """The window's splitters that are remembered: those with a name."""
    return [splitter for splitter in window.findChildren(QSplitter) if splitter.objectName()]


def save(window: Window, settings: QSettings | None) -> None:
    if settings is None:
        return
    options = window.workspace.read_options
    settings.setValue("session/version", VERSION)
    settings.setValue("window/geometry", window.saveGeometry())
    settings.setValue("window/panel", window.navigation.currentRow())
    settings.setValue("view/scheme", window.scheme)
    settings.setValue("corpus/paths", [str(p) for p in window.corpus_panel.paths])
    settings.setValue("corpus/text_unit", options.text_unit)
    settings.setValue("corpus/jsonl_field", options.jsonl_field)
    settings.setValue("corpus/table_column", options.table_column)
    settings.setValue("training/config", window.workspace.config.to_toml())
    try:
        probes = [p.__dict__ for p in window.training_panel.probes()]
        settings.setValue("training/probes", json.dumps(probes))
    except ValueError:
        pass  # an unfinished probe is not remembered
    settings.setValue("runs/root", str(window.workspace.runs_root))
    settings.setValue("runs/current", str(window.workspace.run or ""))
    for group, panel in remembered_panels(window):
        for key, value in panel.state().items():
            settings.setValue(f"{group}/{key}", value)
    splitters = {splitter.objectName(): splitter for splitter in named_splitters(window)}
    settings.beginGroup(SPLITTERS)
    for key in settings.childKeys():
        if key not in splitters:  # saved by index, or by a name no longer used
            settings.remove(key)
    settings.endGroup()
    for name, splitter in splitters.items():
        if splitter.findChild(QObject, PENDING) is None:  # one never shown keeps what it was given
            settings.setValue(f"{SPLITTERS}/{name}", splitter.saveState())
    settings.sync()
