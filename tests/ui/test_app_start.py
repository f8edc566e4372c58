import os
import subprocess
import sys

import pytest

PANELS = ("corpus", "masking", "config", "training", "playground", "evaluation", "finetune")
MASKING_PARTS = ("form", "samples", "rates")

SCRIPT = """
import logging, os, sys
logging.basicConfig(level=logging.WARNING)
if {torch_first}:
    import torch
from mlm_studio.ui.app import keep_openmp_threads_ready
keep_openmp_threads_ready()
print(os.environ["OMP_WAIT_POLICY"], os.environ["GOMP_SPINCOUNT"])
"""


def _start(torch_first: bool, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.format(torch_first=torch_first)],
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_the_window_sets_openmps_wait_policy_before_pytorch_loads():
    done = _start(torch_first=False)
    assert done.stdout.split() == ["ACTIVE", "300000"]
    assert "already loaded" not in done.stderr


def test_a_users_own_setting_wins_and_a_late_call_says_it_has_no_effect():
    done = _start(torch_first=True, OMP_WAIT_POLICY="PASSIVE")
    assert done.stdout.split() == ["PASSIVE", "300000"]
    assert "PyTorch is already loaded" in done.stderr


PRELOAD = """
import sys
from mlm_studio.ui.engine_loading import preload_torch_libraries
preload_torch_libraries()
with open("/proc/self/maps") as maps:
    loaded = maps.read()
print("torch" in sys.modules, "libtorch_cpu" in loaded)
import torch
print(torch.ones(2).sum().item())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_pytorchs_libraries_load_before_pytorch_is_imported():
    """The libraries come in through dlopen (which runs without Python's lock); the import then uses them."""
    done = subprocess.run([sys.executable, "-c", PRELOAD], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["False", "True", "2.0"]


def test_the_panels_are_built_one_per_turn_of_the_event_loop(qtbot, tmp_path):
    """After the engine loads, the window gets back to its events between one panel and the next."""
    from PySide6.QtCore import QSettings, QTimer

    from mlm_studio.ui.main_window import MainWindow
    from mlm_studio.ui.widgets.live_plots import LivePlots

    window = MainWindow(QSettings(str(tmp_path / "first.ini"), QSettings.Format.IniFormat), deferred=True)
    qtbot.addWidget(window)
    window.show()
    built, turns, tabs, plots = [], [], [], []
    ticker = QTimer()
    ticker.timeout.connect(lambda: turns.append(sum(hasattr(window, f"{n}_panel") for n in PANELS)))
    evaluation = lambda: getattr(window, "evaluation_panel", None)  # noqa: E731
    ticker.timeout.connect(lambda: evaluation() and tabs.append(evaluation().tabs.count()))
    training = lambda: getattr(window, "training_panel", None)  # noqa: E731
    ticker.timeout.connect(lambda: training() and plots.append(len(training().plots.plots)))
    tuning = lambda: getattr(window, "finetune_panel", None)  # noqa: E731
    tuned = []
    ticker.timeout.connect(lambda: tuning() and tuned.append(len(tuning().plots.plots)))
    masking = lambda: getattr(window, "masking_panel", None)  # noqa: E731
    parts = []
    ticker.timeout.connect(lambda: masking() and parts.append(sum(hasattr(masking(), n) for n in MASKING_PARTS)))
    config = lambda: getattr(window, "config_panel", None)  # noqa: E731
    groups = []
    ticker.timeout.connect(lambda: config() and groups.append(len({config().fields[k][0] for k in config().editors})))
    ticker.start(0)
    with qtbot.waitSignal(window.panels_ready, timeout=120_000):
        window.panels_ready.connect(lambda: built.append(True))
    ticker.stop()
    assert built and set(range(1, len(PANELS) + 1)) <= set(turns)  # the loop turned with each count of panels
    assert {0, 1, 2, 3, 4} <= set(tabs)  # and between the Evaluation panel's tabs, built one per turn
    assert window.evaluation_panel.tabs.count() == 5
    assert set(range(1, 7)) <= set(plots)  # and between the Training panel's live plots, built one per turn
    assert len(window.training_panel.plots.plots) == len(LivePlots.PLOTS)
    assert set(range(1, 5)) <= set(tuned)  # the Fine-tune panel's live plots, one per turn too
    assert {1, 2, 3} <= set(parts)  # the Masking panel's form, samples and measured rates, one per turn
    assert set(range(6)) <= set(groups)  # the Configuration panel's preset bar, then a group of fields per turn


def test_an_evaluation_panel_shown_before_its_tabs_are_built_builds_them_then(qtbot, tmp_path):
    from mlm_studio.ui.panels.evaluation.panel import EvaluationPanel
    from mlm_studio.ui.workspace import Workspace

    panel = EvaluationPanel(Workspace(runs_root=tmp_path), sliced=True)
    qtbot.addWidget(panel)
    next(panel.construction.steps)  # the window's first step: the controls
    assert panel.tabs.count() == 0 and not hasattr(panel, "task_view")
    panel.show()
    assert [panel.tabs.tabText(i) for i in range(panel.tabs.count())] == [
        "Masked samples",
        "Where it fails",
        "What it learned",
        "Does it help a task",
        "Search",
    ]
    assert not panel.evaluate_button.isEnabled() and not panel.task_view.probe_button.isEnabled()  # no model yet
    assert next(panel.construction.steps, None) is None  # nothing left for the window to build


def test_a_masking_panel_shown_before_it_is_built_builds_it_then_with_the_workspace_as_it_is(
    qtbot, small_corpus, small_tokenizer
):
    """What the workspace got while the panel was half built is what it shows once whole."""
    from dataclasses import replace

    from mlm_studio.ui.panels.masking.panel import MaskingPanel
    from mlm_studio.ui.workspace import Workspace

    workspace = Workspace()
    panel = MaskingPanel(workspace, sliced=True)
    qtbot.addWidget(panel)
    next(panel.construction.steps)  # the window's first step: the form
    assert [hasattr(panel, name) for name in MASKING_PARTS] == [True, False, False]
    workspace.set_config(replace(workspace.config, masking=replace(workspace.config.masking, rate=0.3)))
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    assert panel.form.rate_spin.value() == 0.15 and not panel.data_runner.running  # nothing reached it yet
    with qtbot.waitSignal(panel.preview_updated, timeout=60_000):
        panel.show()
    assert all(hasattr(panel, name) for name in MASKING_PARTS)
    assert next(panel.construction.steps, None) is None  # nothing left for the window to build
    assert panel.form.rate_spin.value() == 0.3 and panel.preview_config.rate == 0.3
    assert panel.samples.views[0].cells[0].text == "[CLS]" and not panel.empty_label.isVisible()
    workspace.set_config(replace(workspace.config, masking=replace(workspace.config.masking, rate=0.2)))
    assert panel.form.rate_spin.value() == 0.2  # and the workspace's news from then on
    qtbot.wait_until(lambda: not panel._refresh_timer.isActive() and not panel.preview_runner.running, timeout=60_000)


def test_a_configuration_panel_shown_before_its_fields_are_built_builds_them_then(qtbot):
    from mlm_studio.core.config.presets import preset
    from mlm_studio.ui.panels.config.fields import form_fields
    from mlm_studio.ui.panels.config.panel import ConfigPanel
    from mlm_studio.ui.workspace import Workspace

    workspace = Workspace()
    panel = ConfigPanel(workspace, sliced=True)
    qtbot.addWidget(panel)
    next(panel.construction.steps)  # the window's first step: the preset bar
    assert panel.editors == {}
    next(panel.construction.steps)  # the Model group
    assert {panel.fields[key][0] for key in panel.editors} == {"Model"}
    validity = []
    panel.validity_changed.connect(validity.append)
    workspace.set_config(preset("mini"))
    panel.show()
    assert list(panel.editors) == list(form_fields())  # every field, in the form's order
    assert next(panel.construction.steps, None) is None  # nothing left for the window to build
    assert panel.preset_combo.currentData() == "mini" and validity == [""]
    assert panel.editors[("model", "hidden_size")].value() == 256 and panel.error_label.isHidden()
    workspace.set_config(preset("tiny"))
    assert panel.editors[("model", "hidden_size")].value() == 128  # the workspace's news from then on


FROZEN = """
import gc
from mlm_studio.ui.engine_loading import import_engine
gc.disable()  # as the application's collector leaves it
import_engine()
print(gc.isenabled(), gc.get_freeze_count(), len(gc.get_objects()))
gc.enable()
import_engine()
print(gc.isenabled())
"""


def test_what_the_engine_import_made_is_never_scanned_by_a_collection_again():
    """A full collection over PyTorch's objects held the window for 0.1-0.2 s; frozen, they are not scanned."""
    done = subprocess.run([sys.executable, "-c", FROZEN], capture_output=True, text=True, timeout=120, check=True)
    first, second = done.stdout.splitlines()
    enabled, frozen, scanned = first.split()
    assert enabled == "False" and second == "True"  # the collector is left as it was found
    assert int(frozen) > 100_000 and int(scanned) < int(frozen) // 100


def test_a_training_panel_shown_before_its_plots_are_built_builds_them_then(qtbot, tmp_path):
    from mlm_studio.ui.panels.training.panel import TrainingPanel
    from mlm_studio.ui.widgets.live_plots import LivePlots
    from mlm_studio.ui.workspace import Workspace

    panel = TrainingPanel(Workspace(runs_root=tmp_path), sliced=True)
    qtbot.addWidget(panel)
    next(panel.construction.steps)  # the window's first step: the first plot
    assert list(panel.plots.plots) == ["loss"] and not panel.plots.timer.isActive()
    panel.resize(1000, 700)
    panel.show()
    assert list(panel.plots.plots) == list(LivePlots.PLOTS)
    assert panel.plots.timer.isActive() and panel.plots.columns == 3
    assert next(panel.construction.steps, None) is None  # nothing left for the window to build
    panel.plots.load([{"type": "step", "step": 1, "loss": 5.0, "tokens_seen": 64, "elapsed": 0.1}])
    assert panel.plots.series["step_loss"].size == 1


def test_live_plots_made_outside_the_window_are_built_whole(qtbot):
    from mlm_studio.ui.widgets.live_plots import LivePlots

    plots = LivePlots()
    qtbot.addWidget(plots)
    assert list(plots.plots) == list(LivePlots.PLOTS) and plots.timer.isActive()
    assert next(plots.construction.steps, None) is None


def test_records_that_reach_live_plots_still_being_built_finish_them_first(qtbot):
    from mlm_studio.ui.widgets.live_plots import LivePlots

    plots = LivePlots(sliced=True)
    qtbot.addWidget(plots)
    next(plots.construction.steps)
    plots.add("eval", {"step": 10, "loss": 4.0, "accuracy": 0.2, "tokens_seen": 640, "elapsed": 1.0})
    assert list(plots.plots) == list(LivePlots.PLOTS) and plots.series["eval_accuracy"].size == 1
    assert sum(isinstance(item, type(plots.cursors["loss"])) for item in plots.plots["loss"].items) == 1
