"""The one training loop every recipe runs on: pre-training (masked-LM, ELECTRA) and fine-tuning (every task kind).

A recipe subclasses `Loop` and says only what differs: the loss of one micro-batch (`micro_step`), what an
evaluation records (`evaluation_records`), what its checkpoints keep beyond the loop's own state (`recipe_state`,
`restore`) and how a run ends (`ending_records`). The loop owns the rest, alike for every recipe:

- the step's arithmetic: gradient accumulation over micro-batches, DistributedDataParallel's one all-reduce per
  step, fp16's loss scaling, clipping, the learning rate of `config.schedule`, dropout seeded by the step;
- the run's clock: pause and stop from another thread, the time budget, the thread governor under load;
- its faults: a non-finite step is said and skipped (and kept out of the logged averages) and enough of them in a
  row end the run naming the newest finite checkpoint; out of memory saves the last completed step and says what
  to change; a checkpoint the disk refuses leaves the previous one latest, then pauses and retries (the window) or
  fails (a terminal); records a full disk refused are kept and written with the next ones;
- resuming exactly: the step, the tokens seen, the clock, the warm-up's end and the loss scale come back from the
  latest checkpoint, and the recipe's own state with them.

Every process of a torchrun run takes the same decisions (`any_rank`); only the main one writes.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.schedule import learning_rate
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.device import autocast_dtype, resolve_device
from mlm_studio.core.runs.distributed import SINGLE, Distributed, any_rank, no_sync_unless, summed
from mlm_studio.core.runs.failures import (
    OOM_MESSAGE,
    RunFailed,
    diverged_message,
    nonfinite_message,
    out_of_memory,
    refuse_nonfinite_resume,
    save_error_message,
)
from mlm_studio.core.runs.records import (
    CheckpointRecord,
    FailedRecord,
    PausedRecord,
    Record,
    StartedRecord,
    WarningRecord,
)
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.settings import flat_settings
from mlm_studio.core.runs.sinks import Sinks
from mlm_studio.core.runs.step_sums import StepLog, StepSums, Window
from mlm_studio.core.runs.threads import governor_for
from mlm_studio.core.storage.checkpoint import load_optimizer, load_weights, read_state, weights_finite
from mlm_studio.core.storage.crash_report import bug_said
from mlm_studio.core.storage.metric_lines import finite_or_none

log = logging.getLogger(__name__)


@dataclass
class MicroStep:
    """What a recipe measured on one micro-batch: the mean loss to differentiate, and the sums the step adds up."""

    loss: torch.Tensor
    loss_sum: torch.Tensor  # the loss summed over the predicted positions (or labels), detached
    correct: torch.Tensor
    predicted: int
    tokens: int  # real tokens, padding excluded
    detection: torch.Tensor | None = None  # ELECTRA's DETECTION_SUMS


def dropout_seed(seed: int, step: int) -> int:
    """The global seed set before the step after `step` completed steps: its dropout (and anything else its
    micro-batches draw from PyTorch's global generator), reproducible per step."""
    return seed * 1_000_003 + step


class Loop:
    """Trains `self.model` with `self.optimizer` (both made by the recipe before it calls `_ready`)."""

    doing = "Training"  # what a failure message says stopped
    find_unused_parameters = False  # DistributedDataParallel's, for a model whose forward skips some parameters

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    total_steps: int

    def __init__(
        self,
        run: RunDir,
        control: TrainingControl | None = None,
        distributed: Distributed = SINGLE,
        device: torch.device | None = None,
        pause_on_save_error: bool = False,
    ) -> None:
        """`pause_on_save_error`: when a checkpoint cannot be written, pause and retry on resume (someone can
        free space and press Resume) instead of failing."""
        self.run_dir = run
        self.config: RunConfig = run.config
        self.control = control or TrainingControl()
        self.dist = distributed
        self.pause_on_save_error = pause_on_save_error
        t = self.config.training
        self.device = device or resolve_device(t.device)
        self.autocast = autocast_dtype(t.precision, self.device)  # None: fp32
        self.eval_interval = t.eval_interval
        self.step, self.tokens_seen, self.elapsed = 0, 0, 0.0
        self.warmup_ended_at: float | None = None  # training time when warm-up ended (the decay starts there)
        self.stopped_early = False  # a recipe's policy ended the run before its last step
        self.sinks: Sinks | None = None  # opened when it trains: a run that has ended is read, not written
        self._unwritten: list[dict] = []  # metrics a full disk refused, written with the next ones
        self._steps = StepLog()  # the steps not yet in steps.tsv
        self._last: dict | None = None  # the last record logged: how the run ended, for the sinks

    def _ready(self) -> None:
        """With the model and optimizer made: the loss scaler, the resume, the model as the steps call it."""
        t = self.config.training
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=t.precision == "fp16")
        if self.dist.main:
            self.run_dir.remove_leftovers()
        self._resume()
        self.last_saved = self.step
        self.forward = self.model
        if self.dist.world_size > 1:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            self.forward = DistributedDataParallel(
                self.model, device_ids=ids, find_unused_parameters=self.find_unused_parameters
            )
        if t.compile:
            self.forward = torch.compile(self.forward)

    # --- what a recipe says -----------------------------------------------------------------------------
    def micro_step(self, index: int) -> MicroStep:
        """The loss of micro-batch `index` (the step times the micro-batches per step, plus its place)."""
        raise NotImplementedError

    def started(self) -> StartedRecord:
        raise NotImplementedError

    def evaluation_records(self) -> Iterator[Record]:
        """What an evaluation at this step records (and the policies it drives: best weights, stopping early)."""
        return iter(())

    def ending_records(self, reason: str) -> Iterator[Record]:
        """The last records of a run that ended for `reason` ("completed", "stopped" or "stopped early")."""
        raise NotImplementedError

    def reported_params(self) -> dict:
        """What a tracker records of the run: its settings by `section.field` (a recipe keeps those it reads and adds
        its own)."""
        return flat_settings(self.config)

    def opening_records(self) -> list[Record]:
        """Warnings said when the run starts, after its started record."""
        return []

    def earlier_end(self) -> list[Record]:
        """The records of a run that had ended before this call, said again instead of training; none to train."""
        return []

    def start_fresh(self) -> None:
        """Set up a run with no checkpoint (its initial weights)."""

    def recipe_state(self) -> dict:
        """What a checkpoint keeps of the recipe's own state."""
        return {}

    def restore(self, state: dict) -> None:
        """Take back the recipe's own state from a checkpoint's `state`."""

    def checkpoint_due(self, last: bool) -> bool:
        return self.step % self.config.training.checkpoint_interval == 0 or last

    # --- resuming ---------------------------------------------------------------------------------------
    def _resume(self) -> None:
        checkpoint = self.run_dir.latest_checkpoint()
        if checkpoint is None:
            self.start_fresh()
            return
        refuse_nonfinite_resume(self.run_dir)
        state = read_state(checkpoint)
        load_weights(checkpoint, self.model)
        load_optimizer(checkpoint, self.optimizer)
        self.step = int(state["step"])
        self.tokens_seen = int(state["tokens_seen"])
        self.elapsed = float(state["elapsed"])
        if self.step >= self.config.training.warmup_steps:
            self.warmup_ended_at = float(state.get("warmup_ended_at") or 0.0)
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        if self.dist.main:
            self.run_dir.truncate_metrics_after(self.step)
        self.restore(state)

    # --- one run ----------------------------------------------------------------------------------------
    def run(self) -> Iterator[Record]:
        """Train until the steps are spent, the time budget is, a policy ends the run or a stop is requested,
        yielding records as they happen: first what began, last how it ended."""
        ended = self.earlier_end()
        if ended:
            yield from ended
            return
        try:
            if self.dist.main:
                self.sinks = Sinks(self.run_dir, self.reported_params())
            opening = [self._logged(self.started()), *(self._logged(r) for r in self.opening_records())]
            for record in itertools.chain(opening, self._run()):
                yield record
                for note in self.sinks.take_notes() if self.sinks is not None else ():
                    yield self._logged(WarningRecord(self.step, note))
        finally:
            if self.sinks is not None:
                self.sinks.close(self._last)

    def _run(self) -> Iterator[Record]:
        try:
            yield from self._loop()
        except RunFailed as exc:
            yield self._logged(FailedRecord(self.step, str(exc)))
        except RuntimeError as exc:  # torch.OutOfMemoryError included
            if not out_of_memory(exc):
                log.exception("training failed")
                said = bug_said(exc, "its traceback could not be written")
                yield self._logged(FailedRecord(self.step, f"{self.doing} stopped: {said}"))
                return
            yield from self._save_after_out_of_memory()

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
        window, nonfinite_in_a_row, out_of_time = Window(), 0, False
        threads = governor_for(self.device)  # a CPU run's threads follow the idle cores
        self._clock = time.perf_counter()
        while self.step < self.total_steps and not out_of_time and not self.stopped_early:
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
            self._steps.add(self.step, step.loss_sum, step.predicted, step.norm)
            yield from self._report_step(window, lr, last=self.step == self.total_steps or out_of_time)
        stopped = self.step < self.total_steps and not out_of_time and not self.stopped_early
        if stopped and self.step > self.last_saved:  # a stop right after a checkpoint writes (and says) it once
            yield from self._save()
        yield from self.ending_records("stopped" if stopped else "stopped early" if self.stopped_early else "completed")

    def train_step(self) -> StepSums:
        """One optimizer step: forward and backward over each micro-batch, then clipping and the update, which a
        non-finite loss or gradient skips (every process agrees)."""
        t = self.config.training
        torch.manual_seed(dropout_seed(t.seed, self.step))
        self.model.train()
        step = StepSums(torch.zeros((), device=self.device), torch.zeros((), device=self.device, dtype=torch.long))
        for micro in range(t.grad_accumulation):
            sync = micro == t.grad_accumulation - 1 or self.dist.world_size == 1
            with no_sync_unless(self.forward, sync):
                part = self.micro_step(self.step * t.grad_accumulation + micro)
            self.scaler.scale(part.loss / t.grad_accumulation).backward()
            step.loss_sum += part.loss_sum
            step.correct += part.correct
            step.predicted += part.predicted
            step.tokens += part.tokens
            if part.detection is not None:
                step.detection = step.detection + part.detection
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
        """The step record, evaluation and checkpoint that fall on this step."""
        if self.step % self.config.training.log_interval == 0 or last:
            sums = summed(self.dist, window.sums(), self.device)
            record = window.record(sums, self.step, self.tokens_seen, lr, self.elapsed)
            if record is not None:
                yield self._logged(record)
            window.reset()
            self._steps.write(self.run_dir.path, self.dist, self.device)
        if self.step % self.eval_interval == 0 or last:
            yield from self.evaluation_records()
        if self.checkpoint_due(last):
            yield from self._save()

    def _autocast(self):
        return torch.autocast(self.device.type, dtype=self.autocast, enabled=self.autocast is not None)

    def _agree(self, flag: bool) -> bool:
        return any_rank(self.dist, flag, self.device)

    # --- saving and logging -----------------------------------------------------------------------------
    def _save(self) -> Iterator[Record]:
        """Write a checkpoint of finite weights (non-finite ones end the run unsaved); see `_written`."""
        if self._agree(not weights_finite(self.model.parameters())):
            raise RunFailed(diverged_message(self.step, self.run_dir.newest_finite_checkpoint()))
        self._steps.write(self.run_dir.path, self.dist, self.device)
        state = {**self._state(), **self.recipe_state()}
        keep = self.config.training.keep_checkpoints
        path = yield from self._written(
            "checkpoint", lambda: self.run_dir.save_checkpoint(self.step, self.model, self.optimizer, state, keep)
        )
        self.last_saved = self.step
        yield self._logged(CheckpointRecord(self.step, str(path or Path())))

    def _written(self, what: str, write: Callable[[], Any]) -> Generator[Record, None, Any]:
        """What `write` returns, run on the main process until it succeeds. If it cannot write (disk full, no
        permission), the previous checkpoint stays the latest; then either pause and retry on resume (the window:
        someone can free space and press Resume), or fail (a terminal)."""
        while True:
            result, error = None, None
            if self.dist.main:
                try:
                    result = write()
                except OSError as exc:
                    error = exc
            if not self._agree(error is not None):
                return result
            message = save_error_message(error, self.step, self.run_dir.latest_checkpoint(), what)
            if not self.pause_on_save_error or self.control.stop_requested:
                raise RunFailed(message)
            self.control.pause()
            yield self._logged(
                PausedRecord(self.step, message + " Training is paused: make room or fix the folder, then resume.")
            )
            self._wait_while_paused()
            if self.control.stop_requested:
                raise RunFailed(message + " Stopped without it.")

    def _state(self) -> dict:
        return {
            "tokens_seen": self.tokens_seen,
            "elapsed": self.elapsed,
            "warmup_ended_at": self.warmup_ended_at,
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
            if self.sinks is not None:  # what a full disk held back reaches the sinks as it reaches the file
                for written in self._unwritten:
                    self.sinks.add(written)
            self._last = self._unwritten[-1]
            self._unwritten = []
        return record
