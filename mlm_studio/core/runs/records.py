"""What a training run says as it goes: immutable records (each written to the run's `metrics.jsonl`), the
control another thread steers it with.

The metric fields of the step and evaluation records (and of a probe's results) carry the metric schema
(`metric()`): TensorBoard's tags, the CSV's columns and the window's curves are all read from them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from mlm_studio.core.durations import format_duration
from mlm_studio.core.metric_schema import metric, metrics_of

R = TypeVar("R")
INSTALL_HINT = 'pip install "mlm-studio[tensorboard]"'  # what writes a run's TensorBoard events


def kind_of(cls: type) -> str:
    """A record class's `type` in `metrics.jsonl`: "step" for StepRecord."""
    return cls.__name__.removesuffix("Record").lower()


@dataclass(frozen=True)
class Record:
    step: int = metric("steps")

    @property
    def kind(self) -> str:
        return kind_of(type(self))

    def to_dict(self) -> dict:
        """The record as `metrics.jsonl` holds it; the optional metrics (ELECTRA's) only where they have values."""
        optional = {name for name, m in metrics_of(type(self)).items() if m.optional}
        values = {k: v for k, v in asdict(self).items() if not (v is None and k in optional)}
        return {"type": self.kind, **values}

    def describe(self) -> str:
        """The record in a sentence, as the terminal prints it and the window logs it."""
        return f"{self.kind} at step {self.step}"


@dataclass(frozen=True)
class StartedRecord(Record):
    """What began: the first record of every start and resume (`step` is the step it starts from)."""

    run_dir: str
    total_steps: int
    time_budget: float  # seconds; 0 when the run is measured in steps
    device: str
    precision: str  # what the run computes in ("auto" resolved: fp32, bf16 or fp16)
    layers: int
    hidden_size: int
    parameters: int
    train_blocks: int
    events: str = ""  # the TensorBoard events folder; "" without the tensorboard package or when refused
    events_refused: bool = False  # the events folder was refused (a warning that follows says why)
    score: str = ""  # fine-tuning: the validation score that chooses the best checkpoint (entity F1, macro-F1)
    baseline: float | None = None  # fine-tuning: that score of naming the most frequent training label everywhere
    report_to: str = "tensorboard"  # the run's `training.report_to`: where its metrics go besides metrics.jsonl

    def describe(self) -> str:
        length = (
            f"from step {self.step:,} for {format_duration(self.time_budget)}"
            if self.time_budget > 0
            else f"steps {self.step:,} → {self.total_steps:,}"
        )
        events = f"TensorBoard events in {self.events}" if self.events else f"no TensorBoard events ({INSTALL_HINT})"
        if self.events_refused:
            events = "no TensorBoard events (the warning that follows says why)"
        if "tensorboard" not in self.report_to:
            events = "no TensorBoard events (not asked for)"
        if "mlflow" in self.report_to:
            events += "; metrics reported to MLflow"
        score = f"; the best checkpoint chosen by validation {self.score}" if self.score else ""
        return (
            f"Training {self.run_dir} on {self.device} in {self.precision}: {self.layers} layers × {self.hidden_size}, "
            f"{self.parameters:,} parameters, {self.train_blocks:,} training blocks, {length}{score}; {events}"
        )


@dataclass(frozen=True)
class StepRecord(Record):
    tokens_seen: int = metric("tokens")
    elapsed: float = metric("s")
    loss: float = metric("nats", tag="train/loss", plot="loss", series="training", smooth=True)
    # masked-token accuracy over the steps since the last record
    accuracy: float = metric("share", tag="train/accuracy", plot="accuracy", series="training", smooth=True)
    learning_rate: float = metric("", tag="train/learning_rate", plot="learning_rate", series="learning rate")
    grad_norm: float = metric("", tag="train/grad_norm", plot="grad_norm", series="gradient norm", smooth=True)
    tokens_per_second: float = metric(
        "tokens/s", tag="train/tokens_per_second", plot="throughput", series="tokens/s", smooth=True
    )
    # ELECTRA's objective: `loss` and `accuracy` are its generator's; these are the discriminator's
    detection_loss: float | None = metric(
        "nats", optional=True, tag="train/detection_loss", plot="detection", series="loss (train)", smooth=True
    )
    detection_accuracy: float | None = metric(
        "share", optional=True, tag="train/detection_accuracy", plot="detection", series="accuracy (train)", smooth=True
    )
    # of the tokens it flagged, the share that were replaced
    detection_precision: float | None = metric("share", optional=True, tag="train/detection_precision")
    # of the replaced tokens, the share it flagged
    detection_recall: float | None = metric("share", optional=True, tag="train/detection_recall")

    def describe(self) -> str:
        detection = "" if self.detection_loss is None else f" detection {self.detection_accuracy:.1%}"
        return (
            f"step {self.step:,} loss {self.loss:.4f} acc {self.accuracy:.1%}{detection} lr {self.learning_rate:.2e} "
            f"{self.tokens_per_second:,.0f} tok/s"
        )


@dataclass(frozen=True)
class EvalRecord(Record):
    tokens_seen: int = metric("tokens")
    elapsed: float = metric("s")
    loss: float = metric("nats", tag="eval/loss", plot="loss", series="validation")
    accuracy: float = metric("share", tag="eval/accuracy", plot="accuracy", series="validation")
    top5_accuracy: float = metric("share", tag="eval/top5_accuracy")
    perplexity: float = metric("", tag="eval/perplexity")
    # ELECTRA's objective: the masked-LM numbers are its generator's; these are the discriminator's
    detection_loss: float | None = metric("nats", optional=True, tag="eval/detection_loss")
    detection_accuracy: float | None = metric(
        "share", optional=True, tag="eval/detection_accuracy", plot="detection", series="accuracy (val)"
    )
    detection_precision: float | None = metric(
        "share", optional=True, tag="eval/detection_precision", plot="detection", series="precision (val)"
    )
    detection_recall: float | None = metric(
        "share", optional=True, tag="eval/detection_recall", plot="detection", series="recall (val)"
    )
    # area under the ROC curve of the "replaced" probability
    detection_auc: float | None = metric(
        "", optional=True, tag="eval/detection_auc", plot="detection", series="AUC (val)"
    )

    def describe(self) -> str:
        detection = (
            ""
            if self.detection_loss is None
            else f"; replaced-token detection: accuracy {_share(self.detection_accuracy)}, precision "
            f"{_share(self.detection_precision)}, recall {_share(self.detection_recall)}, AUC {self.detection_auc:.3f}"
        )
        return (
            f"Evaluation at step {self.step}: loss {self.loss:.4f}, accuracy {self.accuracy:.1%}, "
            f"top-5 {self.top5_accuracy:.1%}, perplexity {self.perplexity:,.1f}{detection}"
        )


@dataclass(frozen=True)
class ValidationRecord(Record):
    """A fine-tuning run's scores on its validation examples; tagging adds entity scores."""

    tokens_seen: int = metric("tokens")
    elapsed: float = metric("s")
    epoch: float = metric("epochs")
    loss: float = metric("nats", tag="eval/loss", plot="loss", series="validation")
    accuracy: float | None = metric("share", tag="eval/accuracy")  # of the texts, or of the words; None: answers
    macro_f1: float | None = metric("share", tag="eval/macro_f1", plot="accuracy", series="validation macro-F1")
    entity_precision: float | None = metric("share", optional=True, tag="eval/entity_precision")
    entity_recall: float | None = metric("share", optional=True, tag="eval/entity_recall")
    entity_f1: float | None = metric(
        "share", optional=True, tag="eval/entity_f1", plot="accuracy", series="validation entity F1"
    )
    # question answering (SQuAD's measures, as shares): answers exactly right, and their words' F1
    exact_match: float | None = metric("share", optional=True, tag="eval/exact_match")
    f1: float | None = metric("share", optional=True, tag="eval/f1", plot="accuracy", series="validation answer F1")
    # SQuAD v2: the same over the questions that have an answer, and over those that have none
    has_answer_exact_match: float | None = metric("share", optional=True, tag="eval/has_answer_exact_match")
    has_answer_f1: float | None = metric("share", optional=True, tag="eval/has_answer_f1")
    no_answer_exact_match: float | None = metric("share", optional=True, tag="eval/no_answer_exact_match")

    def describe(self) -> str:
        return f"Validation at step {self.step} (epoch {self.epoch:.2f}): {_scores(self)}"


@dataclass(frozen=True)
class TestRecord(Record):
    """A fine-tuned model's scores on the test examples with the best checkpoint restored (`best_step`; 0: none was
    validated, the latest weights scored), per class and as a confusion matrix (rows: true label, columns:
    predicted) besides."""

    __test__ = False  # not a pytest test class
    tokens_seen: int = metric("tokens")
    elapsed: float = metric("s")
    epoch: float = metric("epochs")
    loss: float = metric("nats", tag="test/loss")
    accuracy: float | None = metric("share", tag="test/accuracy")
    macro_f1: float | None = metric("share", tag="test/macro_f1")
    best_step: int
    labels: tuple[str, ...]
    per_class: tuple[tuple[str, float | None, float | None, float | None, int], ...]  # as `ClassScore`
    confusion: tuple[tuple[int, ...], ...]  # () past `MATRIX_LABELS` labels: then `confusions`
    entity_precision: float | None = metric("share", optional=True, tag="test/entity_precision")
    entity_recall: float | None = metric("share", optional=True, tag="test/entity_recall")
    entity_f1: float | None = metric("share", optional=True, tag="test/entity_f1")
    exact_match: float | None = metric("share", optional=True, tag="test/exact_match")
    f1: float | None = metric("share", optional=True, tag="test/f1")
    has_answer_exact_match: float | None = metric("share", optional=True, tag="test/has_answer_exact_match")
    has_answer_f1: float | None = metric("share", optional=True, tag="test/has_answer_f1")
    no_answer_exact_match: float | None = metric("share", optional=True, tag="test/no_answer_exact_match")
    confusions: tuple[tuple[str, str, int], ...] = ()  # the most frequent mistakes, when there is no matrix
    seen_in_training: int = 0  # test examples whose text is also a training text: scored on what was learned

    def describe(self) -> str:
        seen = (
            f" ({self.seen_in_training:,} of the test examples are training texts: not scored on unseen texts)"
            if self.seen_in_training
            else ""
        )
        return f"Test, with {self.weights_said}: {_scores(self)}{seen}"

    @property
    def weights_said(self) -> str:
        """Which weights were scored: the best by validation, or where none was validated (a run stopped before its
        first evaluation) the latest."""
        if self.best_step:
            return f"the best checkpoint (step {self.best_step:,}) restored"
        return f"the latest weights (step {self.step:,}, never validated)"


def _scores(record: ValidationRecord | TestRecord) -> str:
    if record.f1 is not None:
        return f"loss {record.loss:.4f}, {answer_scores(record)}"
    entity = (
        ""
        if record.entity_f1 is None
        else f", entities: precision {record.entity_precision:.1%}, recall {record.entity_recall:.1%}, "
        f"F1 {record.entity_f1:.1%}"
    )
    return f"loss {record.loss:.4f}, accuracy {record.accuracy:.1%}, macro-F1 {record.macro_f1:.1%}{entity}"


def answer_scores(record: ValidationRecord | TestRecord, bold: bool = False) -> str:
    """A question-answering record's exact match and F1 (SQuAD's percentages), and SQuAD v2's split; the first two
    in bold (HTML) with `bold`."""
    shown = (lambda said: f"<b>{said}</b>") if bold else (lambda said: said)
    said = f"exact match {shown(_share(record.exact_match))}, F1 {shown(_share(record.f1))}"
    if record.has_answer_f1 is not None or record.no_answer_exact_match is not None:
        said += (
            f" (questions with an answer: exact {_share(record.has_answer_exact_match)}, F1 "
            f"{_share(record.has_answer_f1)}; without one: exact {_share(record.no_answer_exact_match)})"
        )
    return said


def _share(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.1%}"


@dataclass(frozen=True)
class ProbeResult:
    """How a probe sentence's expected word ranked among the model's predictions at one evaluation."""

    expected: str = metric("", column="probe")
    rank: int = metric("", plot="probes")  # 1 = the model's top prediction; a curve per probe, named by `expected`
    probability: float = metric("share")
    text: str = metric("", column="probe_text")


@dataclass(frozen=True)
class ProbeRecord(Record):
    tokens_seen: int = metric("tokens")
    elapsed: float = metric("s")
    results: tuple[ProbeResult, ...]  # each one a row of the CSV, a curve of the probes plot

    def describe(self) -> str:
        ranks = ", ".join(f"{r.expected} #{r.rank} ({r.probability:.1%})" for r in self.results)
        return f"Probes at step {self.step}: {ranks}"


@dataclass(frozen=True)
class CheckpointRecord(Record):
    path: str

    def describe(self) -> str:
        return f"Checkpoint written: {self.path}"


@dataclass(frozen=True)
class WarningRecord(Record):
    message: str

    def describe(self) -> str:
        return f"Warning: {self.message}"


@dataclass(frozen=True)
class FinishedRecord(Record):
    reason: str  # "completed" | "stopped"
    run_dir: str
    val_loss: float | None  # of an earlier evaluation (the last one, or a fine-tuning's best): at `val_step`
    val_accuracy: float | None
    val_step: int | None = None  # the evaluation's step, where the writer knows it

    def describe(self) -> str:
        loss = f"{self.val_loss:.4f}" if self.val_loss is not None else "n/a"
        accuracy = f", accuracy {self.val_accuracy:.1%}" if self.val_accuracy is not None else ""  # none: answers
        at = f"at step {self.val_step}" if self.val_step is not None else "(its step not recorded)"
        evaluation = f"validation loss {loss}{accuracy} {at}" if self.val_loss is not None else "no evaluation"
        return f"Finished ({self.reason}) at step {self.step}: {evaluation}, run folder {Path(self.run_dir).resolve()}"


@dataclass(frozen=True)
class PausedRecord(Record):
    """The trainer paused itself (a checkpoint could not be written); resuming retries."""

    message: str

    def describe(self) -> str:
        return f"Paused: {self.message}"


@dataclass(frozen=True)
class FailedRecord(Record):
    message: str

    def describe(self) -> str:
        return f"Failed: {self.message}"


RECORDS = {kind_of(cls): cls for cls in Record.__subclasses__()}  # by their `type` in metrics.jsonl


def typed_records(raw: Iterable[dict], *classes: type[R]) -> list[R]:
    """The records of `raw` (as `metrics.jsonl` holds them) of the record classes `classes` (of every class when none
    is given), each read back as its class, in the order they were written; a record that does not fit its class (a
    damaged line, another version's record) is left out."""
    wanted = {kind_of(cls): cls for cls in classes} if classes else RECORDS
    typed = (typed_record(r, wanted[r["type"]]) for r in raw if r.get("type") in wanted)
    return [record for record in typed if record is not None]


def fits_type(value: object, kind: type) -> bool:
    if kind in (int, float) and isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, kind)


def typed_record(raw: dict, cls: type[R]) -> R | None:
    """A record of metrics.jsonl as the record class `cls`, each field a value of its type (a number written as
    null, not finite when written, is missing: None); None when a field it needs is missing or of another type. A
    field this version does not know (another version's) is left aside."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.name not in raw:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                return None
            continue
        fits, value = _conformed(raw[field.name], _hints(cls)[field.name])
        if not fits:
            return None
        values[field.name] = value
    return cls(**values)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _conformed(value: Any, hint: Any) -> tuple[bool, Any]:
    """Whether `value` (read from JSON) is of the type `hint`, and the value as that type (a list as a tuple)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return next(((True, v) for fits, v in (_conformed(value, arg) for arg in args) if fits), (False, None))
    if hint is type(None):
        return value is None, None
    if hint is float:
        return value is None or fits_type(value, float), value  # a number not finite when written is null
    if hint in (int, str, bool):
        return fits_type(value, hint), value
    if origin is tuple:
        if not isinstance(value, list):
            return False, None
        each = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
        if len(each) != len(value):
            return False, None
        conformed = [_conformed(item, kind) for item, kind in zip(value, each, strict=True)]
        return all(fits for fits, _ in conformed), tuple(item for _, item in conformed)
    if dataclasses.is_dataclass(hint):
        record = typed_record(value, hint) if isinstance(value, dict) else None
        return record is not None, record
    return False, None
