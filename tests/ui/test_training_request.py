"""The same training asked of the command line and of the Training panel resolves to the same configuration, or
to the same refusal in the same words: both build a `TrainingRequest` and the core alone resolves it. Nothing is
trained: the resolution is caught as it happens and the preparation stopped there."""

import shutil
from dataclasses import replace
from itertools import islice

import pytest

from mlm_studio.cli import main
from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.training import request as request_module
from mlm_studio.core.training.runs import start_run
from mlm_studio.ui.panels.training.panel import TrainingPanel
from mlm_studio.ui.workspace import Workspace
from tests.core.family_folders import make_folder
from tests.core.helpers import config_file, small_config

TIMEOUT_MS = 60_000
STOPPED = "stopped once resolved"


@pytest.fixture
def resolutions(monkeypatch):
    """What each resolution gave: a configuration, or the refusal's sentence; the preparation stops right after
    (as a refusal would), so nothing is trained or written."""
    seen = []
    real = request_module.resolve

    def resolve_then_stop(*args, **kwargs):
        try:
            resolved = real(*args, **kwargs)
        except Exception as exc:
            seen.append(str(exc))
            raise
        seen.append(resolved)
        raise CheckpointError(STOPPED)

    monkeypatch.setattr(request_module, "resolve", resolve_then_stop)
    return seen


@pytest.fixture
def panel(qtbot, tmp_path):
    widget = TrainingPanel(Workspace(runs_root=tmp_path / "window-runs"))
    qtbot.addWidget(widget)
    yield widget
    widget.controller.stop()
    widget.controller.wait(TIMEOUT_MS)


@pytest.fixture(scope="module")
def published(small_corpus, tmp_path_factory):
    """A BERT that `transformers` made, as a published model's folder."""
    return make_folder("bert", list(islice(small_corpus.iter_documents(), 300)), tmp_path_factory.mktemp("bert"))


def through_the_command_line(arguments, resolutions, capsys):
    """The resolution of `mlm-studio train ARGUMENTS`, and what the command said on stderr."""
    capsys.readouterr()
    assert main(["train", *map(str, arguments)]) == 1
    return resolutions.pop(), capsys.readouterr().err


def through_the_window(qtbot, panel, action, resolutions):
    """The resolution of what the panel asks for as `action(panel)` does, and what its message bar said."""
    with qtbot.waitSignal(panel.run_finished, timeout=TIMEOUT_MS):
        action(panel)
    assert panel.message_bar.level == "error"
    return resolutions.pop(), panel.message_bar.text


def resumed(run):
    return lambda panel: panel.resume_run(run)


def started(panel):
    panel.start()


def test_a_new_run_resolves_to_the_same_configuration(
    qtbot, panel, resolutions, capsys, tmp_path, corpus_file, small_corpus, small_tokenizer
):
    tokenizer = small_tokenizer.save(tmp_path / "tokenizer.json")
    cfg = config_file(tmp_path, max_steps=3)
    arguments = ["--config", cfg, "--corpus", corpus_file, "--tokenizer", tokenizer, "--out", tmp_path / "cli"]
    cli, said = through_the_command_line(arguments, resolutions, capsys)
    assert said.endswith(f"mlm-studio: {STOPPED}\n")

    workspace = panel.workspace
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(small_tokenizer)
    workspace.set_config(RunConfig.load(cfg))
    window, _ = through_the_window(qtbot, panel, started, resolutions)
    assert cli.config == window.config
    assert window.config.model.vocab_size == small_tokenizer.vocab_size and window.config.training.max_steps == 3
    assert window.new.corpus.documents == cli.new.corpus.documents and window.notes == cli.notes == ()


def test_a_new_run_continuing_an_imported_model_resolves_to_the_same_recipe(
    qtbot, panel, resolutions, capsys, tmp_path, corpus_file, small_corpus, published
):
    arguments = ["--init-from", published, "--corpus", corpus_file, "--max-steps", 2, "--out", tmp_path / "cli"]
    cli, _ = through_the_command_line([*arguments, "--set", "data.max_seq_len=32"], resolutions, capsys)

    config = preset(DEFAULT_PRESET).with_values({"data.max_seq_len": 32})
    workspace, imported = panel.workspace, import_model(published)
    workspace.set_config(replace(config, training=replace(config.training, max_steps=2, epochs=0.0, time_budget=0.0)))
    workspace.set_initial_model(imported)
    workspace.set_corpus(small_corpus)
    workspace.set_tokenizer(imported.tokenizer)
    window, _ = through_the_window(qtbot, panel, started, resolutions)
    assert cli.config == window.config and window.config.training.learning_rate == 3e-5  # the continuation's
    assert window.path.name.endswith("-continued") and cli.path == tmp_path / "cli"
    assert "Continuing an imported model: learning rate 3e-05" in cli.notes[-1].text  # the window said it at import


def test_a_resume_resolves_to_the_runs_own_configuration_and_says_the_form_is_not_used(
    qtbot, panel, resolutions, capsys, tmp_path, trained_runs
):
    run = shutil.copytree(trained_runs / "early", tmp_path / "early")
    own = RunDir(run).config
    replace(own, training=replace(own.training, max_steps=8)).save(run / "config.toml")  # 4 of 8 steps trained
    cli, _ = through_the_command_line(["--resume", run], resolutions, capsys)

    form = small_config(max_steps=8, learning_rate=5e-3)
    panel.workspace.set_config(replace(form, model=replace(form.model, hidden_size=64)))
    window, _ = through_the_window(qtbot, panel, resumed(run), resolutions)
    assert cli.config == window.config == RunDir(run).config and window.new is None
    assert cli.notes == () and window.notes[0].short == (
        "early resumes with its own settings; the Configuration panel's differ and are not used (model.hidden_size)."
    )
    assert "model.hidden_size: 32 → 64 (run → panel)" in window.notes[0].text

    cli, _ = through_the_command_line(["--resume", run, "--max-steps", 9], resolutions, capsys)
    assert cli.config.training.max_steps == 9 and cli.notes[0].text == "resumed with training.max_steps: 8 → 9"


def test_a_resume_of_a_run_that_trained_its_length_is_refused_in_the_same_words(
    qtbot, panel, resolutions, capsys, trained_runs
):
    run = trained_runs / "early"  # trained its 4 steps
    cli, said = through_the_command_line(["--resume", run], resolutions, capsys)
    window, shown = through_the_window(qtbot, panel, resumed(run), resolutions)
    sentence = (
        "cannot resume early: its latest checkpoint, step-0000004, is at step 4, and training.max_steps is 4, so "
        "nothing is left to train; give it more steps to continue"
    )
    assert cli == window == sentence and said == f"mlm-studio: {sentence}\n" and shown == sentence
    assert [p.name for p in RunDir(run).checkpoints()][-1] == "step-0000004"


def test_a_resume_on_a_corpus_changed_since_is_refused_in_the_same_words(
    qtbot, panel, resolutions, capsys, tmp_path, corpus_file, small_tokenizer
):
    text = tmp_path / "text.txt"
    shutil.copyfile(corpus_file, text)
    run = start_run(tmp_path / "run", small_config(), load_corpus([text]), small_tokenizer).path
    text.write_text(text.read_text(encoding="utf-8") + "\n\nOne more document.\n", encoding="utf-8")
    before = {name: (run / name).read_bytes() for name in ("config.toml", "corpus.json")}
    cli, said = through_the_command_line(["--resume", run], resolutions, capsys)
    window, shown = through_the_window(qtbot, panel, resumed(run), resolutions)
    assert cli == window and cli.startswith("cannot resume run: its corpus changed since the run started (")
    assert said == f"mlm-studio: {cli}\n" and shown == cli
    assert {name: (run / name).read_bytes() for name in before} == before
