"""Branching a run: a new run from any checkpoint of another, settings changed and batches skipped; the parent is
only read."""

import hashlib
import json
import shutil
from contextlib import ExitStack

import pytest
import torch
from safetensors.torch import load_file, save_file

from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.dataset import BlockOrder
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError, read_state
from mlm_studio.core.storage.json_record import RecordError
from mlm_studio.core.training.branch_record import BRANCH_FILE, Branch, SkippingOrder, branch_of
from mlm_studio.core.training.request import TrainingRequest, prepare
from mlm_studio.core.training.runs import TrainingRefused, start_run, training_blocks
from mlm_studio.core.training.trainer import Trainer
from tests.core.helpers import small_config

PARENT_STEPS = 12  # checkpoints at 4, 8 and 12


@pytest.fixture(scope="module")
def parent(tmp_path_factory, small_corpus, small_tokenizer):
    """12 steps with a checkpoint every 4, all kept, a step record at every step."""
    run = start_run(
        tmp_path_factory.mktemp("parent") / "parent",
        small_config(max_steps=PARENT_STEPS, keep_checkpoints=3),
        small_corpus,
        small_tokenizer,
    )
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run


def hashes(folder):
    """Every file under `folder` by its path, with the SHA-256 of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def branched(parent, out, step, skip=None, **settings):
    """A branch of `parent` from `step` into `out`, trained to its end: its run and the records it wrote."""
    request = TrainingRequest(
        branch=parent.path, from_step=step, skip_batches=skip, out=out, settings=tuple(settings.items())
    )
    with ExitStack() as held:
        trainer = prepare(request, held=held)
        records = [record.to_dict() for record in trainer.run()]
    return RunDir(out), records


def losses(records):
    return {r["step"]: r["loss"] for r in records if r["type"] == "step"}


def test_a_branch_continues_from_its_checkpoint_with_its_own_settings_and_the_parent_is_untouched(parent, tmp_path):
    before = hashes(parent.path)
    branch, records = branched(parent, tmp_path / "branch", 4, **{"training.learning_rate": 5e-4})
    assert hashes(parent.path) == before
    assert branch_of(branch) == Branch(parent.path.resolve(), 4, None, "training.learning_rate: 0.001 → 0.0005")
    assert branch.config.training.learning_rate == 5e-4 and parent.config.training.learning_rate == 1e-3
    assert records[0]["type"] == "started" and records[0]["step"] == 4 and records[0]["total_steps"] == PARENT_STEPS
    assert min(r["step"] for r in branch.read_metrics()) == 4  # its steps continue from the branch step
    assert sorted(losses(records)) == list(range(5, PARENT_STEPS + 1))
    parent_tokens = {r["step"]: r["tokens_seen"] for r in parent.read_metrics() if r["type"] == "step"}
    assert records[1]["tokens_seen"] - parent_tokens[5] == 0  # the tokens seen go on from the checkpoint's
    assert losses(records)[5] == losses(parent.read_metrics())[5]  # the same weights and batch: the rate acts after
    assert losses(records)[PARENT_STEPS] != losses(parent.read_metrics())[PARENT_STEPS]


def test_a_branch_trains_with_its_own_optimizer_settings_not_those_its_checkpoint_kept(parent, tmp_path):
    settings = {"training.weight_decay": 0.1, "training.adam_beta2": 0.95, "training.adam_epsilon": 1e-8}
    request = TrainingRequest(branch=parent.path, from_step=8, out=tmp_path / "adam", settings=tuple(settings.items()))
    with ExitStack() as held:
        groups = prepare(request, held=held).optimizer.param_groups
    assert [group["weight_decay"] for group in groups] == [0.1, 0.0]  # none on biases and norms, as a new run
    assert all(tuple(group["betas"]) == (0.9, 0.95) and group["eps"] == 1e-8 for group in groups)
    assert [group["weight_decay"] for group in kept_groups(parent, 8)] == [0.01, 0.0]


def kept_groups(run, step):
    """The optimizer's groups as `run`'s checkpoint at `step` keeps them."""
    return read_state(run.path / "checkpoints" / f"step-{step:07d}")["param_groups"]


def test_a_branch_with_nothing_changed_trains_exactly_as_its_parent_did(parent, tmp_path):
    branch, records = branched(parent, tmp_path / "same", 8)
    assert branch_of(branch).changes == ""
    theirs = losses(parent.read_metrics())
    assert losses(records) == {step: theirs[step] for step in range(9, PARENT_STEPS + 1)}


def test_a_branch_passes_over_exactly_the_skipped_batches(parent, small_corpus, tmp_path):
    """Steps 5-7's batches are skipped: the branch's step 5 reads the blocks the parent's step 8 read, and every later
    step the blocks three steps on."""
    request = TrainingRequest(branch=parent.path, from_step=4, skip_batches=(4, 7), out=tmp_path / "skip")
    read = {}
    with ExitStack() as held:
        trainer = prepare(request, held=held)
        order = trainer.order

        def reading(micro_batch):
            read[trainer.step + 1] = order(micro_batch).tolist()
            return order(micro_batch)

        trainer.order = reading
        list(trainer.run())
    t = parent.config.training
    train, _ = training_blocks(parent, small_corpus)
    parents = BlockOrder(len(train), t.batch_size, t.seed)  # the parent's step n read micro-batch n - 1
    assert sorted(read) == list(range(5, PARENT_STEPS + 1))
    assert all(read[step] == parents(step - 1 + 3).tolist() for step in read)
    assert read[5] != parents(4).tolist()


def test_skipped_batches_are_counted_in_steps_of_every_micro_batch():
    order = BlockOrder(100, 4, seed=3)
    skipping = SkippingOrder(order, range(10, 13), per_step=2)  # the micro-batches of steps 11-13: 20-25
    assert [skipping(m).tolist() for m in range(18, 22)] == [order(m).tolist() for m in (18, 19, 26, 27)]


def test_a_branch_of_a_branch_records_its_own_parent(parent, tmp_path):
    first, _ = branched(parent, tmp_path / "first", 4, **{"training.learning_rate": 5e-4})
    second, records = branched(first, tmp_path / "second", 8, skip=(8, 10), **{"training.warmup_steps": 0})
    assert branch_of(second) == Branch(first.path.resolve(), 8, range(8, 10), "training.warmup_steps: 2 → 0")
    assert records[0]["step"] == 8 and branch_of(first).parent == parent.path.resolve()


@pytest.mark.parametrize(
    ("step", "skip", "settings", "sentence"),
    [
        (5, None, {}, "cannot branch from parent at step 5: no checkpoint of that step; it has checkpoints at steps "
         "4, 8, 12"),
        (4, (2, 6), {}, "cannot skip batches 2:6 in a branch of parent from step 4: it begins before step 4"),
        (4, (6, 5), {}, "cannot skip batches 6:5 in a branch of parent from step 4: it is reversed"),
        (4, (6, 6), {}, "cannot skip batches 6:6 in a branch of parent from step 4: it is empty"),
        (4, (6, 99), {}, "cannot skip batches 6:99 in a branch of parent from step 4: it ends past step 12, the last"),
        (4, None, {"model.hidden_size": 64}, "cannot branch from parent with these settings changed (run → given): "
         "model.hidden_size: 32 → 64."),
        (4, None, {"training.batch_size": 4}, "training.batch_size: 8 → 4. A branch keeps its parent's model"),
        (12, None, {}, "cannot branch from parent at step 12 with training.max_steps 12: the branch would have"),
    ],
)  # fmt: skip
def test_a_branch_that_cannot_be_is_refused_in_a_sentence_before_anything_is_written(
    parent, tmp_path, step, skip, settings, sentence
):
    before = hashes(parent.path)
    with pytest.raises(TrainingRefused) as refused:
        branched(parent, tmp_path / "branch", step, skip, **settings)
    assert sentence in str(refused.value)
    assert not (tmp_path / "branch").exists() and hashes(parent.path) == before


def test_a_branch_into_a_folder_that_holds_a_run_or_files_is_refused(parent, tmp_path):
    before = hashes(parent.path)
    with pytest.raises(CheckpointError, match="already holds a run"):
        branched(parent, parent.path, 4)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("mine")
    with pytest.raises(CheckpointError, match=r"already holds mine\.txt"):
        branched(parent, tmp_path / "notes", 4)
    assert hashes(parent.path) == before and (tmp_path / "notes" / "mine.txt").read_text() == "mine"


def test_a_parent_whose_corpus_changed_is_refused_as_a_resume_is(tmp_path, corpus_file, small_tokenizer):
    text = tmp_path / "text.txt"
    shutil.copyfile(corpus_file, text)
    corpus = load_corpus([text])
    run = start_run(tmp_path / "run", small_config(max_steps=2, checkpoint_interval=2), corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, corpus)).run())
    text.write_text(text.read_text(encoding="utf-8") + "\n\nOne more document.\n", encoding="utf-8")
    with pytest.raises(TrainingRefused) as refused:
        branched(run, tmp_path / "branch", 2, **{"training.max_steps": 4})
    assert str(refused.value).startswith("cannot branch from run: its corpus changed since the run started (")
    assert not (tmp_path / "branch").exists()


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ({"parent": "p", "step": "four"}, 'its "step" must be a whole number, 0 or more'),
        ({"parent": "p", "step": 4, "skipped": [6, 5]}, 'its "skipped" must be two steps A < B from the branch step 4'),
        ({"step": 4}, 'its "parent" is missing'),
        ([], "it holds a list"),
    ],
)
def test_a_damaged_branch_record_is_named_with_its_field(parent, tmp_path, record, said):
    folder = tmp_path / "run"
    shutil.copytree(parent.path, folder, ignore=shutil.ignore_patterns("checkpoints", "tensorboard"))
    (folder / BRANCH_FILE).write_text(json.dumps(record))
    with pytest.raises(RecordError) as damaged:
        branch_of(RunDir(folder))
    assert str(damaged.value).startswith(f"{folder / BRANCH_FILE} is damaged: ") and said in str(damaged.value)


def test_the_branch_record_reads_back_what_it_wrote(tmp_path):
    branch = Branch(tmp_path / "parent", 200, range(200, 500), "training.learning_rate: 0.001 → 0.0005")
    assert Branch.read(json.loads(json.dumps(branch.to_json()))) == branch
    assert branch.said() == (
        "branched from parent at step 200, skipping the 300 batch(es) of steps 201–500, with "
        "training.learning_rate: 0.001 → 0.0005"
    )


def test_a_checkpoint_whose_weights_are_not_finite_is_refused_naming_the_newest_finite_one(parent, tmp_path):
    run = RunDir(shutil.copytree(parent.path, tmp_path / "diverged"))
    weights = load_file(str(run.path / "checkpoints" / "step-0000008" / "model.safetensors"))
    nan = {name: torch.full_like(t, float("nan")) if t.is_floating_point() else t for name, t in weights.items()}
    save_file(nan, str(run.path / "checkpoints" / "step-0000008" / "model.safetensors"))
    with pytest.raises(TrainingRefused) as refused:
        branched(run, tmp_path / "branch", 8)
    said = str(refused.value)
    assert said.startswith("cannot branch from diverged: step-0000008's weights hold values that are not finite")
    assert "will not branch from it" in said and "step-0000012" in said and not (tmp_path / "branch").exists()


def test_a_branch_that_skipped_batches_replays_its_steps_exactly(parent, tmp_path):
    """Replay reads a branch's blocks in the branch's order: each step's loss from the checkpoint before it is the
    loss the branch logged."""
    from mlm_studio.core.training.replay import replay_step

    every_step = {"training.checkpoint_interval": 1, "training.keep_checkpoints": 20}
    run, records = branched(parent, tmp_path / "skip", 4, skip=(4, 7), **every_step)
    logged = losses(records)
    for step in (6, 9):
        assert replay_step(run.path, step).loss == pytest.approx(logged[step], rel=1e-4)


def test_a_run_prepared_in_the_folder_named_when_it_was_asked_for_is_made_there(parent, tmp_path):
    """The window names a new run's folder when Start is clicked (by date and time) and shows it at once: the run
    must be made in that folder, not in one named again a second later."""
    request = TrainingRequest(branch=parent.path, from_step=8, runs_root=tmp_path / "runs")
    asked = tmp_path / "runs" / "named-when-asked"
    with ExitStack() as held:
        prepare(request, held=held, path=asked)
    assert (asked / "config.toml").is_file()
    assert [folder.name for folder in (tmp_path / "runs").iterdir()] == ["named-when-asked"]
