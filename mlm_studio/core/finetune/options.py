"""What a user asks of a fine-tuning: the task, its files and the recipe (`FinetuneOptions`), each value checked
against its range as the options are made (`OptionError`), so every front end refuses the same values in the
same words. Where the defaults come from: `setup.py`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.config.sections import MAX_SEED, REPORT_TO
from mlm_studio.core.data.labelled import Columns, TaskError
from mlm_studio.core.finetune.qa.task import DOC_STRIDE, MAX_ANSWER_LENGTH
from mlm_studio.core.finetune.tasks import FINETUNE_PRECISIONS
from mlm_studio.core.shown import one_line, shown


class OptionError(TaskError):
    """An option out of its range: `field` is its name among `FinetuneOptions`' fields; `sentence` says the
    same with the name a front end shows for it (the CLI's `--lr`)."""

    def __init__(self, field: str, rule: str, value: object) -> None:
        self.field, self.rule, self.value = field, rule, value
        super().__init__(self.sentence(field))

    def sentence(self, name: str) -> str:
        said = one_line(self.value) if isinstance(self.value, str) else shown(self.value)
        return f"{name} must be {self.rule}, not {said}"


# each option's range: a test and the words for it
RULES = {
    "learning_rate": (lambda v: v is None or 0 < v < 1, "more than 0 and less than 1"),
    "epochs": (lambda v: 0 < v <= 1_000_000, "more than 0 and at most 1,000,000"),
    "batch_size": (lambda v: 1 <= v <= 65_536, "between 1 and 65,536"),
    "grad_accumulation": (lambda v: 1 <= v <= 1024, "between 1 and 1,024"),
    "warmup_share": (lambda v: 0 <= v <= 1, "a share of the steps between 0 and 1"),
    "weight_decay": (lambda v: 0 <= v < 1, "at least 0 and less than 1"),
    "freeze_layers": (lambda v: v >= 0, "0 or more"),
    "patience": (lambda v: v >= 1, "at least 1"),
    "eval_interval": (lambda v: 0 <= v, "0 (once an epoch) or more"),
    "max_length": (lambda v: v == 0 or 8 <= v <= 8192, "0 (as many as the model reads) or between 8 and 8,192"),
    "seed": (lambda v: 0 <= v <= MAX_SEED, f"between 0 and {MAX_SEED:,}"),
    "split_seed": (lambda v: v is None or 0 <= v <= MAX_SEED, f"between 0 and {MAX_SEED:,}"),
    "precision": (lambda v: v in FINETUNE_PRECISIONS, f"one of {', '.join(FINETUNE_PRECISIONS)}"),
    "report_to": (lambda v: v in REPORT_TO, f"one of {', '.join(REPORT_TO)}"),
    "doc_stride": (lambda v: 1 <= v <= 8192, "between 1 and 8,192 tokens"),
    "max_answer_length": (lambda v: 1 <= v <= 8192, "between 1 and 8,192 tokens"),
}


def check_seeds(first: int, seeds: int) -> None:
    """Refuse (OptionError) `seeds` seeds from `first` on (a comparison's, a search's) when the last is no seed."""
    most = MAX_SEED - first + 1
    if seeds > most:
        raise OptionError("seeds", f"at most {most:,} from seed {first:,}", seeds)


@dataclass(frozen=True)
class FinetuneOptions:
    """How to fine-tune; every value has a default, measured or from the published recipes (see the module)."""

    task: str  # "classification" | "tokens" | "qa"
    train: Path
    validation: Path | None = None  # the user's own split; else a stratified 80/10/10 split of `train`
    test: Path | None = None
    columns: Columns | None = None
    learning_rate: float | None = None  # None: the measured rule, by model and task size (`measured_learning_rate`)
    epochs: float = 10.0
    batch_size: int = 16
    grad_accumulation: int = 1  # micro-batches of `batch_size` per step: a step learns from their product
    warmup_share: float = 0.06
    weight_decay: float = 0.01
    freeze_layers: int = 0  # the embeddings and this many first layers left untrained
    patience: int = 2  # evaluations without a better validation score before stopping early
    eval_interval: int = 0  # steps between evaluations; 0: once an epoch
    max_length: int = 0  # tokens per example, special tokens included; 0: as many as the model reads, ≤ 512
    pooling: str = "cls"  # "cls" or (ModernBERT) "mean"
    seed: int = 0  # the head's fresh weights, the order of the examples, dropout
    split_seed: int | None = None  # which examples are held out; None: `seed`
    device: str = "auto"
    precision: str = "auto"  # resolved when the run is created, as pre-training's (`with_resolved_precision`)
    report_to: str = "tensorboard"  # where the metrics go besides metrics.jsonl (`runs/sinks.py`)
    doc_stride: int = DOC_STRIDE  # question answering: tokens two windows of one context share
    max_answer_length: int = MAX_ANSWER_LENGTH  # question answering: tokens of the longest answer

    def __post_init__(self) -> None:
        for field, (allowed, rule) in RULES.items():
            if not allowed(getattr(self, field)):
                raise OptionError(field, rule, getattr(self, field))

    @property
    def held_out_by(self) -> int:
        return self.seed if self.split_seed is None else self.split_seed
