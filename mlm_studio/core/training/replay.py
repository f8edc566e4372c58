"""Replaying one step of a pre-training run from its folder alone: the blocks, masks, dropout and (ELECTRA) the
generator's samples the trainer used at step N, rebuilt from the seed and the step, scored with a checkpoint.

The trainer's step N reads the weights of step N-1 and, per process, sets PyTorch's global seed once
(`dropout_seed`), then runs its micro-batches in order (`masking_seed` masks each). The replay does the same, in
training mode and with the run's precision, without a backward: with the checkpoint of step N-1 its loss is the
loss the trainer measured for step N. With an older or newer checkpoint the batch is the same and the scores are
that checkpoint's, said as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mlm_studio.core.data.builtin_corpus import restore_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.dataset import BlockSet, split_blocks, tokenize_corpus
from mlm_studio.core.data.masking import IGNORE_INDEX, Masker
from mlm_studio.core.data.masking_preview import PreviewToken, preview_row
from mlm_studio.core.errors import UserError
from mlm_studio.core.models.build import build_trained
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.device import autocast_dtype, resolve_device
from mlm_studio.core.runs.loop import dropout_seed
from mlm_studio.core.runs.run_folder import RunDir, checkpoint_step
from mlm_studio.core.storage.checkpoint import load_weights, read_state
from mlm_studio.core.training.held_out import mask_blocks
from mlm_studio.core.training.trainer import masking_seed, training_order

CANDIDATES = 5  # the model's top candidates kept per masked token


class ReplayRefused(UserError):
    """A step that cannot be replayed: its sentence says why."""


@dataclass(frozen=True)
class ReplayedToken:
    """One position of a replayed block: as the masking preview shows it, with the loss and the model's top
    candidates (piece, probability) where it was masked."""

    token: PreviewToken
    loss: float | None = None
    candidates: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ReplayedSequence:
    """One block of the step: which process and micro-batch read it, and what it added to the step's loss."""

    block: int  # its index among the run's training blocks
    rank: int
    micro_batch: int  # its place in the step, 0 .. grad_accumulation - 1
    tokens: tuple[ReplayedToken, ...]
    loss_sum: float  # the summed loss of its masked tokens: its share of the step's loss, times the masked count
    predicted: int

    @property
    def loss(self) -> float:
        return self.loss_sum / self.predicted if self.predicted else 0.0


@dataclass(frozen=True)
class Replay:
    """Step `step` replayed with `checkpoint`; its sequences worst first (by summed loss)."""

    step: int
    checkpoint: str  # the folder's name, "step-0000040", or "init" for an imported model's weights
    checkpoint_step: int
    loss: float  # the step's masked-LM loss: summed over its masked tokens, divided by their count
    predicted: int
    sequences: tuple[ReplayedSequence, ...]

    @property
    def exact(self) -> bool:
        """Whether the weights are those step `step` was trained with (its loss then is the trainer's)."""
        return self.checkpoint_step == self.step - 1

    def checkpoint_said(self) -> str:
        """Which weights scored the batch, in words."""
        if self.exact:
            return f"{self.checkpoint}, the weights step {self.step} was trained with"
        if self.checkpoint_step >= self.step:
            return f"{self.checkpoint}, the weights after step {self.step} (none from before it is kept)"
        older = self.step - 1 - self.checkpoint_step
        return f"{self.checkpoint}, {older} step(s) older than the weights step {self.step} read"


def replay_step(
    path: str | Path,
    step: int,
    progress: Progress | None = None,
    device: str | None = None,
    blocks: BlockSet | None = None,
) -> Replay:
    """Replay step `step` of the run in `path` (see the module's description); `device` overrides the run's, and
    `blocks`, the run's training blocks from `replay_blocks`, save reading its corpus again."""
    run = RunDir(path)
    if run.task is not None:
        raise ReplayRefused(f"{run.name} is a fine-tuning run; replay reads pre-training runs")
    trained = trained_steps(run)
    if not 1 <= step <= trained:
        raise ReplayRefused(
            f"step {step} is not a step of {run.name}, which has trained {trained} step(s)"
            + (f"; give a step from 1 to {trained}" if trained else "")
        )
    name, weights_step, folder = chosen_weights(run, step)
    train = blocks if blocks is not None else replay_blocks(run, progress)
    config, t = run.config, run.config.training
    torch_device = resolve_device(device or t.device)
    model = build_trained(config)
    load_weights(folder, model)
    model.to(torch_device).train()
    world_size = int(read_state(folder).get("world_size") or 1) if name != "init" else 1
    scorer = _Scorer(run, train, model, torch_device)
    sequences = []
    for rank in range(world_size):
        order = training_order(run, len(train), rank, world_size)
        torch.manual_seed(dropout_seed(t.seed, step - 1))
        for micro in range(t.grad_accumulation):
            index = (step - 1) * t.grad_accumulation + micro
            seed = masking_seed(t.seed, index, rank, world_size)
            sequences += scorer.micro_batch(order(index), seed, rank, micro)
    loss_sum, predicted = scorer.loss_sum, scorer.predicted
    worst_first = sorted(sequences, key=lambda s: -s.loss_sum)
    loss = loss_sum / predicted if predicted else float("nan")
    return Replay(step, name, weights_step, loss, predicted, tuple(worst_first))


def trained_steps(run: RunDir) -> int:
    """How many steps the run has trained, by its records and checkpoints."""
    logged = [r["step"] for r in run.read_metrics() if r.get("type") in ("step", "checkpoint")]
    saved = [checkpoint_step(c) for c in run.checkpoints()]
    return max([0, *logged, *saved])


def chosen_weights(run: RunDir, step: int) -> tuple[str, int, Path]:
    """(name, step, folder) of the weights that replay `step`: the newest checkpoint before it (step - 1's is
    exact), an imported model's initial weights counting as step 0; without one, `step`'s own checkpoint."""
    kept = {checkpoint_step(c): c for c in run.checkpoints() if checkpoint_step(c) <= step}
    before = [number for number in kept if number < step]
    if before:
        return kept[max(before)].name, max(before), kept[max(before)]
    if run.initial_weights is not None:
        return run.initial_weights.name, 0, run.initial_weights
    if step in kept:
        return kept[step].name, step, kept[step]
    raise ReplayRefused(
        f"{run.name} keeps no checkpoint at or before step {step} to score it with"
        + (f" (its oldest is {run.checkpoints()[0].name})" if run.checkpoints() else "")
        + "; replay a later step, or keep more checkpoints (training.keep_checkpoints)"
    )


def replay_blocks(run: RunDir, progress: Progress | None = None) -> BlockSet:
    """The run's training blocks, read from its recorded corpus; refused if the corpus changed since."""
    sources, options = run.corpus_sources()
    for source in sources:
        restore_builtin_corpus(source, progress)
    changes = run.corpus_changes()
    if changes:
        raise ReplayRefused(
            f"cannot replay {run.name}: its corpus changed since the run started ({'; '.join(changes[:5])}), so "
            "its batches can no longer be rebuilt. Restore the files to replay it"
        )
    tokenizer = run.tokenizer
    corpus = load_corpus(sources, options, progress)
    return split_blocks(tokenize_corpus(corpus, tokenizer, progress), run.config.data, tokenizer)[0]


class _Scorer:
    """Runs the trainer's forward on micro-batches and turns each block's scores into a `ReplayedSequence`."""

    def __init__(self, run: RunDir, train: BlockSet, model: torch.nn.Module, device: torch.device) -> None:
        config = run.config
        self.train, self.model, self.device = train, model, device
        self.tokenizer = run.tokenizer
        self.masker = Masker.for_tokenizer(config.masking, self.tokenizer, device)
        self.generator = torch.Generator(device=device)
        self.autocast = autocast_dtype(config.training.precision, device)
        self.loss_sum, self.predicted = 0.0, 0

    def micro_batch(self, indices: np.ndarray, seed: int, rank: int, micro: int) -> list[ReplayedSequence]:
        masked, attention, _, batch = mask_blocks(self.train, indices, seed, self.masker, self.generator, self.device)
        with torch.autocast(self.device.type, dtype=self.autocast, enabled=self.autocast is not None):
            out = self.model(masked.input_ids, attention, masked.labels)  # with gradients, as trained
        self.loss_sum += float(out.masked_lm_loss.detach().float()) * len(out.labels)
        self.predicted += len(out.labels)
        logits = out.logits.detach().float()
        token_loss = torch.logsumexp(logits, -1) - logits.gather(1, out.labels[:, None]).squeeze(1)
        best = logits.softmax(-1).topk(min(CANDIDATES, logits.shape[-1]), dim=-1)
        rows, columns = (masked.labels != IGNORE_INDEX).nonzero(as_tuple=True)  # the order of the logits' rows
        corrupted = getattr(out, "corrupted", None)
        shown_ids, kinds = masked.input_ids.cpu().numpy(), masked.kinds.cpu().numpy()
        generated = corrupted.cpu().numpy() if corrupted is not None else None
        scores = _per_position(rows.cpu(), columns.cpu(), token_loss.cpu(), best.indices.cpu(), best.values.cpu())
        sequences = []
        for row, block in enumerate(indices.tolist()):
            shown = preview_row(
                self.tokenizer,
                batch.input_ids[row],
                shown_ids[row],
                kinds[row],
                batch.attention_mask[row],
                None if generated is None else generated[row],
            )
            losses = scores.get(row, {})
            tokens = tuple(
                ReplayedToken(token, *self._scored(losses[column])) if column in losses else ReplayedToken(token)
                for column, token in enumerate(shown)
            )
            row_losses = [loss for loss, _, _ in losses.values()]
            sequences.append(ReplayedSequence(block, rank, micro, tokens, float(sum(row_losses)), len(row_losses)))
        return sequences

    def _scored(self, score: tuple[float, list[int], list[float]]) -> tuple[float, tuple[tuple[str, float], ...]]:
        loss, ids, probabilities = score
        return loss, tuple((self.tokenizer.id_to_token(i), p) for i, p in zip(ids, probabilities, strict=True))


def _per_position(rows, columns, losses, ids, probabilities) -> dict[int, dict[int, tuple]]:
    """{row: {column: (loss, candidate ids, their probabilities)}} of the masked positions."""
    scores: dict[int, dict[int, tuple]] = {}
    for row, column, loss, best, chances in zip(
        rows.tolist(), columns.tolist(), losses.tolist(), ids.tolist(), probabilities.tolist(), strict=True
    ):
        scores.setdefault(row, {})[column] = (loss, best, chances)
    return scores
