"""One road to a trainer: the CLI, the window and the engine prepare the same run the same way."""

import json
import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mlm_studio.core.config.sections import TrainConfig
from mlm_studio.core.runs.records import EvalRecord, StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.settings import apply_resume
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.training.runs import (
    FOLDER_LABEL_LENGTH,
    RESUMABLE,
    NewRun,
    check_resume,
    folder_label,
    new_run_path,
    prepare_trainer,
)
from tests.command import mlm_studio
from tests.core.helpers import config_file, small_config, with_training

TIMING = {"elapsed", "tokens_per_second", "run_dir", "device", "path", "events"}


def comparable(records):
    """The records as `metrics.jsonl` holds them, without what depends on the clock or the folder."""
    written = json.loads(json.dumps(records))
    return [{k: v for k, v in r.items() if k not in TIMING} for r in written if r["type"] != "checkpoint"]


def test_the_cli_and_the_engine_prepare_the_same_run(tmp_path, corpus_file, small_corpus, small_tokenizer):
    done = mlm_studio(
        "train", "--config", config_file(tmp_path), "--corpus", corpus_file, "--out", tmp_path / "cli", "--max-steps", 4
    )
    assert done.returncode == 0, done.stderr
    config = RunDir(tmp_path / "cli").config
    with ExitStack() as held:
        trainer = prepare_trainer(
            tmp_path / "engine", begin=lambda: NewRun(config, small_corpus, small_tokenizer), held=held
        )
        records = [r.to_dict() for r in trainer.run()]
    assert records[0]["type"] == "started" and records[0]["total_steps"] == 4
    assert comparable(RunDir(tmp_path / "cli").read_metrics()) == comparable(records)
    precision = config.training.precision  # what auto resolved to, in the run's config.toml and said at the start
    assert precision in ("fp32", "bf16")
    assert f"Training {(tmp_path / 'cli').resolve()} on cpu in {precision}: 1 layers × 32" in done.stdout


def test_a_folder_that_holds_a_run_is_not_begun_again_and_a_resume_is_checked_first(
    tmp_path, small_corpus, small_tokenizer
):
    new = NewRun(small_config(max_steps=2), small_corpus, small_tokenizer)
    with ExitStack() as held:
        list(prepare_trainer(tmp_path / "run", begin=lambda: new, held=held).run())
    with ExitStack() as held, pytest.raises(CheckpointError, match=r"already holds a run"):
        prepare_trainer(tmp_path / "run", begin=lambda: new, held=held)

    def refuse(run):
        raise CheckpointError(f"{run.name} refused")

    with ExitStack() as held, pytest.raises(CheckpointError, match=r"run refused"):
        prepare_trainer(tmp_path / "run", check=refuse, held=held)
    with ExitStack() as held:
        resumed = prepare_trainer(tmp_path / "run", held=held)
        assert resumed.step == 2 and resumed.started().step == 2


@pytest.mark.parametrize(
    ("preset", "label"),
    [("base", "base"), ("my_preset-2", "my_preset-2"), ("../../etc", "etc"), ("C:\\runs\\x", "C-runs-x"),
     ('two\nlines "quoted"', "two-lines-quoted"), ("été 日本", "été-日本"), ("..", "run"), ("", "run"),
     ("x" * 99, "x" * 40)],
)  # fmt: skip
def test_a_preset_becomes_a_safe_part_of_a_folder_name(preset, label):
    assert folder_label(preset) == label


@given(st.text(max_size=200))
@example("../../escape")
@example("a/b\\c\nd\te\x00")
def test_a_new_run_folder_is_always_one_new_folder_inside_the_root(preset):
    with tempfile.TemporaryDirectory() as root:
        path = new_run_path(root, preset)
        label = path.name.split("-", 2)[2]
        assert path.parent == Path(root) and 0 < len(label) <= FOLDER_LABEL_LENGTH and label.isprintable()
        assert not set(label) & set("/\\.:") and label[0] not in "-_" and label[-1] not in "-_"
        path.mkdir()
        again = new_run_path(root, preset)
        assert again.parent == Path(root) and not again.exists()


def test_every_setting_a_resume_may_change_is_a_training_setting():
    assert set(RESUMABLE) <= {f"training.{name}" for name in TrainConfig.field_defaults()}
    assert "training.batch_size" not in RESUMABLE and "training.seed" not in RESUMABLE


def trained_run(tmp_path, small_corpus, small_tokenizer, **training):
    config = small_config(max_steps=2, eval_interval=2, checkpoint_interval=2, **training)
    with ExitStack() as held:
        list(
            prepare_trainer(
                tmp_path / "run", begin=lambda: NewRun(config, small_corpus, small_tokenizer), held=held
            ).run()
        )
    return RunDir(tmp_path / "run")


def folder_bytes(run):
    return {p.name: p.read_bytes() for p in run.path.iterdir() if p.is_file()}


def test_a_resume_applies_and_records_a_new_length_and_learning_rate(tmp_path, small_corpus, small_tokenizer):
    run = trained_run(tmp_path, small_corpus, small_tokenizer)
    given = with_training(run.config, max_steps=5, learning_rate=2e-3, eval_interval=1, device="cpu")
    resumed = check_resume(run, given, small_tokenizer)
    assert resumed == replace(run.config, training=given.training)
    message = apply_resume(run, resumed)
    assert message == (
        "resumed with training.learning_rate: 0.001 → 0.002; training.max_steps: 2 → 5; training.eval_interval: 2 → 1; "
        "training.device: auto → cpu"
    )
    assert run.config == resumed and run.read_metrics()[-1] == {"type": "changed", "step": 2, "message": message}
    assert apply_resume(run, run.config) == ""  # nothing more to change: nothing written
    with ExitStack() as held:
        records = list(prepare_trainer(run.path, held=held).run())
    lrs = [r.learning_rate for r in records if isinstance(r, StepRecord)]
    assert len(lrs) == 3 and lrs[0] == pytest.approx(2e-3 * (1 - 0 / 3))  # the new rate, decaying to step 5
    assert [r.step for r in records if isinstance(r, EvalRecord)] == [3, 4, 5]


@pytest.mark.parametrize(
    "changes",
    [
        {"model.hidden_size": 64, "model.intermediate_size": 128},
        {"masking.rate": 0.3, "masking.strategy": "span"},
        {"training.batch_size": 4, "training.seed": 7},
        {"training.weight_decay": 0.1, "training.schedule": "cosine", "training.warmup_steps": 0},
        {"data.validation_fraction": 0.2, "data.packing": False},
        {"tokenizer.lowercase": False},
    ],
)
def test_a_resume_refuses_every_other_change_naming_each_and_writes_nothing(
    tmp_path, small_corpus, small_tokenizer, changes
):
    run = trained_run(tmp_path, small_corpus, small_tokenizer)
    before = folder_bytes(run)
    given = run.config.with_values({**changes, "training.max_steps": 9})
    with pytest.raises(CheckpointError, match=r"^cannot resume run: these settings differ from the run's") as caught:
        check_resume(run, given, None)
    for name, new in changes.items():
        section, field = name.split(".")
        assert f"{name}: {getattr(getattr(run.config, section), field)} → {new}" in str(caught.value)
    assert "max_steps" not in str(caught.value) and folder_bytes(run) == before
