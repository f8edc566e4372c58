"""What a fine-tuning run was asked for: the starting model as it resolved (a run's checkpoint, a folder), the
task's files and columns, and the recipe. A run records it in its task.json when it is created, so that a
comparison (or a search) run again on the same folder continues only runs made for the same question: a run of
another model, task or recipe is never counted among them."""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from mlm_studio.core.data.builtin_corpus import fingerprint
from mlm_studio.core.data.labelled import Columns, TaskError, columns_of
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.models.hf_folder import model_folder
from mlm_studio.core.runs.run_folder import RunDir, resolve_checkpoint
from mlm_studio.core.runs.task_spec import TaskSpec
from mlm_studio.core.storage.checkpoint import CheckpointError

SCRATCH = "scratch:"  # MODEL written as scratch:SOURCE: SOURCE's shape and tokenizer, fresh weights
# what a run may be asked differently and still answer the same question: where and how it computes
FREE = ("device", "precision", "report_to", "split_seed", "validation", "test", "train", "columns")


@dataclass(frozen=True)
class StartingModel:
    """The model a fine-tuning run starts from: `name`, a run folder (or one of its checkpoints), a Hugging Face
    folder or a Hub model in the local cache; `fresh`: its shape and tokenizer with fresh weights. The command line
    and the records beside a run write it as text, `scratch:` before the name for fresh weights (`of`, `str`)."""

    name: str
    fresh: bool = False

    @classmethod
    def of(cls, given: StartingModel | str | Path) -> StartingModel:
        """`given` as a StartingModel; text is read as the command line writes it."""
        if isinstance(given, StartingModel):
            return given
        text = str(given)
        return cls(text.removeprefix(SCRATCH), text.startswith(SCRATCH))

    def __str__(self) -> str:
        return f"{SCRATCH if self.fresh else ''}{self.name}"

    @property
    def path(self) -> Path:
        return Path(self.name)

    @property
    def is_run(self) -> bool:
        """Whether it names a run folder or one of a run's checkpoints (else a Hugging Face folder or Hub model)."""
        return (self.path / "config.toml").is_file() or (self.path / "state.json").is_file()

    @property
    def shape_alone(self) -> bool:
        """Whether only its configuration and tokenizer count: fresh weights of a whole run's shape."""
        return self.fresh and (self.path / "config.toml").is_file()

    def from_scratch(self) -> StartingModel:
        return replace(self, fresh=True)

    def located(self) -> StartingModel:
        """The same model named from any working folder: a local path made absolute (its links kept, as the window
        names it), a Hub name as it is."""
        return replace(self, name=os.path.abspath(self.name)) if self.path.exists() else self


def model_identity(model: StartingModel) -> str:
    """The model as it resolves now: a run's checkpoint (its latest, unless one is named), a folder, with
    `scratch:` before it for fresh weights of its shape; and after "#", the start of its `model_fingerprint`, so
    that other weights put in the same place are another model."""
    if model.is_run:
        resolved = model.path if model.shape_alone else resolve_checkpoint(model.path)[1]
    else:
        resolved = model_folder(model.name)
    return f"{replace(model, name=str(resolved.resolve()))}#{model_fingerprint(model)[:16]}"


def model_fingerprint(model: StartingModel) -> str:
    """The SHA-256 of the files that make the model: a run's checkpoint (its latest, or the one given) with the
    run's configuration and tokenizer, or a Hugging Face folder's weights, configuration and tokenizer; for fresh
    weights of a run's shape, its configuration and tokenizer alone."""
    if model.shape_alone:
        files = [model.path / "config.toml", model.path / "tokenizer.json"]
    elif model.is_run:
        run, folder = resolve_checkpoint(model.path)  # its weights, not its optimizer's moments
        files = [run.path / "config.toml", run.path / "tokenizer.json", folder / "model.safetensors"]
    else:
        folder = model_folder(model.name)
        files = sorted(folder.iterdir()) if folder.is_dir() else []
    digest = hashlib.sha256()
    for file in files:
        if file.is_file() and file.suffix in MODEL_FILES:
            digest.update(f"{file.name}\0{fingerprint(file)}\n".encode())
    return digest.hexdigest()


MODEL_FILES = (".safetensors", ".bin", ".json", ".toml")  # the files of a model its fingerprint reads


def request_of(model: StartingModel, options: FinetuneOptions) -> dict[str, Any]:
    """What is asked, in task.json's terms: the model's identity, the files, the recipe (device and precision
    aside)."""
    recipe = {f.name: getattr(options, f.name) for f in fields(options) if f.name not in FREE}
    files = {name: str(Path(p).resolve()) if p else None for name, p in _files(options).items()}
    columns = asdict(options.columns) if options.columns else None
    return {"model": model_identity(model), "files": files, "columns": columns, "held_out_by": options.held_out_by,
            **recipe}  # fmt: skip


def request_differences(run: RunDir, model: StartingModel, options: FinetuneOptions) -> list[str]:
    """How what is asked now differs from what `run` was asked ("learning_rate 0.001 there, 0.0005 asked"); a run
    made before requests were recorded is compared by its model and files alone."""
    asked = request_of(model, options)
    source = run.origin.get("source")
    task = run.task
    request = task.request if task is not None else None
    recorded = request or {
        "model": f"{Path(source).resolve()}#" if source and run.origin.get("kind") != "scratch" else None,
        "files": _recorded_files(task) if task is not None else None,
    }
    said = []
    for name, there in recorded.items():
        now = asked.get(name)
        if name == "model" and there is not None and there.endswith("#"):  # recorded before weights were stamped
            now = now.split("#")[0] + "#"
        if now == there or (there is None and not request):  # None recorded in a request: the default was asked
            continue
        if name == "model" and there and now and "#" in there and there.split("#")[0] == now.split("#")[0]:
            said.append(f"the weights of {_shown(now.split('#')[0])} changed since these runs were made")
        else:
            said.append(f"{name} {_asked(there.split('#')[0] if name == 'model' and there else there)} there, "
                        f"{_asked(now.split('#')[0] if name == 'model' and now else now)} asked")  # fmt: skip
    return said


def own_value(run: RunDir, field: str, value: Any) -> bool:
    """Whether `value`, given for the FinetuneOptions `field` (or "model") on resuming `run`, is the run's own: what
    it was asked (task.json), or the value it trains with (config.toml), so that a resume need not change it."""
    task = run.task
    if task is None:
        return False
    recorded = task.request or {}
    if field == "model":
        try:
            return recorded.get("model") == model_identity(StartingModel.of(value))
        except (OSError, ValueError, CheckpointError):  # a model that cannot be read is not the run's
            return False
    if field in ("train", "validation", "test"):
        return value is not None and task.files[field] == Path(value).resolve()
    if field == "columns":
        return _own_columns(task, value)
    in_task = getattr(task, "kind" if field == "task" else field, None)  # split_seed, pooling, patience, …
    own = [recorded.get(field), in_task, run.config.training.values().get(field)]
    return any(there is not None and there == value for there in own)


def _recorded_files(task: TaskSpec) -> dict[str, str | None]:
    """A task's files as a request records them."""
    return {name: str(path) if path is not None else None for name, path in task.files.items()}


def _own_columns(task: TaskSpec, given: Columns) -> bool:
    """Whether each column `given` (those named) is the one the run reads: as it was given, or, for a run given
    none, as the training file's header names it."""
    read = task.columns
    if read is None:
        try:
            read = columns_of(task.train, task.kind)
        except (OSError, TaskError):  # a run without a table, or its file gone
            return False
    return all(not name or name == getattr(read, column) for column, name in asdict(given).items())


def _files(options: FinetuneOptions) -> dict[str, Path | None]:
    return {"train": options.train, "validation": options.validation, "test": options.test}


def _asked(value: Any) -> str:
    """A value asked, as said: "the default" for one left to the recipe (None)."""
    return "the default" if value is None else _shown(value)


def _shown(value: Any) -> str:
    from mlm_studio.core.shown import shown

    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if v is not None}
    return shown(value)
