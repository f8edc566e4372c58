"""What the window remembers between starts (QSettings): geometry and splitters, the last panel, the corpus
sources and reading options, the configuration, the probes, the runs folder, the plots' axis and smoothing, the
playground's choice of exact weights, and the colour scheme. A value from another version or a damaged file is
ignored, never fatal."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QSplitter

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.data.builtin_corpus import builtin_corpus_location
from mlm_studio.core.data.corpus import ReadOptions
from mlm_studio.core.evaluation.probes import Probe

if TYPE_CHECKING:
    from mlm_studio.ui.main_window import MainWindow


def restore(window: MainWindow, settings: QSettings | None) -> None:
    """Reopen the last session, or the built-in corpus on first start."""
    paths = []
    if settings is not None:
        try:
            _restore_values(window, settings)
        except (ValueError, TypeError, ConfigError):
            pass  # settings from another version or a damaged file: keep the defaults
        paths = [p for p in settings.value("corpus/paths", [], type=list) if p]
    if paths and paths != [str(builtin_corpus_location())]:
        window.corpus_panel.add_paths(paths)
    else:
        window.corpus_panel.use_builtin()


def _restore_values(window: MainWindow, settings: QSettings) -> None:
    window.corpus_panel.set_options(
        ReadOptions(
            text_unit=str(settings.value("corpus/text_unit", "paragraph")),
            jsonl_field=str(settings.value("corpus/jsonl_field", "text")),
            table_column=str(settings.value("corpus/table_column", "text")),
        )
    )
    config = settings.value("training/config")
    if config:
        window.workspace.set_config(RunConfig.from_toml(str(config), "saved settings"))
    probes = settings.value("training/probes")
    if probes:
        window.training_panel.set_probes([Probe(**p) for p in json.loads(str(probes))])
    window.playground_panel.exact_check.setChecked(settings.value("playground/exact_weights", False, type=bool))
    curves = window.training_panel.curves
    curves.axis_combo.setCurrentIndex(max(0, curves.axis_combo.findData(settings.value("plots/axis", "step"))))
    curves.smoothing_slider.setValue(int(settings.value("plots/smoothing", curves.smoothing_slider.value())))
    for index, splitter in enumerate(window.findChildren(QSplitter)):
        state = settings.value(f"splitters/{index}")
        if isinstance(state, QByteArray):
            splitter.restoreState(state)
    window.navigation.setCurrentRow(int(settings.value("window/panel", 0)))


def save(window: MainWindow, settings: QSettings | None) -> None:
    if settings is None:
        return
    options = window.workspace.read_options
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
    settings.setValue("runs/root", str(window.training_panel.runs_root))
    settings.setValue("playground/exact_weights", window.playground_panel.exact_check.isChecked())
    settings.setValue("plots/axis", window.training_panel.curves.axis_combo.currentData())
    settings.setValue("plots/smoothing", window.training_panel.curves.smoothing_slider.value())
    for index, splitter in enumerate(window.findChildren(QSplitter)):
        settings.setValue(f"splitters/{index}", splitter.saveState())
    settings.sync()
