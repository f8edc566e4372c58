"""Scenarios 1 and 2: files that would run code when opened, and damaged files. Every loader refuses them
with a message naming the file; the payload's side effect never happens; what was loaded stays loaded."""

import json
import struct
from pathlib import Path

import pytest
import torch

from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.data.tokenizer import MLMTokenizer, TokenizerError
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.models.bert import BertForMaskedLM
from mlm_studio.core.models.encoder import decay_groups
from mlm_studio.core.models.hf_folder import InteropError, import_model
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError, load_optimizer, load_weights, read_state
from mlm_studio.core.training.runs import training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.reliability.conftest import Payload

CHECKPOINT_FILES = ("model.safetensors", "optimizer.safetensors", "state.json")


def hostile_pickle(path: Path, marker: Path) -> None:
    torch.save({"weight": torch.zeros(2), "payload": Payload(marker)}, path)


def every_loader(run: Path):
    """Each way MLM Studio opens a run's files, as (name, call)."""
    checkpoint = RunDir(run).latest_checkpoint()
    model = BertForMaskedLM(RunDir(run).config.model)
    optimizer = torch.optim.AdamW(decay_groups(model, 0.01))
    return [
        ("weights", lambda: load_weights(checkpoint, model)),
        ("optimizer", lambda: load_optimizer(checkpoint, optimizer)),
        ("state", lambda: read_state(checkpoint)),
        ("config", lambda: RunDir(run).config),
        ("tokenizer", lambda: RunDir(run).tokenizer),
        ("playground", lambda: FillMask.from_path(run)),
        ("resume", lambda: Trainer(RunDir(run), *training_blocks(RunDir(run)))),
    ]


@pytest.mark.parametrize("name", [*CHECKPOINT_FILES, "config.toml", "tokenizer.json"])
def test_a_pickle_in_place_of_any_run_file_is_refused_and_never_runs(run_copy, tmp_path, name):
    marker = tmp_path / "payload-ran"
    target = RunDir(run_copy).latest_checkpoint() / name if name in CHECKPOINT_FILES else run_copy / name
    loaders = every_loader(run_copy)
    hostile_pickle(target, marker)
    messages = []
    for _, load in loaders:
        try:
            load()
        except (CheckpointError, ConfigError, TokenizerError) as exc:
            messages.append(str(exc))
    assert messages and all(name in m for m in messages), messages
    assert not marker.exists()


def test_a_pickled_hugging_face_model_that_runs_code_is_refused(finished_run, tmp_path):
    folder = export_model(finished_run, tmp_path / "export")
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "payload-ran"
    hostile_pickle(folder / "pytorch_model.bin", marker)
    for load in (lambda: import_model(folder), lambda: FillMask.from_path(folder)):
        with pytest.raises(InteropError, match=r"pytorch_model.bin.*could run code"):
            load()
    assert not marker.exists()


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def header_larger_than_file(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(struct.pack("<Q", len(data) * 10) + data[8:])


DAMAGE = {
    "truncated": truncate,
    "header larger than the file": header_larger_than_file,
    "empty": lambda p: p.write_bytes(b""),
    "garbage": lambda p: p.write_bytes(b"\x00\xff garbage \x13" * 50),
}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.safetensors"])
def test_damaged_safetensors_in_a_checkpoint_are_named(run_copy, damage, name):
    checkpoint = RunDir(run_copy).latest_checkpoint()
    DAMAGE[damage](checkpoint / name)
    model = BertForMaskedLM(RunDir(run_copy).config.model)
    with pytest.raises(CheckpointError, match=f"{checkpoint.name}: {name} cannot be read"):
        if name == "model.safetensors":
            load_weights(checkpoint, model)
        else:
            load_optimizer(checkpoint, torch.optim.AdamW(decay_groups(model, 0.01)))


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_hugging_face_weights_are_named(finished_run, tmp_path, damage):
    folder = export_model(finished_run, tmp_path / "export")
    DAMAGE[damage](folder / "model.safetensors")
    with pytest.raises(InteropError, match=r"model.safetensors in export cannot be read"):
        import_model(folder)


@pytest.mark.parametrize(
    "content",
    ["", "{", "[]", '{"model_type": "bert", "hidden_size": "wide"}', '{"model_type": "bert", "hidden_size": -4}'],
)
def test_a_garbage_hugging_face_config_is_named(finished_run, tmp_path, content):
    folder = export_model(finished_run, tmp_path / "export")
    (folder / "config.json").write_text(content)
    with pytest.raises(InteropError, match=r"config.json"):
        import_model(folder)


@pytest.mark.parametrize("content", ["", "[model]\nhidden_size = 'wide'\n", "not toml at all = = =", "\x00\x01"])
def test_a_garbage_run_config_is_named(run_copy, content):
    (run_copy / "config.toml").write_text(content)
    with pytest.raises(CheckpointError, match=r"config.toml"):
        FillMask.from_path(run_copy)


def test_a_damaged_tokenizer_is_named(run_copy):
    (run_copy / "tokenizer.json").write_text(json.dumps({"model": "nothing"}))
    with pytest.raises(CheckpointError, match=r"tokenizer.json"):
        FillMask.from_path(run_copy)
    with pytest.raises(TokenizerError, match=r"tokenizer.json"):
        MLMTokenizer.load(run_copy / "tokenizer.json")


# --- the window stays alive and keeps what it had ---------------------------------------------------------
def test_the_playground_survives_damaged_models_and_keeps_working(qtbot, finished_run, run_copy, tmp_path):
    from mlm_studio.ui.panels.playground.panel import PlaygroundPanel
    from mlm_studio.ui.workspace import Workspace

    truncate(RunDir(run_copy).latest_checkpoint() / "model.safetensors")
    hostile = tmp_path / "hostile"
    export_model(finished_run, hostile)
    (hostile / "model.safetensors").unlink()
    marker = tmp_path / "payload-ran"
    hostile_pickle(hostile / "pytorch_model.bin", marker)

    panel = PlaygroundPanel(Workspace(runs_root=tmp_path / "no-runs"))
    qtbot.addWidget(panel)
    panel.show()
    view = panel.views[0]
    for folder, words in ((run_copy, "model.safetensors cannot be read"), (hostile, "could run code")):
        with qtbot.waitSignal(panel.runners[0].finished, timeout=60_000):
            panel.add_folder(str(folder))
        shown = view.grid.itemAt(0).widget().text()
        assert words in shown
    with qtbot.waitSignal(panel.predicted, timeout=60_000):
        panel.add_folder(str(finished_run))
    assert len(view.buttons) == 1 and len(view.buttons[0]) == 5
    assert not marker.exists()


def test_a_failed_import_keeps_the_model_imported_before(qtbot, finished_run, tmp_path, small_tokenizer):
    from mlm_studio.ui.panels.config.panel import ConfigPanel
    from mlm_studio.ui.workspace import Workspace

    good = export_model(finished_run, tmp_path / "good")
    bad = export_model(finished_run, tmp_path / "bad")
    header_larger_than_file(bad / "model.safetensors")
    workspace = Workspace()
    panel = ConfigPanel(workspace)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.import_runner.finished, timeout=60_000):
        panel.import_folder(str(good))
    before = workspace.initial_model, workspace.config, workspace.tokenizer
    with qtbot.waitSignal(panel.import_runner.finished, timeout=60_000):
        panel.import_folder(str(bad))
    assert panel.message_bar.level == "error" and "model.safetensors in bad cannot be read" in panel.message_bar.text
    assert (workspace.initial_model, workspace.config, workspace.tokenizer) == before
