"""A time budget: training ends when it is spent and the learning rate decays with the clock."""

import errno
import itertools

import pytest

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import UNTIL_THE_BUDGET_IS_SPENT, ConfigError
from mlm_studio.core.durations import format_duration, parse_duration
from mlm_studio.core.runs import loop as loop_module
from mlm_studio.core.runs import run_folder
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import FinishedRecord, PausedRecord, StepRecord
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        ("90s", 90),
        ("6m", 360),
        ("1h30m", 5400),
        ("1h30", 5400),
        ("4m07s", 247),
        ("4m07", 247),
        ("1.5h", 5400),
        (" 2 m ", 120),
    ],
)
def test_durations_are_read_as_people_write_them(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5 minutes", "-3m", "1m1h", "inf", "nan", "1e400"])
def test_unreadable_durations_are_refused_with_the_text(text):
    with pytest.raises(ValueError, match=r"is not a duration"):
        parse_duration(text)


def test_formatted_durations_read_back():
    for seconds in (0, 59, 61, 360, 3599, 3600, 5400):
        assert parse_duration(format_duration(seconds)) == (seconds // 60 * 60 if seconds >= 3600 else seconds)


def test_a_budget_replaces_the_step_count_and_must_not_be_negative():
    config = small_config(time_budget=30.0, max_steps=5)
    assert config.steps_for(100) == UNTIL_THE_BUDGET_IS_SPENT
    assert RunConfig.from_toml(config.to_toml()) == config
    with pytest.raises(ConfigError, match=r"training.time_budget must be between 0 and 366 days"):
        small_config(time_budget=-1.0)


class FakeClock:
    """Each reading moves time on by `tick` seconds: a trainer that runs for seconds without taking them."""

    def __init__(self, tick: float) -> None:
        self.now, self.tick = 0.0, tick

    def perf_counter(self) -> float:
        self.now += self.tick
        return self.now


def test_training_ends_when_the_budget_is_spent_with_the_schedule_on_the_clock(
    tmp_path, small_corpus, small_tokenizer, monkeypatch
):
    config = small_config(time_budget=20.0, warmup_steps=0, eval_interval=1000, checkpoint_interval=1000)
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    trainer = Trainer(run, *training_blocks(run, small_corpus))
    monkeypatch.setattr(loop_module, "time", FakeClock(0.25))
    records = list(trainer.run())
    steps = [r for r in records if isinstance(r, StepRecord)]
    finished = records[-1]
    assert isinstance(finished, FinishedRecord) and finished.reason == "completed"
    assert 5 < len(steps) < 100 and steps[-1].elapsed >= 20.0 > steps[-2].elapsed
    peak = config.training.learning_rate
    for before, record in zip([0.0] + [s.elapsed for s in steps], steps):
        assert record.learning_rate == pytest.approx(peak * (1 - before / 20.0))
    assert run.latest_checkpoint().name == f"step-{steps[-1].step:07d}"  # the end is saved and evaluated
    assert [r["type"] for r in run.read_metrics()].count("eval") == 1


def test_a_pause_for_a_failed_save_is_not_training_time(tmp_path, small_corpus, small_tokenizer, monkeypatch):
    """The window pauses when a checkpoint cannot be written; the minutes until the user makes room are not spent
    from the budget."""
    config = small_config(time_budget=20.0, warmup_steps=0, eval_interval=1000, checkpoint_interval=4)
    run = start_run(tmp_path / "run", config, small_corpus, small_tokenizer)
    clock = FakeClock(0.25)
    monkeypatch.setattr(loop_module, "time", clock)
    original = run_folder.save_weights
    refusals = [OSError(errno.ENOSPC, "No space left on device")]

    def save_weights(model, path):
        if refusals:
            raise refusals.pop()
        original(model, path)

    monkeypatch.setattr(run_folder, "save_weights", save_weights)

    class SlowUser(TrainingControl):
        def wait_while_paused(self) -> None:
            if self.paused:
                clock.now += 600.0  # ten minutes to make room, then Resume
                self.resume()

    records = list(Trainer(run, *training_blocks(run, small_corpus), SlowUser(), pause_on_save_error=True).run())
    steps = [r for r in records if isinstance(r, StepRecord)]
    assert any(isinstance(r, PausedRecord) for r in records) and records[-1].reason == "completed"
    assert max(b.elapsed - a.elapsed for a, b in itertools.pairwise(steps)) < 2.0
    assert 20.0 <= steps[-1].elapsed < 21.0
