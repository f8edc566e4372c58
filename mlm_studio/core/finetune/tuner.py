"""Fine-tuning's recipe on the one loop (`runs/loop.py`): batches of labelled examples, the task's loss, and an
evaluation on the validation examples every `eval_interval` steps (an epoch by default) that keeps the weights of
the best validation score in `best/` and stops early after `patience` evaluations without a better one. At the
end it restores the best weights and scores the test examples.

A step reads a global batch of `batch_size × grad_accumulation` examples (each epoch's order from the seed and the
epoch), split into one micro-batch per accumulation and process: under torchrun the processes share each batch,
so a run on several processes takes the steps of a run on one. Everything random comes from the seed and the step,
so a resumed run continues exactly as if it had never stopped.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mlm_studio.core.finetune.examples import batch_order
from mlm_studio.core.finetune.heads import TaskModel
from mlm_studio.core.finetune.label_kind import Evaluation
from mlm_studio.core.finetune.scores import main_score_name
from mlm_studio.core.models.encoder import layers_of
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.device import adamw, resolved_precision
from mlm_studio.core.runs.distributed import SINGLE, Distributed, summed
from mlm_studio.core.runs.loop import Loop, MicroStep
from mlm_studio.core.runs.records import (
    FinishedRecord,
    Record,
    StartedRecord,
    TestRecord,
    ValidationRecord,
    WarningRecord,
)
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.settings import flat_settings
from mlm_studio.core.storage.checkpoint import FORMAT_VERSION, load_weights, save_weights
from mlm_studio.core.storage.files import atomic_write_folder, atomic_write_json

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


class FineTuner(Loop):
    """Fine-tunes the run's task model (from its `init/` weights or its latest checkpoint) on `data`."""

    doing = "Fine-tuning"
    find_unused_parameters = True  # a head may leave the encoder's pooler, or frozen layers' outputs, unused

    def __init__(
        self,
        run: RunDir,
        data: TaskData,
        control: TrainingControl | None = None,
        resumed_with: str = "",
        progress: Progress | None = None,
        distributed: Distributed = SINGLE,
        device: torch.device | None = None,
        pause_on_save_error: bool = False,
    ) -> None:
        """`resumed_with`: what a resume changed in the run's settings, in words (see `setup.resume_with`);
        `progress`: told how far each scoring of the validation or test examples is."""
        super().__init__(run, control, distributed, device, pause_on_save_error)
        self.data, self.resumed_with, self.progress = data, resumed_with, progress
        self.task = run.task
        t = self.config.training
        torch.manual_seed(t.seed)
        self.model = TaskModel(self.config.model, self.task.kind, len(data.labels), self.task.pooling)
        self.model.to(self.device)
        freeze(self.model, self.task.freeze_layers)
        self.optimizer = adamw(self.model, t, self.device)
        self.tokenizer = run.tokenizer
        self.steps_per_epoch, self.total_steps = fine_tuning_steps(
            len(data.train), t.batch_size * t.grad_accumulation, t.epochs
        )
        self.eval_interval = t.eval_interval or self.steps_per_epoch
        self.best_score, self.best_step, self.stale = -math.inf, 0, 0
        self._order: tuple[int, list[np.ndarray]] = (-1, [])
        self._ready()

    def start_fresh(self) -> None:
        load_weights(self.run_dir.initial_weights, self.model)

    def restore(self, state: dict) -> None:
        self.best_score = -math.inf if state.get("best_score") is None else float(state["best_score"])
        self.best_step, self.stale = int(state.get("best_step", 0)), int(state.get("stale", 0))
        self.stopped_early = bool(state.get("stopped_early", False))

    def recipe_state(self) -> dict:
        return {
            "best_score": None if math.isinf(self.best_score) else self.best_score,
            "best_step": self.best_step,
            "stale": self.stale,
            "stopped_early": self.stopped_early,
            "val_loss": None,
        }

    def earlier_end(self) -> list[Record]:
        """The test and finished records of a run that has ended (not stopped) at this step, as it wrote them, after
        a warning that says so; none when it has steps left (a completed run given more epochs trains on)."""
        if self.step < self.total_steps and not self.stopped_early:
            return []
        written = [r for r in self.run_dir.records(TestRecord, FinishedRecord) if r.step == self.step]
        if [type(r) for r in written] != [TestRecord, FinishedRecord] or written[-1].reason == "stopped":
            return []
        test, finished = written
        said = WarningRecord(self.step, "this run has finished already; these are the test scores it wrote then")
        return [said, test, replace(finished, reason=ending(finished.reason, finished.step, self.total_steps))]

    def reported_params(self) -> dict:
        """The model's and the training's settings (not pre-training's masking or tokenizer), the length it reads,
        and the task."""
        model = (self.task.request or {}).get("model")
        return {
            **flat_settings(self.config, ("model", "training")),
            "data.max_seq_len": self.config.data.max_seq_len,
            **{"task.kind": self.task.kind, "task.labels": len(self.data.labels), "task.model": model},
        }

    def opening_records(self) -> list[Record]:
        return [WarningRecord(self.step, note) for note in self.data.notes]

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
            events=self.sinks.events_folder if self.sinks is not None else "",
            events_refused=self.sinks is not None and self.sinks.events_refused,
            report_to=self.config.training.report_to,
            score=main_score_name(self.task.kind, self.data.labels),
            baseline=self.data.kind.baseline(self.data.train, self.data.validation),
        )

    def checkpoint_due(self, last: bool) -> bool:
        return super().checkpoint_due(last) or self.step % self.eval_interval == 0

    # --- batches -------------------------------------------------------------------------------------
    def micro_step(self, index: int) -> MicroStep:
        """This process's share of one accumulation of the step's global batch. A share left empty (a last batch
        smaller than the shares) computes its loss on one example weighted 0, so every process takes part in
        the step."""
        t = self.config.training
        step, micro = divmod(index, t.grad_accumulation)
        shares = np.array_split(self._batch(step), t.grad_accumulation * self.dist.world_size)
        indices = shares[self.dist.rank * t.grad_accumulation + micro]
        empty = len(indices) == 0
        kind = self.data.kind
        ids, mask, types, targets = kind.batch(
            self.data.train, shares[0][:1] if empty else indices, self.tokenizer.pad_id, self.device
        )
        with self._autocast():
            logits = self.forward(ids, mask, types)
        loss, correct, predicted = kind.loss(logits, targets)
        if empty:
            return MicroStep(loss * 0.0, torch.zeros((), device=self.device), correct * 0, 0, 0)
        return MicroStep(loss, loss.detach().float() * predicted, correct, predicted, int(mask.sum()))

    def _batch(self, step: int) -> np.ndarray:
        """The examples of step `step`'s global batch."""
        epoch, position = divmod(step, self.steps_per_epoch)
        if self._order[0] != epoch:
            t = self.config.training
            seed = t.seed * 7_000_003 + epoch
            self._order = (epoch, batch_order(self.data.train.lengths(), t.batch_size * t.grad_accumulation, seed))
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

    def evaluation_records(self) -> Iterator[Record]:
        evaluation = self.score(self.data.validation, f"Scoring the {len(self.data.validation):,} validation examples")
        yield self._logged(ValidationRecord(self.step, **self._measures(evaluation)))
        score = summed(self.dist, (evaluation.score,), self.device)[0] / self.dist.world_size  # one on every process
        if score > self.best_score:
            self.best_score, self.best_step, self.stale = score, self.step, 0
            yield from self._written(
                "best weights", lambda: atomic_write_folder(self.run_dir.path / BEST, self._write_best)
            )
        else:
            self.stale += 1
            if self.stale >= self.task.patience and self.step < self.total_steps:  # the last step ends it anyway
                self.stopped_early = True
                yield self._logged(
                    WarningRecord(
                        self.step,
                        f"stopping early: the validation score has not improved for {self.stale} evaluations "
                        f"(best {self.best_score:.1%} at step {self.best_step})",
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

    def ending_records(self, reason: str) -> Iterator[Record]:
        reason = ending(reason, self.step, self.total_steps)
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
        loss, accuracy, at = (chosen.loss, chosen.accuracy, chosen.step) if chosen else (None, None, None)
        yield self._logged(FinishedRecord(self.step, reason, str(self.run_dir.path), loss, accuracy, at))

    def _best_validation(self) -> ValidationRecord | None:
        """The validation record of the best step as the run wrote it (before a resume, too); None before any."""
        written = [r for r in self.run_dir.records(ValidationRecord) if r.step == self.best_step]
        return written[-1] if written else None


def fine_tuning_steps(examples: int, per_step: int, epochs: float) -> tuple[int, int]:
    """(steps an epoch, steps in all) of `epochs` passes over `examples` training examples, `per_step` a step: an
    epoch is every batch of them, its last one short, so ten epochs are ten passes (a fraction of an epoch is
    rounded up to a whole step)."""
    per_epoch = max(1, math.ceil(examples / per_step))
    return per_epoch, max(1, math.ceil(round(epochs * per_epoch, 6)))


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
