"""A run folder's layout: what it holds, where, and the checkpoints kept in it.

A run folder holds `config.toml`, `tokenizer.json`, `corpus.json` (where the text came from),
`metrics.jsonl` (one record per line, appended and flushed), `init/` when it starts from imported weights,
`task.json` when it fine-tunes a model on a labelled task,
and `checkpoints/step-NNNNNNN/`, each with the
weights (`model.safetensors`), the optimizer moments (`optimizer.safetensors`) and plain values
(`state.json`; written and read by `checkpoint`). A checkpoint is written under a temporary name and renamed when
complete, so a crash never leaves a broken latest checkpoint; every `step-` folder is a
checkpoint, one without all of them whole (an empty one included) is damaged and a resume refuses it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import asdict
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.data.builtin_corpus import fingerprint
from mlm_studio.core.data.corpus import ReadOptions
from mlm_studio.core.data.tokenizer import MLMTokenizer, TokenizerError
from mlm_studio.core.runs.records import R, typed_records
from mlm_studio.core.runs.task_spec import FieldError, TaskSpec
from mlm_studio.core.shown import one_line
from mlm_studio.core.storage.checkpoint import (
    CHECKPOINTS,
    FORMAT_VERSION,
    CheckpointError,
    checkpoint_finite,
    checkpoint_folders,
    listed,
    optimizer_tensors,
    read_state,
    save_weights,
    write_safetensors,
)
from mlm_studio.core.storage.files import (
    append_whole,
    atomic_write_folder,
    atomic_write_json,
    atomic_write_text,
    naming,
)
from mlm_studio.core.storage.json_record import read_record, record_error
from mlm_studio.core.storage.json_text import read_json
from mlm_studio.core.storage.metric_lines import json_lines, metric_records
from mlm_studio.core.storage.step_file import truncate_steps_after

TOKENIZER_PRINT = "tokenizer_sha256"  # in corpus.json: the SHA-256 of the run's tokenizer.json as it started
INITIAL = "init"
TASK = "task.json"  # a fine-tuning run's task: its kind, labels and files
STAGING = ".new-run.tmp"  # where a new run's files are made; a killed process's leftover is a run's leftover


class RunDir:
    """One training run on disk."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not (self.path / "config.toml").is_file():
            if not self.path.exists():
                raise CheckpointError(f"{self.path} does not exist")
            raise CheckpointError(f"{self.path} is not a run folder (it has no config.toml)")
        self._config: tuple[tuple[int, int, int], RunConfig] | None = None  # as last read, by its file's stamp

    @classmethod
    def create(
        cls,
        path: str | Path,
        config: RunConfig,
        tokenizer: MLMTokenizer,
        sources: list[Path],
        options: ReadOptions,
        initial: tuple[torch.nn.Module, dict[str, Any]] | None = None,
        task: TaskSpec | None = None,
        more: Callable[[Path], None] | None = None,
    ) -> RunDir:
        """Start a new run folder (with `initial`, a model and where it came from: the weights step 0 starts
        from; with `task`, a fine-tuning run's task, kept as `task.json`; `more` adds files of its own to the
        folder being made, a branch's checkpoint and record). Its files are made in a temporary
        folder, then moved in with `config.toml` last, so a failure never leaves a folder that looks like a run.
        Refuses a folder that already holds a run or a file of files (its hidden files, such as the run's lock,
        stay)."""
        path = Path(path)
        if (path / "config.toml").exists():
            raise CheckpointError(f"{path} already holds a run; resume it or choose another folder")
        resolved = [Path(s).resolve() for s in sources]
        corpus = {
            "sources": [str(s) for s in resolved],
            "options": asdict(options),
            "files": [[str(s), *_file_stamp(s)] for s in resolved],
            "fingerprints": {str(s): fingerprint(s) for s in resolved},  # a file with another date: its bytes compared
            "contents_checked": task is not None,  # a task's files: their bytes compared, whatever their dates
        }

        def fill(folder: Path) -> None:
            tokenizer.save(folder / "tokenizer.json")
            # what a resume checks its tokenizer.json against: the file's bytes, which no library upgrade rewrites
            atomic_write_json(
                folder / "corpus.json", {**corpus, TOKENIZER_PRINT: fingerprint(folder / "tokenizer.json")}
            )
            _write_start(folder, initial, task, more)
            config.save(folder / "config.toml")

        present = sorted(p.name for p in path.iterdir() if not p.name.startswith(".")) if path.is_dir() else []
        if present:  # a run appends to files of its own names (metrics.jsonl): never to a user's
            raise CheckpointError(
                f"{path} already holds {listed(present)}; a new run goes into a new or empty folder: choose another"
            )
        made = not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        moved: list[Path] = []
        try:
            staged = atomic_write_folder(path / STAGING, fill)
            names = sorted(item.name for item in staged.iterdir() if item.name != "config.toml")
            for name in [*names, "config.toml"]:  # config.toml last: only then is the folder a run
                os.replace(staged / name, path / name)
                moved.append(path / name)
        except BaseException as exc:
            for item in moved:
                if item.is_dir():
                    shutil.rmtree(item)
                else:
                    item.unlink()
            if made and not any(path.iterdir()):
                path.rmdir()
            if isinstance(exc, OSError):  # a file of the run it could not write, named in the run's folder
                raise naming(exc, path, path / STAGING) from exc
            raise
        finally:
            shutil.rmtree(path / STAGING, ignore_errors=True)
        return cls(path)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def config(self) -> RunConfig:
        """The run's configuration, read again only when its config.toml has changed since it was last read (a
        resume that changes a setting writes it anew: another file, whatever its size and time)."""
        path = self.path / "config.toml"
        try:
            stat = path.stat()
            stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)  # a file written anew in its place is another
        except OSError:
            stamp = None
        if stamp is not None and self._config is not None and self._config[0] == stamp:
            return self._config[1]
        try:
            config = RunConfig.load(path, complete=True)
        except ConfigError as exc:
            raise CheckpointError(f"run {self.name}: {exc}") from exc
        self._config = (stamp, config) if stamp is not None else None
        return config

    @property
    def tokenizer(self) -> MLMTokenizer:
        try:
            return MLMTokenizer.load(self.path / "tokenizer.json")
        except TokenizerError as exc:
            raise CheckpointError(f"run {self.name}: {exc}") from exc

    def own_tokenizer(self) -> MLMTokenizer:
        """The run's tokenizer, refused (CheckpointError) when it cannot be its own: not the one it started with
        (by the fingerprint recorded then; runs from before it was recorded are not compared), or more pieces than
        its model has."""
        tokenizer, recorded = self.tokenizer, self._corpus_record().get(TOKENIZER_PRINT)
        vocabulary = self.config.model.vocab_size
        if tokenizer.vocab_size > vocabulary:
            problem = f"has {tokenizer.vocab_size:,} pieces, more than the model's {vocabulary:,}"
        elif recorded is not None and (now := fingerprint(self.path / "tokenizer.json")) != recorded:
            problem = f"is not the one the run started with (fingerprint {one_line(str(recorded), 12)} → {now:.12})"
        else:
            return tokenizer
        raise CheckpointError(
            f"run {self.name}: {self.path / 'tokenizer.json'} {problem}: put the run's own back, or start a new run"
        )

    def corpus_sources(self) -> tuple[list[Path], ReadOptions]:
        """The corpus files and reading options the run was started with."""
        raw = self._corpus_record()
        try:
            return [Path(s) for s in raw["sources"]], ReadOptions(**raw["options"])
        except (KeyError, TypeError) as exc:
            raise CheckpointError(f"run {self.name}: corpus.json is missing or damaged ({exc})") from exc

    def corpus_changes(self) -> list[str]:
        """How the corpus files differ from when the run started: gone, or other contents (a file of another
        date has its bytes compared with the fingerprint recorded at the start; runs made before fingerprints were
        recorded: another size or date, and before sizes and dates were: only gone). A fine-tuning task's files are
        compared by their contents even when their size and date are the same."""
        raw = self._corpus_record()
        try:
            recorded = [(str(name), int(size), int(modified)) for name, size, modified in raw.get("files", [])]
            recorded = recorded or [(str(name), None, None) for name in raw["sources"]]
            prints = {str(name): str(value) for name, value in raw.get("fingerprints", {}).items()}
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"run {self.name}: corpus.json is missing or damaged ({exc})") from exc
        always = raw.get("contents_checked") is True
        changes = []
        for name, size, modified in recorded:
            path = Path(name)
            if not path.exists():
                changes.append(f"{path} is gone")
                continue
            if not path.is_file():  # a pipe or a device would be read without end
                changes.append(f"{path} is no longer a regular file")
                continue
            if size is None:
                continue
            dated = _file_stamp(path) == (size, modified)
            if name in prints and (always or not dated):
                if (now := fingerprint(path)) != prints[name]:
                    changes.append(f"{path} has other contents (fingerprint {prints[name]:.12} → {now:.12})")
            elif not dated and name not in prints:
                now = path.stat().st_size
                if now == size:  # a run started before every file's fingerprint was recorded
                    changes.append(
                        f"{path} has another date (its size the same, {size:,} bytes; the run is older than the "
                        "record of its files' contents, so a touch cannot be told from an edit)"
                    )
                else:
                    changes.append(f"{path} changed ({size:,} → {now:,} bytes)")
        return changes

    def _corpus_record(self) -> dict[str, Any]:
        try:
            raw = read_json((self.path / "corpus.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"run {self.name}: corpus.json is missing or damaged ({exc})") from exc
        if not isinstance(raw, dict):
            raise CheckpointError(f"run {self.name}: corpus.json is missing or damaged (not a JSON object)")
        return raw

    # --- metrics ------------------------------------------------------------------------------------
    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    def append_metrics(self, records: list[dict[str, Any]]) -> None:
        """Append whole lines; if the disk refuses part of them, the file is cut back to where it was."""
        append_whole(self.metrics_path, json_lines(records))

    def read_metrics(self) -> list[dict[str, Any]]:
        """Every complete record; a line cut short by a crash, a stray line or a damaged byte is left out."""
        try:
            lines = self.metrics_path.read_bytes().decode("utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise CheckpointError(f"run {self.name}: metrics.jsonl cannot be read ({exc})") from exc
        return metric_records(lines)

    def records(self, *classes: type[R]) -> list[R]:
        """The run's records of the record classes `classes` (every record when none is given) read back typed, in
        the order they were written; one that does not fit its class (a damaged line) is left out."""
        return typed_records(self.read_metrics(), *classes)

    def truncate_metrics_after(self, step: int) -> None:
        """Drop records past `step` (written after the checkpoint a resume starts from), and steps.tsv's lines."""
        kept = [r for r in self.read_metrics() if r.get("step", 0) <= step]
        atomic_write_text(self.metrics_path, json_lines(kept))
        truncate_steps_after(self.path, step)

    # --- checkpoints --------------------------------------------------------------------------------
    def checkpoints(self) -> list[Path]:
        """The checkpoints with a `state.json`, oldest first (their other files unchecked)."""
        return [path for path in checkpoint_folders(self.path / CHECKPOINTS) if (path / "state.json").is_file()]

    def remove_leftovers(self) -> None:
        """Remove the hidden temporary folders a killed process left while writing a checkpoint."""
        for folder in (self.path, self.path / CHECKPOINTS):
            if folder.is_dir():
                for leftover in folder.glob(".*.tmp*"):
                    shutil.rmtree(leftover, ignore_errors=True)

    def latest_checkpoint(self) -> Path | None:
        """The newest checkpoint, whole or damaged (any of its files missing or cut short: `require_readable`
        refuses it, saying what to do); None when the run has none (a resume then begins again at step 0)."""
        found = checkpoint_folders(self.path / CHECKPOINTS)
        return found[-1] if found else None

    def newest_finite_checkpoint(self) -> Path | None:
        """The newest checkpoint whose weights are all finite numbers (reads the weights, newest first)."""
        return next((path for path in reversed(self.checkpoints()) if checkpoint_finite(path)), None)

    def require_finite(self, checkpoint: Path, refused: str) -> None:
        """Refuse (CheckpointError) a checkpoint whose weights are not all finite numbers, saying what was
        `refused` ("export it") and naming the newest checkpoint whose weights are."""
        if checkpoint_finite(checkpoint, unreadable=True):  # loading an unreadable one says what is wrong
            return
        finite = self.newest_finite_checkpoint()
        advice = (
            f"The newest checkpoint with finite weights is {finite}: give that folder instead."
            if finite is not None
            else "No checkpoint of this run has finite weights."
        )
        raise CheckpointError(
            f"{checkpoint.name}'s weights hold values that are not finite numbers, so MLM Studio will not {refused}. "
            + advice
        )

    def best_checkpoint(self) -> Path | None:
        best, best_loss = None, float("inf")
        for path in self.checkpoints():
            loss = read_state(path).get("val_loss")
            if loss is not None and loss < best_loss:
                best, best_loss = path, loss
        return best

    def save_checkpoint(
        self, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any], keep: int
    ) -> Path:
        """Write a checkpoint atomically, then keep only the `keep` latest, the best and the one just written (the
        trainer writes only finite weights, so the newest finite checkpoint is never pruned)."""

        def fill(folder: Path) -> None:
            save_weights(model, folder / "model.safetensors")
            tensors, groups = optimizer_tensors(optimizer)
            write_safetensors(tensors, folder / "optimizer.safetensors")
            atomic_write_json(
                folder / "state.json", {**state, "format": FORMAT_VERSION, "step": step, "param_groups": groups}
            )

        final = atomic_write_folder(self.path / CHECKPOINTS / f"step-{step:07d}", fill)
        self._prune(keep, final)
        return final

    # --- initial weights ------------------------------------------------------------------------------
    @property
    def initial_weights(self) -> Path | None:
        """The folder of weights the run starts from (an imported model), or None for a fresh model."""
        folder = self.path / INITIAL
        return folder if (folder / "origin.json").is_file() else None

    @property
    def origin(self) -> dict[str, Any]:
        """Where the initial weights came from, as recorded at the start (`source`, `kind`): empty for a fresh
        model, and for a record that cannot be read (the run's weights are still its own)."""
        try:
            origin = read_json((self.path / INITIAL / "origin.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return origin if isinstance(origin, dict) else {}

    @cached_property
    def task(self) -> TaskSpec | None:
        """A fine-tuning run's task (read once), or None for a pre-training run; RecordError (a CheckpointError)
        naming the file and the field when it cannot be read, is damaged, or is of a task this version does not
        know."""
        path = self.path / TASK
        if not path.is_file():
            return None
        try:
            return TaskSpec.read(read_record(path))
        except FieldError as exc:
            raise record_error(path, str(exc), exc.foreign) from None

    def _prune(self, keep: int, written: Path) -> None:
        found = self.checkpoints()
        kept = {self.best_checkpoint(), written}
        for path in found[:-keep]:
            if path not in kept:
                shutil.rmtree(path, ignore_errors=True)


def _write_start(
    folder: Path,
    initial: tuple[torch.nn.Module, dict[str, Any]] | None,
    task: TaskSpec | None,
    more: Callable[[Path], None] | None,
) -> None:
    """A new run's task, the weights it starts from and the files `more` adds, where it has them."""
    if more is not None:
        more(folder)
    if task is not None:
        atomic_write_json(folder / TASK, task.to_json())
    if initial is not None:
        (folder / INITIAL).mkdir()
        model, origin = initial
        save_weights(model, folder / INITIAL / "model.safetensors")
        atomic_write_json(folder / INITIAL / "origin.json", origin)


def _file_stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def checkpoint_step(checkpoint: Path) -> int:
    """The step a checkpoint folder (`step-0000200`) was written at."""
    return int(checkpoint.name.split("-")[1])


def resolve_checkpoint(path: str | Path, best: bool = False) -> tuple[RunDir, Path]:
    """A run folder (its latest checkpoint, or its best by validation loss) or one of its checkpoint folders."""
    run, checkpoint, _ = choose_checkpoint(path, best)
    return run, checkpoint


def _run_of(checkpoint: Path) -> RunDir:
    """The run a checkpoint folder belongs to: RUN/checkpoints/step-N, or a folder of its own in the run (a fine-tuning
    run's best/)."""
    for run in (checkpoint.parent.parent, checkpoint.parent):
        if (run / "config.toml").is_file():
            return RunDir(run)
    raise CheckpointError(f"{checkpoint} holds weights but belongs to no run folder (no config.toml above it)")


def choose_checkpoint(path: str | Path, best: bool = False) -> tuple[RunDir, Path, str]:
    """As `resolve_checkpoint`, with which checkpoint it is and why, in words ("step-0000040, the best by
    validation loss (4.1532)"); asked for the best when no checkpoint has a validation loss, the latest."""
    folder = Path(path)
    if (folder / "state.json").is_file() and (folder / "model.safetensors").is_file():
        return _run_of(folder), folder, f"{folder.name}, the checkpoint given"
    run = RunDir(folder)
    latest = run.latest_checkpoint()
    if latest is None:
        raise CheckpointError(f"run {run.name} has no checkpoint yet; train it first")
    if not best:
        return run, latest, f"{latest.name}, the latest checkpoint"
    chosen = run.best_checkpoint()
    if chosen is None:
        return (
            run,
            latest,
            f"{latest.name}, the latest checkpoint: none of the run's checkpoints has a validation loss to choose "
            "the best by",
        )
    return run, chosen, f"{chosen.name}, the best by validation loss ({read_state(chosen)['val_loss']:.4f})"
