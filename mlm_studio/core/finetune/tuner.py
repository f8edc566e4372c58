"""The fine-tuning loop: like pre-training's, a generator of records steered by a `TrainingControl` between
steps, writing the same run folder (metrics.jsonl, TensorBoard events, checkpoints with optimizer moments).

It evaluates on the validation examples every `eval_interval` steps (an epoch by default), keeps the weights of
the best validation score in `best/`, stops early after `patience` evaluations without a better one, and at
the end restores the best weights and scores the test examples. Everything random comes from the seed and the
step (each epoch's order, dropout), so a resumed run continues exactly as if it had never stopped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mlm_studio.core.config.schedule import learning_rate
from mlm_studio.core.finetune.examples import batch_order
from mlm_studio.core.finetune.heads import TaskModel
from mlm_studio.core.finetune.label_kind import Evaluation
from mlm_studio.core.finetune.scores import main_score_name
from mlm_studio.core.models.encoder import layers_of
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.checkpoint import FORMAT_VERSION, load_optimizer, load_weights, read_state, save_weights
from mlm_studio.core.storage.files import atomic_write_folder, atomic_write_json
from mlm_studio.core.training.control import TrainingControl
from mlm_studio.core.training.device import adamw, autocast_dtype, resolve_device, resolved_precision
from mlm_studio.core.training.records import (
    RECORDS,
    CheckpointRecord,
    FailedRecord,
    FinishedRecord,
    Record,
    StartedRecord,
    TestRecord,
    ValidationRecord,
    WarningRecord,
)
from mlm_studio.core.training.run_folder import RunDir, finite_or_none
from mlm_studio.core.training.step_sums import StepSums, Window
from mlm_studio.core.training.tensorboard import open_event_log
from mlm_studio.core.training.threads import governor_for

BEST = "best"  # the run's folder of the best weights by validation score (and a state.json as a checkpoint's)


@dataclass(frozen=True)
class TaskData:
    """A task's labels and its examples encoded, split three ways (each part's length: its rows the model
    reads, its `ids` their token ids), how its kind learns and is scored (`label_kind.LabelKind`,
    `qa.kind.AnswerKind`), with what was noticed reading them."""

    labels: list[str]
    train: Any
    validation: Any
    test: Any
    kind: Any
    notes: tuple[str, ...] = ()
    seen_in_training: int = 0  # test examples whose text is also a training text (files given apart)


class FineTuner:
    """Fine-tunes the run's task model (from its `init/` weights or its latest checkpoint) on `data`."""

    def __init__(
        self,
        run: RunDir,
        data: TaskData,
        control: TrainingControl | None = None,
        resumed_with: str = "",
        progress: Progress | None = None,
    ) -> None:
        """`resumed_with`: what a resume changed in the run's settings, in words (see `setup.resume_with`);
        `progress`: told how far each scoring of the validation or test examples is."""
        self.run_dir, self.data, self.resumed_with, self.progress = run, data, resumed_with, progress
        self.task = run.task
        self.config = run.config
        self.control = control or TrainingControl()
        t = self.config.training
        self.device = resolve_device(t.device)
        self.autocast = autocast_dtype(t.precision, self.device)  # None: fp32
        torch.manual_seed(t.seed)
        self.model = TaskModel(self.config.model, self.task["task"], len(data.labels), self.task["pooling"])
        self.model.to(self.device)
        freeze(self.model, self.task["freeze_layers"])
        self.optimizer = adamw(self.model, t, self.device)
        self.tokenizer = run.tokenizer
        self.steps_per_epoch = math.ceil(len(data.train) / t.batch_size)
        self.total_steps = self.config.steps_for(len(data.train))
        self.eval_interval = t.eval_interval or self.steps_per_epoch
        self.step, self.tokens_seen, self.elapsed = 0, 0, 0.0
        self.best_score, self.best_step, self.stale, self.stopped_early = -math.inf, 0, 0, False
        self._order: tuple[int, list[np.ndarray]] = (-1, [])
        self._resume()
        run.remove_leftovers()
        self.events = None  # opened when it trains: a run that has ended is read, not written

    def _resume(self) -> None:
        checkpoint = self.run_dir.latest_checkpoint()
        if checkpoint is None:
            load_weights(self.run_dir.initial_weights, self.model)
            return
        state = read_state(checkpoint)
        load_weights(checkpoint, self.model)
        load_optimizer(checkpoint, self.optimizer)
        self.step, self.tokens_seen, self.elapsed = int(state["step"]), int(state["tokens_seen"]), state["elapsed"]
        self.best_score = -math.inf if state["best_score"] is None else float(state["best_score"])
        self.best_step, self.stale = int(state["best_step"]), int(state["stale"])
        self.stopped_early = bool(state["stopped_early"])
        self.run_dir.truncate_metrics_after(self.step)

    # --- the loop ------------------------------------------------------------------------------------
    def run(self) -> Iterator[Record]:
        """Train until the epochs are spent, the validation score stops improving or a stop is requested, then
        score the test examples with the best weights; records as they happen, the last says how it ended."""
        try:
            ended = self._earlier_end()
            if ended:
                yield WarningRecord(self.step, "this run has finished already; these are the test scores it wrote then")
                yield from ended
                return
            self.events = open_event_log(self.run_dir.path, self.run_dir.read_metrics())
            yield self._logged(self.started())
            for note in self.data.notes:
                yield self._logged(WarningRecord(self.step, note))
            yield from self._loop()
        except RuntimeError as exc:
            yield self._logged(FailedRecord(self.step, f"Fine-tuning stopped by an error: {exc}"))
        finally:
            if self.events is not None:
                self.events.close()

    def _earlier_end(self) -> list[Record]:
        """The test and finished records of a run that has ended (not stopped) at this step, as it wrote them; none
        when it has steps left (a completed run given more epochs trains on)."""
        if self.step < self.total_steps and not self.stopped_early:
            return []
        written = [
            r for r in self.run_dir.read_metrics() if r["step"] == self.step and r["type"] in ("test", "finished")
        ]
        if len(written) != 2 or written[-1].get("reason") == "stopped":
            return []
        test, finished = (RECORDS[r["type"]](**{k: v for k, v in r.items() if k != "type"}) for r in written)
        return [test, replace(finished, reason=ending(finished.reason, finished.step, self.total_steps))]

    def started(self) -> StartedRecord:
        return StartedRecord(
            step=self.step,
            run_dir=str(self.run_dir.path.resolve()),
            total_steps=self.total_steps,
            time_budget=0.0,
            device=str(self.device),
            precision=resolved_precision(self.config.training.precision, self.device),
            layers=self.config.model.num_hidden_layers,
            hidden_size=self.config.model.hidden_size,
            parameters=sum(p.numel() for p in self.model.parameters()),
            train_blocks=len(self.data.train),
            events=self.events.writing if self.events is not None else "",
            events_refused=self.events is not None and self.events.error is not None,
            score=main_score_name(self.task["task"], self.data.labels),
        )

    def _loop(self) -> Iterator[Record]:
        t = self.config.training
        window, saved = Window(), -1
        threads = governor_for(self.device)  # a CPU run's threads follow the idle cores, as pre-training's do
        clock = time.perf_counter()
        while self.step < self.total_steps and not self.stopped_early:
            if threads is not None:
                threads.check()
            paused = time.perf_counter()
            self.control.wait_while_paused()
            clock += time.perf_counter() - paused
            if self.control.stop_requested:
                break
            started = time.perf_counter()
            lr = learning_rate(t, self.step, self.total_steps, 0.0, 0.0)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            step = self.train_step()
            window.add(step)
            self.step += 1
            self.tokens_seen += step.tokens
            window.tokens += step.tokens
            now = time.perf_counter()
            window.seconds += now - started
            self.elapsed += now - clock
            clock = now
            last = self.step == self.total_steps
            if self.step % t.log_interval == 0 or last:
                record = window.record(list(window.sums()), self.step, self.tokens_seen, lr, self.elapsed)
                if record is not None:
                    yield self._logged(record)
                window.reset()
            if self.step % self.eval_interval == 0 or last:
                yield from self._validate()
            if self.step % t.checkpoint_interval == 0 or self.step % self.eval_interval == 0 or last:
                yield self._save()
                saved = self.step
        stopped = self.step < self.total_steps and not self.stopped_early
        if stopped and saved != self.step:  # a stop right after a checkpoint writes (and says) it once
            yield self._save()
        said = "stopped" if stopped else "stopped early" if self.stopped_early else "completed"
        yield from self._finish(ending(said, self.step, self.total_steps))

    def train_step(self) -> StepSums:
        """One optimizer step on one batch (dropout seeded by the step)."""
        t = self.config.training
        torch.manual_seed(t.seed * 1_000_003 + self.step)
        self.model.train()
        kind = self.data.kind
        ids, mask, types, targets = kind.batch(
            self.data.train, self._batch(self.step), self.tokenizer.pad_id, self.device
        )
        with torch.autocast(self.device.type, dtype=self.autocast, enabled=self.autocast is not None):
            logits = self.model(ids, mask, types)
        loss, correct, predicted = kind.loss(logits, targets)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.max_grad_norm or math.inf)
        if torch.isfinite(loss) and torch.isfinite(norm):
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return StepSums(loss.detach().float() * predicted, correct, predicted, int(mask.sum()), norm.detach())

    def _batch(self, step: int) -> np.ndarray:
        epoch, position = divmod(step, self.steps_per_epoch)
        if self._order[0] != epoch:
            lengths = self.data.train.lengths()
            seed = self.config.training.seed * 7_000_003 + epoch
            self._order = (epoch, batch_order(lengths, self.config.training.batch_size, seed))
        return self._order[1][position]

    # --- evaluation ----------------------------------------------------------------------------------
    def score(self, part, doing: str = "") -> Evaluation:
        """The model's loss and scores on `part`, in fp32 whatever the training precision, so scores compare
        across runs; `doing`, said with how far it is, to `progress`."""
        self.model.eval()
        told = self.progress.report if self.progress is not None and doing else None
        return self.data.kind.evaluate(
            self.model,
            part,
            self.config.training.batch_size,
            self.tokenizer.pad_id,
            self.device,
            None if told is None else lambda done, total: told(done, total, doing),
        )

    def _validate(self) -> Iterator[Record]:
        evaluation = self.score(self.data.validation, f"Scoring the {len(self.data.validation):,} validation examples")
        yield self._logged(ValidationRecord(self.step, **self._measures(evaluation)))
        score = evaluation.score
        if score > self.best_score:
            self.best_score, self.best_step, self.stale = score, self.step, 0
            atomic_write_folder(self.run_dir.path / BEST, self._write_best)
        else:
            self.stale += 1
            if self.stale >= self.task["patience"] and self.step < self.total_steps:  # the last step ends it anyway
                self.stopped_early = True
                yield self._logged(
                    WarningRecord(
                        self.step,
                        f"stopping early: the validation score has not improved for {self.stale} evaluations "
                        f"(best {self.best_score:.4f} at step {self.best_step})",
                    )
                )

    def _write_best(self, folder: Path) -> None:
        save_weights(self.model, folder / "model.safetensors")
        state = {"step": self.step, "tokens_seen": self.tokens_seen, "elapsed": self.elapsed, "score": self.best_score}
        atomic_write_json(folder / "state.json", {**state, "format": FORMAT_VERSION})

    def _measures(self, evaluation: Evaluation) -> dict:
        return {
            "tokens_seen": self.tokens_seen,
            "elapsed": self.elapsed,
            "epoch": self.step / self.steps_per_epoch,
            "loss": evaluation.loss,
            **evaluation.measures,
        }

    def _finish(self, reason: str) -> Iterator[Record]:
        best = self.run_dir.path / BEST
        restored = (best / "model.safetensors").is_file()
        if restored:
            load_weights(best, self.model)
        evaluation = self.score(self.data.test, f"Testing the best weights on {len(self.data.test):,} test examples")
        yield self._logged(
            TestRecord(
                self.step,
                best_step=self.best_step if restored else 0,
                seen_in_training=self.data.seen_in_training,
                **evaluation.details,
                **self._measures(evaluation),
            )
        )
        chosen = self._best_validation()
        loss, accuracy, at = chosen.get("loss"), chosen.get("accuracy"), chosen.get("step")
        yield self._logged(FinishedRecord(self.step, reason, str(self.run_dir.path), loss, accuracy, at))

    def _best_validation(self) -> dict:
        """The validation record of the best step as the run wrote it (before a resume, too); {} before any."""
        written = [r for r in self.run_dir.read_metrics() if r["type"] == "validation" and r["step"] == self.best_step]
        return written[-1] if written else {}

    def _save(self) -> Record:
        state = {
            "tokens_seen": self.tokens_seen,
            "elapsed": self.elapsed,
            "best_score": None if math.isinf(self.best_score) else self.best_score,
            "best_step": self.best_step,
            "stale": self.stale,
            "stopped_early": self.stopped_early,
            "val_loss": None,
        }
        keep = self.config.training.keep_checkpoints
        path = self.run_dir.save_checkpoint(self.step, self.model, self.optimizer, state, keep)
        return self._logged(CheckpointRecord(self.step, str(path)))

    def _logged(self, record: Record) -> Record:
        written = finite_or_none(record.to_dict())
        self.run_dir.append_metrics([written])
        if self.events is not None:
            self.events.add(written)
        return record


def ending(reason: str, step: int, total_steps: int) -> str:
    """How a run ended, as its finished record says it: one that reached its last step completed (earlier
    versions wrote "stopped early" when the patience ran out at that very step)."""
    return "completed" if reason == "stopped early" and step >= total_steps else reason


def freeze(model: TaskModel, layers: int) -> None:
    """Leave the embeddings and the first `layers` encoder layers untrained (none when `layers` is 0)."""
    if layers <= 0:
        return
    encoder = model.encoder_module
    for part in (encoder.embeddings, *layers_of(encoder)[:layers]):
        for parameter in part.parameters():
            parameter.requires_grad_(False)
