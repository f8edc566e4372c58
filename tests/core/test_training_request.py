"""Resolving a `TrainingRequest`: what a resume may change is applied and said, the rest refused in one sentence
before anything is written, and a length already trained refused (the front ends agree: tests/ui/
test_training_request.py)."""

import shutil
from pathlib import Path

import pytest

from mlm_studio.core.durations import format_duration
from mlm_studio.core.runs.history import summarize
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.training.request import TrainingRequest, resolve
from mlm_studio.core.training.runs import TrainingRefused


@pytest.fixture
def run(trained_run, tmp_path):
    """A copy of a run that trained its 30 steps; with the bytes of its files, to show nothing was written."""
    path = shutil.copytree(trained_run.path, tmp_path / "run")
    return path, {name: (path / name).read_bytes() for name in ("config.toml", "metrics.jsonl")}


def unchanged(run) -> bool:
    path, written = run
    return {name: (path / name).read_bytes() for name in written} == written


@pytest.mark.parametrize(
    ("request_", "sentence"),
    [
        (
            TrainingRequest(resume=Path("run"), init_from="bert-base-uncased"),
            "--init-from starts a new run; it cannot be combined with --resume",
        ),
        (
            TrainingRequest(init_from="bert-base-uncased", tokenizer=Path("vocab.txt")),
            "--init-from brings the model's own tokenizer; leave out --tokenizer",
        ),
    ],
)
def test_options_that_do_not_go_together_are_refused_before_anything_is_read(request_, sentence):
    with pytest.raises(TrainingRefused) as refused:
        resolve(request_)
    assert str(refused.value) == sentence


def test_a_resume_applies_what_it_may_change_says_it_and_refuses_the_rest(run):
    path, _ = run
    more = TrainingRequest(resume=path, max_steps=40, settings=(("training.learning_rate", 1e-3),))
    resolved = resolve(more)
    assert resolved.path == path and resolved.new is None
    assert (resolved.config.training.max_steps, resolved.config.training.learning_rate) == (40, 1e-3)
    assert [note.text for note in resolved.notes] == [
        "resumed with training.learning_rate: 0.005 → 0.001; training.max_steps: 30 → 40"
    ]
    wider = TrainingRequest(resume=path, max_steps=40, settings=(("model.hidden_size", 64),))
    with pytest.raises(TrainingRefused) as refused:
        resolve(wider)
    said = str(refused.value)
    assert said.startswith("cannot resume run: these settings differ from the run's (run → given): ")
    assert "model.hidden_size: 32 → 64" in said and "max_steps" not in said
    assert unchanged(run)


def test_a_length_already_trained_is_refused_in_steps_or_in_time(run):
    path, _ = run
    with pytest.raises(TrainingRefused) as refused:
        resolve(TrainingRequest(resume=path))
    assert str(refused.value) == (
        "cannot resume run: its latest checkpoint, step-0000030, is at step 30, and training.max_steps is 30, so "
        "nothing is left to train; give it more steps to continue"
    )
    elapsed = summarize(RunDir(path)).elapsed
    with pytest.raises(TrainingRefused) as refused:
        resolve(TrainingRequest(resume=path, time_budget=elapsed / 2))
    assert str(refused.value) == (
        f"cannot resume run: it has trained {format_duration(elapsed)}, and its time budget is "
        f"{format_duration(elapsed / 2)}, so nothing is left to train; give it more time to continue"
    )
    assert resolve(TrainingRequest(resume=path, time_budget=elapsed + 60)).config.training.time_budget == elapsed + 60
    by_epochs = resolve(TrainingRequest(resume=path, settings=(("training.epochs", 1.0),)))  # counted once read
    assert by_epochs.config.training.epochs == 1.0
    assert unchanged(run)


def test_a_form_shown_beside_a_resume_is_said_only_where_it_differs(run):
    path, _ = run
    own = RunDir(path).config.with_values({"training.max_steps": 40})  # what the resume trains with
    assert resolve(TrainingRequest(resume=path, max_steps=40, form=own)).notes[1:] == ()
    other = own.with_values({"masking.rate": 0.3, "training.learning_rate": 1e-3})
    note = resolve(TrainingRequest(resume=path, max_steps=40, form=other)).notes[1]
    assert note.short == "run resumes with its own settings; the Configuration panel's differ and are not used " + (
        "(masking.rate, training.learning_rate)."
    )
    assert note.text.endswith(": masking.rate: 0.15 → 0.3; training.learning_rate: 0.005 → 0.001 (run → panel)")


def test_a_folder_that_holds_no_run_is_named(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="empty"):
        resolve(TrainingRequest(resume=tmp_path / "empty"))
