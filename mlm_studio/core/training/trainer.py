"""The training loop: a generator of immutable records, steered by a `TrainingControl` between steps.

Everything random is derived from the seed and the step: the order of blocks (one permutation per epoch),
the masking of each micro-batch, and dropout. A run resumed from a checkpoint therefore continues exactly
as if it had never stopped, with nothing but the step number and the optimizer moments restored (with a
time budget the learning rate follows the clock, so a resumed run repeats the data and masking, not the rates).
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import numpy as np
import torch

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.schedule import learning_rate
from mlm_studio.core.data.dataset import BlockOrder, BlockSet
from mlm_studio.core.data.masking import Masker
from mlm_studio.core.models.build import build_trained, masked_lm_of
from mlm_studio.core.storage.checkpoint import load_optimizer, load_weights, read_state, weights_finite
from mlm_studio.core.training.control import TrainingControl
from mlm_studio.core.training.device import adamw, autocast_dtype, resolve_device, resolved_precision
from mlm_studio.core.training.distributed import SINGLE, Distributed, any_rank, no_sync_unless, summed
from mlm_studio.core.training.failures import (
    OOM_MESSAGE,
    RunFailed,
    diverged_message,
    nonfinite_message,
    out_of_memory,
    refuse_nonfinite_resume,
    save_error_message,
)
from mlm_studio.core.training.held_out import detection_scores, held_out_sums, mask_blocks
from mlm_studio.core.training.probes import load_probes, score_probes
from mlm_studio.core.training.records import (
    CheckpointRecord,
    EvalRecord,
    FailedRecord,
    FinishedRecord,
    PausedRecord,
    ProbeRecord,
    Record,
    StartedRecord,
    WarningRecord,
)
from mlm_studio.core.training.run_folder import RunDir, finite_or_none
from mlm_studio.core.training.step_sums import StepSums, Window
from mlm_studio.core.training.tensorboard import open_event_log
from mlm_studio.core.training.threads import governor_for

log = logging.getLogger(__name__)


# --- the loop ---------------------------------------------------------------------------------------
class Trainer:
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
        """`pause_on_save_error`: when a checkpoint cannot be written, pause and retry on resume (someone can
        free space and press Resume) instead of failing."""
        self.run_dir = run
        self.pause_on_save_error = pause_on_save_error
        self.config: RunConfig = run.config
        self.train_blocks, self.validation = train, validation
        self.control = control or TrainingControl()
        self.dist = distributed
        t = self.config.training
        self.device = device or resolve_device(t.device)
        self.autocast = autocast_dtype(t.precision, self.device)
        if len(train) == 0:
            raise ValueError("the training split has no blocks; add text to the corpus")
        tokenizer = run.tokenizer
        if tokenizer.vocab_size > self.config.model.vocab_size:
            raise ValueError(
                f"the tokenizer has {tokenizer.vocab_size} pieces but the model only {self.config.model.vocab_size}"
            )
        torch.manual_seed(t.seed)
        self.model = build_trained(self.config).to(self.device)  # a masked-LM, or ELECTRA's pair
        self.optimizer = adamw(self.model, t, self.device)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=t.precision == "fp16")
        self.masker = Masker.for_tokenizer(self.config.masking, tokenizer, self.device)
        self.tokenizer = tokenizer
        self.probes = load_probes(run.path)
        self.generator = torch.Generator(device=self.device)
        self.total_steps = self.config.steps_for(len(train))
        self.step = 0
        self.tokens_seen = 0
        self.elapsed = 0.0
        self.warmup_ended_at: float | None = None  # training time when warm-up ended (the decay starts there)
        self.best_val_loss = math.inf
        self.last_eval: EvalRecord | None = None
        self.restarted = False  # resumed without a checkpoint: the recorded steps are trained again from 0
        self._unwritten: list[dict] = []  # metrics a full disk refused, written with the next ones
        if distributed.main:
            run.remove_leftovers()
        self._resume()
        self.events = open_event_log(run.path, run.read_metrics()) if distributed.main else None
        self.last_saved = self.step
        self.forward = self.model
        if distributed.world_size > 1:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            self.forward = DistributedDataParallel(self.model, device_ids=ids)
        if t.compile:
            self.forward = torch.compile(self.forward)
        self.order = BlockOrder(len(train), t.batch_size, t.seed, distributed.rank, distributed.world_size)

    def _resume(self) -> None:
        checkpoint = self.run_dir.latest_checkpoint()
        if checkpoint is None:
            initial = self.run_dir.initial_weights
            if initial is not None:
                load_weights(initial, self.model)
            # steps recorded without a checkpoint to continue them: the run begins again, and says so
            self.restarted = any(record.get("step", 0) > 0 for record in self.run_dir.read_metrics())
            if self.restarted and self.dist.main:
                self.run_dir.truncate_metrics_after(0)
            return
        refuse_nonfinite_resume(self.run_dir)
        state = read_state(checkpoint)
        load_weights(checkpoint, self.model)
        load_optimizer(checkpoint, self.optimizer)
        self.step = int(state["step"])
        self.tokens_seen = int(state["tokens_seen"])
        self.elapsed = float(state["elapsed"])
        warmup_ended_at = state.get("warmup_ended_at")
        if self.step >= self.config.training.warmup_steps:
            self.warmup_ended_at = float(warmup_ended_at or 0.0)
        self.best_val_loss = float(state.get("best_val_loss") or math.inf)
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        if self.dist.main:
            self.run_dir.truncate_metrics_after(self.step)
        evaluations = [r for r in self.run_dir.read_metrics() if r.get("type") == "eval"]
        if evaluations:  # what a resume that evaluates no more ends on
            self.last_eval = EvalRecord(**{f.name: evaluations[-1].get(f.name) for f in fields(EvalRecord)})

    # --- schedule and data ----------------------------------------------------------------------------
    def _micro_batch(self, blocks: BlockSet, indices: np.ndarray, seed: int):
        masked, attention, real, _ = mask_blocks(blocks, indices, seed, self.masker, self.generator, self.device)
        return masked, attention, real

    # --- one run ------------------------------------------------------------------------------------
    def run(self) -> Iterator[Record]:
        """Train until the step budget is spent or a stop is requested, yielding records as they happen: first
        what began, last how it ended."""
        try:
            opening = [self._logged(self.started())]
            if self.restarted:
                opening.append(self._logged(WarningRecord(0, self.restart_message())))
            if len(self.validation) == 0:
                opening.append(self._logged(WarningRecord(self.step, self.no_validation())))
            for record in itertools.chain(opening, self._run()):
                yield record
                for note in self.events.take_notes() if self.events is not None else ():
                    yield self._logged(WarningRecord(self.step, note))
        finally:
            if self.events is not None:
                self.events.close()

    def _run(self) -> Iterator[Record]:
        try:
            yield from self._loop()
        except RunFailed as exc:
            yield self._logged(FailedRecord(self.step, str(exc)))
        except RuntimeError as exc:  # torch.OutOfMemoryError included
            if not out_of_memory(exc):
                log.exception("training failed")
                yield self._logged(FailedRecord(self.step, f"Training stopped by an error: {exc}"))
                return
            yield from self._save_after_out_of_memory()

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
            events=self.events.writing if self.events is not None else "",
            events_refused=self.events is not None and self.events.error is not None,
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

    def _save_after_out_of_memory(self) -> Iterator[Record]:
        """The weights are those of the last completed step: keep them, then say what to change."""
        self.optimizer.zero_grad(set_to_none=True)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        saved = ""
        if self.step > self.last_saved:
            try:
                yield from self._save()
                saved = f" Step {self.step} was saved; resume the run after changing the settings."
            except (RunFailed, RuntimeError) as exc:
                saved = f" Saving step {self.step} failed too ({exc})."
        yield self._logged(FailedRecord(self.step, OOM_MESSAGE + saved))

    def _loop(self) -> Iterator[Record]:
        t = self.config.training
        self.model.train()
        window, nonfinite_in_a_row, out_of_time = Window(), 0, False
        threads = governor_for(self.device)  # a CPU run's threads follow the idle cores
        self._clock = time.perf_counter()
        while self.step < self.total_steps and not out_of_time:
            if threads is not None:
                threads.check()
            self._wait_while_paused()
            if self._agree(self.control.stop_requested):
                break
            started = time.perf_counter()
            lr = self._set_learning_rate()
            step = self.train_step()
            if step.problem is None:
                nonfinite_in_a_row = 0
                window.add(step)
            else:
                nonfinite_in_a_row += 1
                yield self._logged(WarningRecord(self.step + 1, f"{step.problem}; the update was skipped"))
                if nonfinite_in_a_row >= t.max_nonfinite_steps:
                    message = nonfinite_message(nonfinite_in_a_row, self.run_dir.newest_finite_checkpoint())
                    yield self._logged(FailedRecord(self.step + 1, message))
                    return
            out_of_time = self._advance(step.tokens, window, started)
            yield from self._report_step(window, lr, last=self.step == self.total_steps or out_of_time)
        yield from self._finish(stopped=self.step < self.total_steps and not out_of_time)

    def train_step(self) -> StepSums:
        """One optimizer step: forward and backward over each micro-batch, then clipping and the update, which a
        non-finite loss or gradient skips (every process agrees)."""
        t = self.config.training
        torch.manual_seed(t.seed * 1_000_003 + self.step)  # dropout, reproducible per step
        step = StepSums(torch.zeros((), device=self.device), torch.zeros((), device=self.device, dtype=torch.long))
        for micro in range(t.grad_accumulation):
            index = self.step * t.grad_accumulation + micro
            seed = (t.seed * 2_000_003 + index) * max(1, self.dist.world_size) + self.dist.rank
            masked, attention, real = self._micro_batch(self.train_blocks, self.order(index), seed)
            sync = micro == t.grad_accumulation - 1 or self.dist.world_size == 1
            with no_sync_unless(self.forward, sync), self._autocast():
                out = self.forward(masked.input_ids, attention, masked.labels)
            step.correct += (out.logits.detach().argmax(-1) == out.labels).sum()  # before the backward reuses them
            self.scaler.scale(out.loss / t.grad_accumulation).backward()
            step.loss_sum += out.masked_lm_loss.detach().float() * len(out.labels)
            step.predicted += len(out.labels)
            step.tokens += real
            detection = out.detection_sums()
            if detection is not None:
                step.detection = step.detection + detection
        if self._agree(not bool(torch.isfinite(step.loss_sum))):
            step.problem = f"non-finite loss at step {self.step + 1}"
        else:
            self.scaler.unscale_(self.optimizer)
            step.norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.max_grad_norm or math.inf)
            # fp16's scaler skips steps with overflowing gradients by itself and lowers its scale
            if not self.scaler.is_enabled() and self._agree(not bool(torch.isfinite(step.norm))):
                step.problem = f"non-finite gradient at step {self.step + 1}"
        if step.problem is None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        return step

    def _wait_while_paused(self) -> None:
        paused_at = time.perf_counter()
        self.control.wait_while_paused()
        self._clock += time.perf_counter() - paused_at  # time spent paused is not training time

    def _set_learning_rate(self) -> float:
        t = self.config.training
        if self.warmup_ended_at is None and self.step >= t.warmup_steps:
            self.warmup_ended_at = self.elapsed
        lr = learning_rate(t, self.step, self.total_steps, self.elapsed, self.warmup_ended_at or 0.0)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    def _advance(self, tokens: int, window: Window, started: float) -> bool:
        """Count the step, its tokens and its time; True when the time budget is spent."""
        self.step += 1
        self.tokens_seen += tokens * self.dist.world_size
        window.tokens += tokens * self.dist.world_size
        now = time.perf_counter()
        window.seconds += now - started
        self.elapsed += now - self._clock  # evaluations and checkpoints count: the budget is wall-clock time
        self._clock = now
        budget = self.config.training.time_budget
        return budget > 0 and self._agree(self.elapsed >= budget)

    def _report_step(self, window: Window, lr: float, last: bool) -> Iterator[Record]:
        """The step record, evaluation, probes and checkpoint that fall on this step."""
        t = self.config.training
        if self.step % t.log_interval == 0 or last:
            sums = summed(self.dist, window.sums(), self.device)
            record = window.record(sums, self.step, self.tokens_seen, lr, self.elapsed)
            if record is not None:
                yield self._logged(record)
            window.reset()
        if self.step % t.eval_interval == 0 or last:
            if len(self.validation):
                yield self._logged(self.evaluate())
            if self.probes and self.dist.main:
                results = score_probes(masked_lm_of(self.model), self.tokenizer, self.probes)
                yield self._logged(ProbeRecord(self.step, self.tokens_seen, self.elapsed, results))
        if self.step % t.checkpoint_interval == 0 or last:
            yield from self._save()

    def _finish(self, stopped: bool) -> Iterator[Record]:
        if stopped and self.step > self.last_saved:
            yield from self._save()
        final = self.last_eval
        yield self._logged(
            FinishedRecord(
                self.step,
                "stopped" if stopped else "completed",
                str(self.run_dir.path),
                final.loss if final else None,
                final.accuracy if final else None,
                final.step if final else None,
            )
        )

    def _autocast(self):
        return torch.autocast(self.device.type, dtype=self.autocast, enabled=self.autocast is not None)

    def _agree(self, flag: bool) -> bool:
        return any_rank(self.dist, flag, self.device)

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

    def _save(self) -> Iterator[Record]:
        """Write a checkpoint of finite weights (non-finite ones end the run unsaved). If it cannot be written
        (disk full, no permission), the previous one stays the latest; then either pause and retry on resume, or
        fail."""
        if self._agree(not weights_finite(self.model.parameters())):
            raise RunFailed(diverged_message(self.step, self.run_dir.newest_finite_checkpoint()))
        val_loss = self.last_eval.loss if self.last_eval and self.last_eval.step == self.step else None
        val_loss = val_loss if val_loss is not None and math.isfinite(val_loss) else None
        if val_loss is not None and val_loss < self.best_val_loss:
            self.best_val_loss = val_loss
        while True:
            path, error = Path(), None
            if self.dist.main:
                try:
                    path = self.run_dir.save_checkpoint(
                        self.step,
                        self.model,
                        self.optimizer,
                        self._state(val_loss),
                        self.config.training.keep_checkpoints,
                    )
                except OSError as exc:
                    error = exc
            if not self._agree(error is not None):
                self.last_saved = self.step
                yield self._logged(CheckpointRecord(self.step, str(path)))
                return
            message = save_error_message(error, self.step, self.run_dir.latest_checkpoint())
            if not self.pause_on_save_error or self.control.stop_requested:
                raise RunFailed(message)
            self.control.pause()
            yield self._logged(
                PausedRecord(self.step, message + " Training is paused: make room or fix the folder, then resume.")
            )
            self._wait_while_paused()
            if self.control.stop_requested:
                raise RunFailed(message + " Stopped without it.")

    def _state(self, val_loss: float | None) -> dict:
        return {
            "tokens_seen": self.tokens_seen,
            "elapsed": self.elapsed,
            "warmup_ended_at": self.warmup_ended_at,
            "val_loss": val_loss,
            "best_val_loss": None if math.isinf(self.best_val_loss) else self.best_val_loss,
            "scaler": self.scaler.state_dict() if self.scaler.is_enabled() else None,
            "micro_batches": self.step * self.config.training.grad_accumulation,
            "world_size": self.dist.world_size,
        }

    def _logged(self, record: Record) -> Record:
        """Append the record to the run's metrics; if the disk refuses, keep it until the next write."""
        if self.dist.main:
            self._unwritten.append(finite_or_none(record.to_dict()))
            try:
                self.run_dir.append_metrics(self._unwritten)
            except OSError:
                return record
            if self.events is not None:  # what a full disk held back reaches the events as it reaches the file
                for written in self._unwritten:
                    self.events.add(written)
            self._unwritten = []
        return record
