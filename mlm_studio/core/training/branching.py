"""Branching a run: a new run from any checkpoint of another, with settings changed and a range of batches skipped,
as large models answer a loss spike (restart from a checkpoint shortly before it and pass over the batches around
it: Chowdhery et al., PaLM, 2022, section 5.1).

A branch is checked whole before anything is written (`plan_branch`), then made as any new run is: in a temporary
folder, moved in with `config.toml` last. It holds a copy of the parent's checkpoint, so it trains on as the
parent's resume would (its steps, tokens and clock continue from the checkpoint's) with its own settings, and its
`branch.json` (`branch_record`). The parent is only read. A branch keeps what the checkpoint and the order of
batches are made of: the model, the tokenizer, the data, the batch size, accumulation and seed."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.runs.history import summarize
from mlm_studio.core.runs.run_folder import INITIAL, RunDir, checkpoint_step
from mlm_studio.core.runs.settings import config_differences, described, with_resolved_precision
from mlm_studio.core.storage.checkpoint import CHECKPOINTS, CheckpointError, listed, read_state, require_readable
from mlm_studio.core.storage.files import atomic_write_json
from mlm_studio.core.training.branch_record import BRANCH_FILE, Branch
from mlm_studio.core.training.probes import PROBES_FILE
from mlm_studio.core.training.runs import TrainingRefused, check_corpus_unchanged

# What a branch cannot change: what its parent's checkpoint holds and what decides which blocks each step reads.
FIXED = ("model.", "tokenizer.", "data.", "training.batch_size", "training.grad_accumulation", "training.seed",
         "training.objective", "training.generator_size")  # fmt: skip


@dataclass(frozen=True)
class BranchPlan:
    """A branch checked and ready to be made: the parent's checkpoint it starts from and the settings it trains
    with. Its corpus is the parent's, read from the files the parent recorded (checked unchanged) when it trains."""

    parent: RunDir
    checkpoint: Path
    config: RunConfig
    tokenizer: MLMTokenizer
    branch: Branch
    corpus: None = None

    def create(self, path: str | Path) -> RunDir:
        """The branch's run folder, made whole or not at all; refused where a run or other files are."""
        sources, options = self.parent.corpus_sources()
        return RunDir.create(path, self.config, self.tokenizer, sources, options, more=self._fill)

    def _fill(self, folder: Path) -> None:
        atomic_write_json(folder / BRANCH_FILE, self.branch.to_json())
        copy = folder / CHECKPOINTS / self.checkpoint.name
        shutil.copytree(self.checkpoint, copy, copy_function=shutil.copyfile)
        # the optimizer's settings a checkpoint keeps with its moments: the branch's own replace them
        state, training = read_state(copy), self.config.training
        for group in state["param_groups"]:
            group.update(betas=[training.adam_beta1, training.adam_beta2], eps=training.adam_epsilon)
        state["param_groups"][0]["weight_decay"] = training.weight_decay  # decay_groups: the decayed ones first
        atomic_write_json(copy / "state.json", state)
        for name in (PROBES_FILE, INITIAL):
            source = self.parent.path / name
            if source.is_dir():
                shutil.copytree(source, folder / name, copy_function=shutil.copyfile)
            elif source.is_file():
                shutil.copyfile(source, folder / name)


def plan_branch(parent: RunDir, step: int, skipped: tuple[int, int] | None, given: RunConfig) -> BranchPlan:
    """A branch of `parent` from its checkpoint at `step`, passing over the batches of steps `skipped` (A, B):
    A + 1 … B, trained with `given` (the parent's settings with the user's on top). Refused in a sentence
    (`TrainingRefused`, or the error of a file that cannot be read) before anything is written: a step without a
    checkpoint (naming those with one), one that cannot be read or holds non-finite weights, a skip range reversed
    or outside the run, a setting a branch cannot change, a tokenizer replaced or a corpus changed since."""
    checkpoint = _checkpoint_at(parent, step)
    try:
        require_readable(checkpoint)
        parent.require_finite(checkpoint, "branch from it")
    except CheckpointError as exc:
        raise TrainingRefused(f"cannot branch from {parent.name}: {exc}") from exc
    if skipped is not None:
        _check_skipped(parent, step, *skipped)
    tokenizer = parent.own_tokenizer()
    check_corpus_unchanged(parent, doing="branch from")
    config = _branch_config(parent, given)
    training = config.training
    if training.epochs == 0 and training.time_budget == 0 and training.max_steps <= step:
        raise TrainingRefused(
            f"cannot branch from {parent.name} at step {step:,} with training.max_steps {training.max_steps:,}: "
            "the branch would have nothing to train; give it more steps"
        )
    changes = described(config_differences(parent.config, config))
    skip = range(*skipped) if skipped is not None else None
    return BranchPlan(parent, checkpoint, config, tokenizer, Branch(parent.path.resolve(), step, skip, changes))


def _checkpoint_at(parent: RunDir, step: int) -> Path:
    found = {checkpoint_step(path): path for path in parent.checkpoints()}
    if step in found:
        return found[step]
    kept = [f"{kept:,}" for kept in sorted(found)]
    has = f"it has checkpoints at steps {listed(kept)}" if kept else "it has no checkpoint yet; train it first"
    raise TrainingRefused(f"cannot branch from {parent.name} at step {step:,}: no checkpoint of that step; {has}")


def _check_skipped(parent: RunDir, step: int, first: int, last: int) -> None:
    """Refuse a skip range reversed or empty, before the branch step (those batches are in its weights already), or
    past the steps the parent was set to train."""
    total = summarize(parent).total_steps
    if first >= last:
        problem = f"it is {'empty' if first == last else 'reversed'}: give A:B with A below B"
    elif first < step:
        problem = f"it begins before step {step:,}, whose weights have trained on the batches up to it"
    elif total and last > total:
        problem = f"it ends past step {total:,}, the last the run was set to train"
    else:
        return
    raise TrainingRefused(f"cannot skip batches {first}:{last} in a branch of {parent.name} from step {step:,}: "
                          f"{problem}")  # fmt: skip


def _branch_config(parent: RunDir, given: RunConfig) -> RunConfig:
    """`given` as the branch records it (its vocabulary the parent's, its precision resolved); a setting a branch
    cannot change is refused, each named with both values."""
    model = parent.config.model
    config = with_resolved_precision(given.with_vocabulary(model.vocab_size, model.pad_token_id))
    changes = config_differences(parent.config, config)
    fixed = {name: values for name, values in changes.items() if name.startswith(FIXED)}
    if fixed:
        raise TrainingRefused(
            f"cannot branch from {parent.name} with these settings changed (run → given): {described(fixed)}. A "
            "branch keeps its parent's model, tokenizer, data, batch size, accumulation and seed; start a new run "
            "for those"
        )
    return config
