"""The one road to a fine-tuning run: the starting model (a run's checkpoint, a Hugging Face folder or cached Hub
model, or `scratch:` one of those: the same shape with fresh weights), the labelled files read and split, the
run folder created (its `task.json` says the task) or an existing one resumed with its examples read again.

The learning rate and epochs are measured, not borrowed: the published 2e-5 to 5e-5 for 2 to 4 epochs is
BERT-base's (110M parameters) on GLUE-sized data, and underfits the models users start from here on tasks of
hundreds to thousands of examples. The recipe search (`benchmarks/bench_recipe_search.py`, docs/performance.md) on
the six-part King James verse task, validation macro-F1, mean ± sd over the seeds each learning rate ran (up to 10
epochs with early stopping; MiniLM up to 6), * the best:

  model (parameters), training examples     3e-5     1e-4           3e-4           1e-3
  default preset on the Bible (1.5M), 1,920   51.5%    64.5% ± 0.7% *  61.9% ± 0.0%   61.0%
  default preset on the Bible (1.5M), 480     53.1%    66.3% ± 1.5%    69.4% ± 1.7% *  67.5% ± 7.0%
  all-MiniLM-L6-v2 (22.7M), 480               43.0%    54.6% ± 0.5% *  50.9% ± 3.1%

The rule (`measured_learning_rate`): 3e-4 for a model under 10M parameters fine-tuned on fewer than 1,000 training
examples, 1e-4 otherwise; up to 10 epochs, an evaluation each epoch, early stopping after 2 without a better
validation score. The rest follows the published recipes: weight decay 0.01 (Devlin et al., 2019), 6% warm-up
(Liu et al., 2019), batch 16."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import DataConfig, ModelConfig, TrainConfig
from mlm_studio.core.data.copies import Normalise, Split, as_written, copies_said, copy_keys
from mlm_studio.core.data.corpus import ReadOptions
from mlm_studio.core.data.labelled import (
    Columns,
    LabelledFile,
    TaskError,
    check_known,
    check_labels,
    read_labelled_file,
)
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.finetune.examples import begin_inside, encode_examples, with_inside_tags
from mlm_studio.core.finetune.heads import QA_LABELS, TaskModel
from mlm_studio.core.finetune.label_kind import LabelKind
from mlm_studio.core.finetune.options import FinetuneOptions, OptionError
from mlm_studio.core.finetune.qa.recognised import question_answering_file
from mlm_studio.core.finetune.qa.task import (
    qa_split,
    qa_task_data,
    read_qa_task,
    windows_of,
)
from mlm_studio.core.finetune.request import StartingModel, own_value, request_of
from mlm_studio.core.finetune.scores import entity_tags
from mlm_studio.core.finetune.tuner import BEST, FineTuner, TaskData, fine_tuning_steps
from mlm_studio.core.models.build import build_trained, encoder_of
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.device import resolve_device
from mlm_studio.core.runs.distributed import SINGLE, Distributed
from mlm_studio.core.runs.failures import refuse_nonfinite_resume
from mlm_studio.core.runs.run_folder import RunDir, resolve_checkpoint
from mlm_studio.core.runs.settings import apply_resume, with_resolved_precision
from mlm_studio.core.runs.task_spec import TaskSpec
from mlm_studio.core.storage.checkpoint import (
    CheckpointError,
    load_weights,
    read_state,
    require_best_readable,
    require_readable,
)

MAX_LENGTH = 512  # tokens a text is cut to by default (or fewer, if the model reads fewer)
SMALL_MODEL, SMALL_TASK = 10_000_000, 1_000  # parameters and training examples below which 3e-4 learns best


@dataclass(frozen=True)
class Source:
    """The model fine-tuning starts from: its shape, tokenizer and encoder weights (None: fresh ones)."""

    config: ModelConfig
    tokenizer: MLMTokenizer
    encoder: dict[str, torch.Tensor] | None
    origin: dict[str, Any]


def starting_model(model: StartingModel) -> Source:
    """The model to start from: a run folder (or one of its checkpoints), a Hugging Face folder or cached Hub model,
    or either's shape with fresh weights."""
    if model.is_run:
        run, checkpoint = (RunDir(model.path), None) if model.shape_alone else resolve_checkpoint(model.path)
        if run.task is not None:
            raise TaskError(f"{run.name} is a fine-tuning run already; fine-tune the model it started from")
        if checkpoint is not None and not model.fresh:  # fresh weights take its shape alone
            run.require_finite(checkpoint, "fine-tune it")
        trained = build_trained(run.config)
        if checkpoint is not None:
            load_weights(checkpoint, trained)
        encoder, config, tokenizer = encoder_of(trained), run.config.model, run.tokenizer
        origin = {"source": str((checkpoint or run.path).resolve()), "kind": "run"}
    else:
        imported = import_model(model.name)
        config, tokenizer = imported.config, imported.tokenizer
        encoder, origin = encoder_of(imported.build_model()), {**imported.origin(), "kind": "imported"}
    if model.fresh:
        return Source(config, tokenizer, None, {**origin, "kind": "scratch"})
    weights = getattr(encoder, FAMILIES[config.family].prefix).state_dict()
    return Source(config, tokenizer, {k: v.detach().clone() for k, v in weights.items()}, origin)


def measured_learning_rate(parameters: int, training_examples: int) -> float:
    """The default learning rate, as measured (see the module): higher for a small model on a small task."""
    return 3e-4 if parameters < SMALL_MODEL and training_examples < SMALL_TASK else 1e-4


def create_run(
    path: str | Path, model: StartingModel, options: FinetuneOptions, progress: Progress | None = None
) -> RunDir:
    """A new fine-tuning run folder for `model` on the task of `options` (checked first; its reading reported to
    `progress`)."""
    source = starting_model(model)
    if options.freeze_layers > source.config.num_hidden_layers:
        rule = f"at most the number of layers the model has ({source.config.num_hidden_layers})"
        raise OptionError("freeze_layers", rule, options.freeze_layers)
    limit = min(options.max_length or MAX_LENGTH, source.config.max_tokens())
    if options.task == "qa":  # its training rows are the windows of its questions
        qa_files, labels = read_qa_task(options.train, options.validation, options.test), list(QA_LABELS)
        n_train = len(
            windows_of(source.tokenizer, qa_split(qa_files, options.held_out_by)[0], limit, options.doc_stride)
        )
    else:
        files, labels = read_task(
            options.task, options.train, options.validation, options.test, options.columns, progress
        )
        split = files_split(files, options.held_out_by, options.task, source.tokenizer.normalised, progress)
        n_train = len(split[0])
    per_epoch, total = fine_tuning_steps(n_train, options.batch_size * options.grad_accumulation, options.epochs)
    interval = options.eval_interval or per_epoch
    training = TrainConfig(
        batch_size=options.batch_size,
        grad_accumulation=options.grad_accumulation,
        learning_rate=options.learning_rate or measured_learning_rate(source.config.parameter_count(), n_train),
        warmup_steps=round(options.warmup_share * total),
        weight_decay=options.weight_decay,
        epochs=options.epochs,
        eval_interval=interval,
        checkpoint_interval=interval,
        log_interval=max(1, min(10, per_epoch // 4)),
        keep_checkpoints=1,
        seed=options.seed,
        device=options.device,
        precision=options.precision,
        report_to=options.report_to,
    )
    config = RunConfig(model=source.config, data=DataConfig(max_seq_len=limit), training=training, preset="finetune")
    config = with_finetuning_precision(config)
    torch.manual_seed(options.seed)  # the head's fresh weights (and a scratch model's)
    task_model = TaskModel(source.config, options.task, len(labels), options.pooling)
    if source.encoder is not None:
        missing, unexpected = task_model.encoder_module.load_state_dict(source.encoder, strict=False)
        if unexpected or any(not name.startswith("pooler.") for name in missing):
            raise CheckpointError(f"the encoder's weights do not fit its model ({[*missing, *unexpected][:3]})")
    answering = options.task == "qa"
    task = TaskSpec(
        kind=options.task,
        labels=tuple(labels),
        **{name: Path(p).resolve() if p else None for name, p in _paths(options).items()},
        columns=options.columns,
        split_seed=options.held_out_by,
        pooling=options.pooling,
        freeze_layers=options.freeze_layers,
        patience=options.patience,
        copies_as_read=True,  # copies are texts the tokenizer reads alike (`copies_by`)
        request=request_of(model, options),
        doc_stride=options.doc_stride if answering else None,
        max_answer_length=options.max_answer_length if answering else None,
        unanswerable=answering and any(f.has_impossible for f in qa_files),  # it learns to answer "no answer"
    )
    sources = [Path(p) for p in _paths(options).values() if p]
    return RunDir.create(path, config, source.tokenizer, sources, ReadOptions(), (task_model, source.origin), task)


def _paths(options: FinetuneOptions) -> dict[str, Path | None]:
    return {"train": options.train, "validation": options.validation, "test": options.test}


def read_task(
    task: str,
    train: Path,
    validation: Path | None,
    test: Path | None,
    columns: Columns | None,
    progress: Progress | None = None,
) -> tuple[list[LabelledFile], list[str]]:
    """The labelled files read (reported to `progress`) and checked (two labels at least; validation and test
    labels known in training), and the labels in a fixed order (first seen in training; tags with the inside
    tags they lack added)."""
    if (validation is None) != (test is None):
        raise TaskError("give both a validation and a test file, or neither (then the training file is split)")
    paths = [p for p in (train, validation, test) if p is not None]
    for path in paths:  # read as labels, a question-answering file would be refused for what it is not
        shape = question_answering_file(Path(path), tables=columns is None)
        if shape:
            raise TaskError(f"{Path(path).name}: this looks like {shape}: add --kind qa")
    files = [read_labelled_file(p, task, columns, progress=progress) for p in paths]
    check_labels(files[0])
    known = list(files[0].label_counts())
    for other in files[1:]:
        check_known(other, set(known), files[0].path.name)
    if task == "classification":
        return files, sorted(known)
    if entity_tags(known):
        files = begin_inside(files)
    return files, with_inside_tags(list(files[0].label_counts()))


def files_split(
    files: list[LabelledFile],
    seed: int,
    task: str,
    normalise: Normalise = as_written,
    progress: Progress | None = None,
) -> Split:
    """The training, validation and test examples: the user's files, or a split of the one file (copies of a text,
    as `normalise` reads it, on one side); their texts' hashing reported to `progress`."""
    keys = [copy_keys(file.examples, normalise, progress) for file in files]
    if len(files) == 3:
        return Split(tuple(file.examples for file in files), tuple(keys), False)
    return Split.of(files[0].examples, seed, task, keys[0])


def copies_by(run: RunDir) -> Normalise:
    """How a fine-tuning run's split tells copies apart: as its tokenizer reads texts (an uncased one's "The" is
    "the"), or, for a run begun before that, as they are written (its split stays the one it trained on)."""
    return run.tokenizer.normalised if run.task.copies_as_read else as_written


def task_data(run: RunDir, progress: Progress | None = None) -> TaskData:
    """A fine-tuning run's examples, read again from its task's files, split and encoded as when it began
    (reported to `progress`)."""
    task = run.task
    if task.kind == "qa":
        return qa_task_data(run)
    files, labels = read_task(task.kind, task.train, task.validation, task.test, task.columns, progress)
    read = set(files[0].label_counts())  # a run made before inside tags were added has only these
    if set(task.labels) not in (set(labels), read):
        raise TaskError(f"the labels of {task.train.name} changed since the run began; start a new run")
    normalise = copies_by(run)
    parts = files_split(files, task.split_seed, task.kind, normalise, progress)
    ids = {label: i for i, label in enumerate(task.labels)}
    limit = run.config.data.max_seq_len
    tokenizer = run.tokenizer
    train, validation, test = (encode_examples(tokenizer, part, ids, task.kind, limit, progress) for part in parts)
    notes = [f"{f.path.name}: rows left out: {f.skipped}" for f in files if f.skipped]
    notes += copies_said([f.path.name for f in files] * (3 // len(files)), parts)
    named = zip(("training", "validation", "test"), (train, validation, test), files * 3 if len(files) == 1 else files)
    for name, part, file in named:
        if part.truncated:
            notes.append(
                f"{file.path.name}: {len(part.truncated):,} of the {len(part):,} {name} examples "
                f"are longer than the {limit} tokens the model reads and were cut, the first at row "
                f"{part.truncated[0]} (words past the cut are not scored)"
            )
    seen = parts.seen_in_training()
    labels = list(task.labels)
    return TaskData(labels, train, validation, test, LabelKind(labels), tuple(notes), seen)


def with_finetuning_precision(config: RunConfig) -> RunConfig:
    """`config` with precision "auto" resolved as pre-training resolves it, except on a CPU, where fine-tuning
    computes in fp32: its small batches of short texts ran at 0.66–0.70× of fp32's speed in bf16 (about 1× on long
    texts; docs/performance.md), where pre-training's long blocks gain from bf16."""
    training = config.training
    try:
        on_cpu = resolve_device(training.device).type == "cpu"
    except ValueError:  # a device this machine lacks: the tuner refuses it, saying so
        on_cpu = False
    if training.precision == "auto" and on_cpu:
        config = replace(config, training=replace(training, precision="fp32"))
    return with_resolved_precision(config)


def prepare_finetuner(
    path: str | Path,
    model: StartingModel | str | None = None,
    options: FinetuneOptions | None = None,
    control: TrainingControl | None = None,
    changes: dict[str, Any] | None = None,
    progress: Progress | None = None,
    pause_on_save_error: bool = False,
    distributed: Distributed = SINGLE,
    device: torch.device | None = None,
    ready: Callable[[RunDir], None] | None = None,
) -> FineTuner:
    """A fine-tuner for a new run in `path` (from `model`, as a StartingModel or as the command line writes it, with
    `options`) or for the run there, resumed with
    `changes` (see `resume_with`); reading and encoding its examples reported to `progress`. A device this
    machine lacks is refused (ValueError) before anything is written. `pause_on_save_error`, `distributed` and
    `device` (a torchrun process's): as the loop's; `ready`: told the run folder once it is made or opened, before
    its examples are read (torchrun's rank 0 tells the other processes which run to open)."""
    if model is not None and options is not None:
        resolve_device(options.device)
        if (Path(path) / "config.toml").exists():
            raise CheckpointError(f"{path} already holds a run; resume it or choose another folder")
        run = create_run(path, StartingModel.of(model), options, progress)
    else:
        run = RunDir(path)
        if run.task is None:  # a damaged or foreign task.json is refused here, naming the file and the field
            raise CheckpointError(f"{run.name} is a pre-training run, not a fine-tuning one")
        refuse_nonfinite_resume(run)
        run.own_tokenizer()  # before anything is written: one removed, cut short or replaced is refused here
        resolve_device((changes or {}).get("device") or run.config.training.device)
    if ready is not None:
        ready(run)
    changed = run.corpus_changes()
    if changed:
        raise TaskError(f"the task's files changed since the run began ({'; '.join(changed)}); start a new run")
    data = task_data(run, progress)
    said = resume_with(run, len(data.train), changes) if changes else ""
    return FineTuner(run, data, control, said, progress, distributed, device, pause_on_save_error)


# What a resumed run may change and stay one run: how long it trains (its schedule stretches or shrinks to the new
# end from the step it is at), the device and precision it computes in, and where it reports its metrics. The rest
# is fixed where it is written: the starting model in init/, the task in task.json, the recipe in config.toml; its
# checkpoints were made with them.
RESUMABLE = ("epochs", "device", "precision", "report_to")
FIXED_IN = {
    "model": ("starting model", "init"),
    **dict.fromkeys(
        (
            *("task", "train", "validation", "test", "columns", "freeze_layers", "patience", "pooling"),
            *("split_seed", "doc_stride", "max_answer_length"),
        ),
        ("task", "task.json"),
    ),
}


class ResumeRefused(TaskError):
    """An option a resumed run cannot take: `field` names it among `FinetuneOptions`' fields ("model": MODEL);
    `sentence` says why with the name a front end shows for it."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(self.sentence(field))

    def sentence(self, name: str) -> str:
        return f"{name} {self.reason}"


def resume_with(run: RunDir, train_examples: int, changes: dict[str, Any]) -> str:
    """Apply `changes` ({FinetuneOptions field: value} a user gave to resume `run`; "model" for a starting model)
    to the run's config.toml, or refuse the first a resume cannot make (ResumeRefused) before writing anything.
    The sentence that says what changed ("" when nothing did); a value that is the run's own is no change."""
    changes = {field: value for field, value in changes.items() if not own_value(run, field, value)}
    for field in changes:
        if field not in RESUMABLE:
            what, home = FIXED_IN.get(field, ("recipe", "config.toml"))
            raise ResumeRefused(
                field, f"cannot change when resuming: the run's {what} is fixed in {run.path / home}; start a new run"
            )
    values = {f"training.{field}": value for field, value in changes.items()}
    before = run.config
    config = with_finetuning_precision(before.with_values(values, "the resumed settings"))
    checkpoint = run.latest_checkpoint()
    if checkpoint is not None:
        require_readable(checkpoint)
    state = read_state(checkpoint) if checkpoint is not None else {"step": 0, "stopped_early": False}
    if state.get("best_step"):  # its best weights are what its end tests and exports: they must read
        require_best_readable(
            run.path / BEST,
            f"the best weights of {run.name} (step {state['best_step']:,}) are lost, so its resume could not test "
            "or export them: start a new fine-tuning with the same options",
        )
    t = config.training
    total = fine_tuning_steps(train_examples, t.batch_size * t.grad_accumulation, t.epochs)[1]
    longer = config.training.epochs != before.training.epochs
    if longer:
        if state["stopped_early"]:
            raise ResumeRefused(
                "epochs",
                f"cannot make {run.name} train on: it stopped early at step {state['step']:,}, its validation score "
                "no longer improving; start a new run",
            )
        if total <= state["step"]:
            raise ResumeRefused(
                "epochs",
                f"{changes['epochs']:g} would end the run at step {total:,}, but it is at step {state['step']:,} "
                "already; give more epochs",
            )
    said = apply_resume(run, config)
    if longer:
        said += f"; it trains to step {total:,}, its learning rate decaying to 0 there"
    return said
