"""Replaying a step rebuilds the trainer's batch exactly: its loss from step N-1's checkpoint is the logged loss of
step N, for every objective and precision, and after a resume; what cannot be replayed is refused in a sentence."""

import shutil
from dataclasses import replace

import pytest

from mlm_studio.core.config.sections import MaskingConfig
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.masking import MaskKind
from mlm_studio.core.storage.step_file import read_steps
from mlm_studio.core.training.replay import Replayer, ReplayRefused, replay_step
from mlm_studio.core.training.runs import start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config

STEPS = 4


def replay_config(strategy="token", objective="mlm", precision="fp32", **training):
    settings = dict(
        max_steps=STEPS, checkpoint_interval=1, keep_checkpoints=10, grad_accumulation=2, precision=precision
    )
    config = small_config(**{**settings, **training})
    config = replace(config, masking=MaskingConfig(strategy=strategy, rate=0.3, max_span=3))
    return config.with_objective("electra") if objective == "electra" else config


def trained(path, config, corpus, tokenizer, stop_after=None):
    """A run of `config` trained to its end, or abandoned (as a kill leaves it) after step `stop_after`."""
    run = start_run(path, config, corpus, tokenizer)
    for record in Trainer(run, *training_blocks(run, corpus)).run():
        if stop_after is not None and record.to_dict().get("type") == "checkpoint" and record.step == stop_after:
            break
    return run


def logged_losses(run):
    return {r["step"]: r["loss"] for r in run.read_metrics() if r["type"] == "step"}


@pytest.mark.parametrize(
    ("strategy", "objective", "precision"),
    [
        ("token", "mlm", "fp32"),
        ("token", "mlm", "bf16"),
        ("whole_word", "mlm", "fp32"),
        ("span", "mlm", "bf16"),
        ("token", "electra", "fp32"),
        ("span", "electra", "bf16"),
    ],
)
def test_a_replayed_step_has_the_loss_the_trainer_logged(
    tmp_path, small_corpus, small_tokenizer, strategy, objective, precision
):
    run = trained(tmp_path / "run", replay_config(strategy, objective, precision), small_corpus, small_tokenizer)
    logged, kept = logged_losses(run), read_steps(run.path, run.name)
    for step in range(2, STEPS + 1):
        replay = replay_step(run.path, step)
        assert replay.exact and replay.checkpoint == f"step-{step - 1:07d}"
        assert replay.loss == pytest.approx(logged[step], rel=1e-4)
        assert kept.at(step)[0] == pytest.approx(logged[step], rel=1e-6)
        assert sum(s.loss_sum for s in replay.sequences) / replay.predicted == pytest.approx(replay.loss, rel=1e-5)
    sequences = replay.sequences
    assert len(sequences) == 2 * 8  # two micro-batches of eight blocks
    assert {s.micro_batch for s in sequences} == {0, 1}
    assert [s.loss_sum for s in sequences] == sorted((s.loss_sum for s in sequences), reverse=True)
    worst = sequences[0]
    masked = [t for t in worst.tokens if t.token.kind != MaskKind.UNTOUCHED]
    assert len(masked) == worst.predicted > 0 and all(t.loss is not None and len(t.candidates) == 5 for t in masked)
    assert sum(t.loss for t in masked) == pytest.approx(worst.loss_sum)
    assert all(t.loss is None for t in worst.tokens if t.token.kind == MaskKind.UNTOUCHED)
    probabilities = [p for _, p in masked[0].candidates]
    assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) <= 1 + 1e-6
    if objective == "electra":  # the generator's sample at each masked token, what the discriminator read
        assert all(t.token.generated is not None for t in masked)
    else:
        assert all(t.token.generated is None for t in worst.tokens)


def test_a_run_resumed_after_a_kill_replays_as_one_that_never_stopped(tmp_path, small_corpus, small_tokenizer):
    config = replay_config("whole_word", max_steps=6)
    whole = trained(tmp_path / "whole", config, small_corpus, small_tokenizer)
    halves = trained(tmp_path / "halves", config, small_corpus, small_tokenizer, stop_after=3)
    assert max(logged_losses(halves)) == 3
    list(Trainer(halves, *training_blocks(halves, small_corpus)).run())
    for step in (2, 5, 6):
        theirs, ours = replay_step(whole.path, step), replay_step(halves.path, step)
        assert ours.loss == theirs.loss == pytest.approx(logged_losses(halves)[step], rel=1e-4)
        assert [s.block for s in ours.sequences] == [s.block for s in theirs.sequences]
    ours, theirs = read_steps(halves.path, "halves"), read_steps(whole.path, "whole")
    assert ours.steps.tolist() == list(range(1, 7)) and ours.loss.tolist() == theirs.loss.tolist()


def test_without_step_n_minus_1_the_nearest_kept_checkpoint_scores_and_says_so(tmp_path, small_corpus, small_tokenizer):
    run = trained(tmp_path / "run", replay_config(), small_corpus, small_tokenizer)
    exact = replay_step(run.path, 3)
    shutil.move(run.path / "checkpoints" / "step-0000002", tmp_path / "aside")
    older = replay_step(run.path, 3)
    assert older.checkpoint == "step-0000001" and not older.exact
    assert "1 step(s) older" in older.checkpoint_said()
    assert sorted(s.block for s in older.sequences) == sorted(s.block for s in exact.sequences)  # the same batch
    assert older.loss != pytest.approx(exact.loss, rel=1e-4)
    assert (
        replay_step(run.path, 1).checkpoint_said()
        == "step-0000001, the weights after step 1 (none from before it is kept)"
    )


@pytest.fixture(scope="module")
def short_run(tmp_path_factory, small_corpus, small_tokenizer):
    return trained(tmp_path_factory.mktemp("replay") / "run", replay_config(), small_corpus, small_tokenizer)


@pytest.mark.parametrize("step", [0, -1, STEPS + 1, 10**9])
def test_a_step_outside_the_run_is_refused(short_run, step):
    with pytest.raises(
        ReplayRefused,
        match=rf"step {step} is not a step of run, which has trained 4 step\(s\); give a step from 1 to 4",
    ):
        replay_step(short_run.path, step)


def test_a_step_with_no_checkpoint_at_or_before_it_is_refused(tmp_path, short_run):
    run = tmp_path / "run"
    shutil.copytree(short_run.path, run)
    for step in (1, 2):
        shutil.rmtree(run / "checkpoints" / f"step-{step:07d}")
    with pytest.raises(
        ReplayRefused, match=r"keeps no checkpoint at or before step 2 to score it with \(its oldest is step-0000003\)"
    ):
        replay_step(run, 2)
    assert replay_step(run, 4).exact


def test_a_run_whose_corpus_changed_is_refused(tmp_path, corpus_file, small_tokenizer):
    text = tmp_path / "corpus.txt"
    shutil.copy(corpus_file, text)
    run = trained(tmp_path / "run", replay_config(max_steps=2), load_corpus([text]), small_tokenizer)
    assert replay_step(run.path, 2).exact
    text.write_text(text.read_text(encoding="utf-8") + "\n\nOne more document at the end.", encoding="utf-8")
    with pytest.raises(
        ReplayRefused,
        match=r"cannot replay run: its corpus changed since the run started \(.*corpus.txt has other contents",
    ):
        replay_step(run.path, 2)


def test_one_replayer_replays_every_step_as_a_fresh_replay_does_and_sees_weights_written_anew(
    tmp_path, small_corpus, small_tokenizer
):
    run = trained(tmp_path / "run", replay_config(), small_corpus, small_tokenizer)
    replayer, logged = Replayer(run.path), logged_losses(run)
    for step in [4, 2, 3, 2, 4]:  # checkpoints in any order, one again
        kept = replayer.replay(step)
        assert kept == replay_step(run.path, step) and kept.loss == pytest.approx(logged[step], rel=1e-4)
    older = run.path / "checkpoints" / "step-0000001" / "model.safetensors"
    newer = run.path / "checkpoints" / "step-0000002" / "model.safetensors"
    older.unlink()
    shutil.copyfile(newer, older)  # step 1's weights written anew: step 2 now reads step 2's
    assert replayer.replay(2) == replay_step(run.path, 2) and replayer.replay(2).loss != pytest.approx(logged[2])
    assert replayer.current()
    config = run.path / "config.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("max_steps = 4", "max_steps = 5"), encoding="utf-8")
    assert not replayer.current()  # a resume that changed a setting: the window makes a new one
