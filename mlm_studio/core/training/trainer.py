"""Pre-training's recipe on the one loop (`runs/loop.py`): masked-LM or ELECTRA batches, evaluation on held-out
blocks and the probe sentences.

Everything random is derived from the seed and the step: the order of blocks (one permutation per epoch),
the masking of each micro-batch, and dropout. A run resumed from a checkpoint therefore continues exactly
as if it had never stopped, with nothing but the step number and the optimizer moments restored (with a
time budget the learning rate follows the clock, so a resumed run repeats the data and masking, not the rates).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import torch

from mlm_studio.core.data.dataset import BlockOrder, BlockSet
from mlm_studio.core.data.masking import Masker
from mlm_studio.core.errors import UserError
from mlm_studio.core.models.build import build_trained, masked_lm_of
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.device import adamw, resolved_precision
from mlm_studio.core.runs.distributed import SINGLE, Distributed, summed
from mlm_studio.core.runs.loop import Loop, MicroStep
from mlm_studio.core.runs.records import EvalRecord, FinishedRecord, ProbeRecord, Record, StartedRecord, WarningRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import load_weights
from mlm_studio.core.training.branch_record import SkippingOrder, branch_order
from mlm_studio.core.training.held_out import detection_scores, held_out_sums, mask_blocks
from mlm_studio.core.training.probes import load_probes, score_probes


def training_order(run: RunDir, blocks: int, rank: int = 0, world_size: int = 1) -> BlockOrder | SkippingOrder:
    """The order in which process `rank` of `world_size` reads the run's `blocks` training blocks: a branch's passes
    over the batches it skips."""
    t = run.config.training
    return branch_order(run, BlockOrder(blocks, t.batch_size, t.seed, rank, world_size), t.grad_accumulation)


def masking_seed(seed: int, micro_batch: int, rank: int = 0, world_size: int = 1) -> int:
    """The seed that masks micro-batch `micro_batch` of process `rank` in a run seeded with `seed`."""
    return (seed * 2_000_003 + micro_batch) * max(1, world_size) + rank


class Trainer(Loop):
    """Trains the run's model on `train` blocks, evaluating on `validation` blocks."""

    def __init__(
        self,
        run: RunDir,
        train: BlockSet,
        validation: BlockSet,
        control: TrainingControl | None = None,
        distributed: Distributed = SINGLE,
        device: torch.device | None = None,
        pause_on_save_error: bool = False,
    ) -> None:
        super().__init__(run, control, distributed, device, pause_on_save_error)
        t = self.config.training
        self.train_blocks, self.validation = train, validation
        if len(train) == 0:
            raise UserError("the training split has no blocks; add text to the corpus")
        tokenizer = run.tokenizer
        if tokenizer.vocab_size > self.config.model.vocab_size:
            raise UserError(
                f"the tokenizer has {tokenizer.vocab_size} pieces but the model only {self.config.model.vocab_size}"
            )
        torch.manual_seed(t.seed)
        self.model = build_trained(self.config).to(self.device)  # a masked-LM, or ELECTRA's pair
        self.optimizer = adamw(self.model, t, self.device)
        self.masker = Masker.for_tokenizer(self.config.masking, tokenizer, self.device)
        self.tokenizer = tokenizer
        self.probes = load_probes(run.path)
        self.generator = torch.Generator(device=self.device)
        self.total_steps = self.config.steps_for(len(train))
        self.best_val_loss = math.inf
        self.last_eval: EvalRecord | None = None
        self.restarted = False  # resumed without a checkpoint: the recorded steps are trained again from 0
        self._ready()
        self.order = training_order(run, len(train), distributed.rank, distributed.world_size)

    def start_fresh(self) -> None:
        initial = self.run_dir.initial_weights
        if initial is not None:
            load_weights(initial, self.model)
        # steps recorded without a checkpoint to continue them: the run begins again, and says so
        self.restarted = any(record.step > 0 for record in self.run_dir.records())
        if self.restarted and self.dist.main:
            self.run_dir.truncate_metrics_after(0)

    def restore(self, state: dict) -> None:
        self.best_val_loss = float(state.get("best_val_loss") or math.inf)
        evaluations = self.run_dir.records(EvalRecord)
        if evaluations:  # what a resume that evaluates no more ends on
            self.last_eval = evaluations[-1]

    def _micro_batch(self, blocks: BlockSet, indices: np.ndarray, seed: int):
        masked, attention, real, _ = mask_blocks(blocks, indices, seed, self.masker, self.generator, self.device)
        return masked, attention, real

    def micro_step(self, index: int) -> MicroStep:
        """A micro-batch of blocks, masked by a seed of the run, the micro-batch and the process."""
        t = self.config.training
        seed = masking_seed(t.seed, index, self.dist.rank, self.dist.world_size)
        masked, attention, real = self._micro_batch(self.train_blocks, self.order(index), seed)
        with self._autocast():
            out = self.forward(masked.input_ids, attention, masked.labels)
        correct = out.correct()  # before the backward reuses the logits
        loss_sum = out.masked_lm_loss.detach().float() * len(out.labels)
        return MicroStep(out.loss, loss_sum, correct, len(out.labels), real, out.detection_sums())

    def opening_records(self) -> list[Record]:
        notes = [WarningRecord(0, self.restart_message())] if self.restarted else []
        if len(self.validation) == 0:
            notes.append(WarningRecord(self.step, self.no_validation()))
        return notes

    def started(self) -> StartedRecord:
        model = self.config.model
        return StartedRecord(
            step=self.step,
            run_dir=str(self.run_dir.path.resolve()),
            total_steps=self.total_steps,
            time_budget=self.config.training.time_budget,
            device=str(self.device),
            precision=resolved_precision(self.config.training.precision, self.device),
            layers=model.num_hidden_layers,
            hidden_size=model.hidden_size,
            parameters=sum(p.numel() for p in self.model.parameters()),
            train_blocks=len(self.train_blocks),
            events=self.sinks.events_folder if self.sinks is not None else "",
            events_refused=self.sinks is not None and self.sinks.events_refused,
            report_to=self.config.training.report_to,
        )

    def restart_message(self) -> str:
        """Why a resumed run begins again at step 0."""
        start = "its initial weights" if self.run_dir.initial_weights is not None else "new weights"
        return (
            f"{self.run_dir.name} has no checkpoint to continue from, so training restarts at step 0 from {start}; "
            "the records of its earlier steps are dropped"
        )

    def no_validation(self) -> str:
        """Why this run has no validation set, and what gives it one."""
        documents, share = self.train_blocks.data.documents, self.config.data.validation_fraction
        return (
            f"no validation set: data.validation_fraction ({share:g}) held out none of the corpus's {documents:,} "
            "document(s), so no validation loss is recorded; a validation set takes at least two documents and a "
            "share above 0"
        )

    def evaluation_records(self) -> Iterator[Record]:
        if len(self.validation):
            yield self._logged(self.evaluate())
        if self.probes and self.dist.main:
            results = score_probes(masked_lm_of(self.model), self.tokenizer, self.probes)
            yield self._logged(ProbeRecord(self.step, self.tokens_seen, self.elapsed, results))

    def ending_records(self, reason: str) -> Iterator[Record]:
        final = self.last_eval
        yield self._logged(
            FinishedRecord(
                self.step,
                reason,
                str(self.run_dir.path),
                final.loss if final else None,
                final.accuracy if final else None,
                final.step if final else None,
            )
        )

    def evaluate(self) -> EvalRecord:
        """Validation loss, accuracy and top-5 accuracy with a fixed masking, in fp32: comparable across runs."""
        t = self.config.training
        count = len(self.validation) if t.eval_blocks == 0 else min(t.eval_blocks, len(self.validation))
        mine = np.arange(self.dist.rank, count, self.dist.world_size)
        sums = held_out_sums(self.model, self.validation, mine, t.batch_size, self._micro_batch)
        sums = summed(self.dist, sums, self.device)
        loss_sum, top1, top5, predicted = sums[:4]
        loss = loss_sum / predicted if predicted else math.nan
        record = EvalRecord(
            step=self.step,
            tokens_seen=self.tokens_seen,
            loss=loss,
            accuracy=top1 / predicted if predicted else math.nan,
            top5_accuracy=top5 / predicted if predicted else math.nan,
            perplexity=math.exp(min(loss, 50.0)) if predicted else math.nan,
            elapsed=self.elapsed,
            **detection_scores(sums[4:]),
        )
        self.last_eval = record
        return record

    def recipe_state(self) -> dict:
        val_loss = self.last_eval.loss if self.last_eval and self.last_eval.step == self.step else None
        val_loss = val_loss if val_loss is not None and math.isfinite(val_loss) else None
        if val_loss is not None and val_loss < self.best_val_loss:
            self.best_val_loss = val_loss
        return {"val_loss": val_loss, "best_val_loss": None if math.isinf(self.best_val_loss) else self.best_val_loss}
