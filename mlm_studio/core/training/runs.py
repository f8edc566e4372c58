"""Starting and resuming runs: the one road from a corpus, or a run folder, to a `Trainer`, taken by the CLI,
the window, every `torchrun` process and the benchmarks."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mlm_studio.core.config.continuation import continued
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.data.builtin_corpus import restore_builtin_corpus
from mlm_studio.core.data.corpus import Corpus, load_corpus
from mlm_studio.core.data.dataset import BlockSet, split_blocks, tokenize_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.models.hf_folder import ImportedModel
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.failures import refuse_nonfinite_resume
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.settings import config_differences, described, with_resolved_precision
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.core.training.probes import Probe, save_probes
from mlm_studio.core.training.trainer import Trainer

FOLDER_LABEL_LENGTH = 40


class TrainingRefused(CheckpointError):
    """A training refused as asked (a resume that would not continue the same run, options that do not go
    together): its message is the sentence the user sees."""


@dataclass(frozen=True)
class NewRun:
    """What a new run starts from. With `initial`, it continues pre-training an imported model (whose
    architecture and tokenizer then replace the configured ones)."""

    config: RunConfig
    corpus: Corpus
    tokenizer: MLMTokenizer
    initial: ImportedModel | None = None
    probes: tuple[Probe, ...] = ()

    def create(self, path: str | Path) -> RunDir:
        """The new run's folder, with its probes."""
        run = start_run(path, self.config, self.corpus, self.tokenizer, self.initial)
        if self.probes:
            save_probes(run.path, list(self.probes))
        return run


class NewFolder(Protocol):
    """A run to make, before it trains: a new one (`NewRun`) or a branch of another (`branching.BranchPlan`)."""

    corpus: Corpus | None  # the text it trains on, read already; None: the files its folder records

    def create(self, path: str | Path) -> RunDir: ...


def prepare_trainer(
    path: str | Path,
    *,
    begin: Callable[[], NewFolder] | None = None,
    check: Callable[[RunDir], None] | None = None,
    ready: Callable[[RunDir], None] | None = None,
    held: ExitStack | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> Trainer:
    """A trainer for the run in `path`. With `held`, the folder is locked first (until `held` closes, the slow
    preparation included; without it another process holds the lock, as rank 0 does for its `torchrun`
    peers). A new run (`begin`) is made by what `begin()` returns; an existing one is resumed after
    `check(run)` accepted it. `ready(run)` is called once the blocks are read; `options` go to `Trainer`."""
    if held is not None:
        held.enter_context(RunLock(path))
    corpus = None
    if begin is not None:
        if (Path(path) / "config.toml").exists():
            raise CheckpointError(f"{path} already holds a run; resume it or choose another folder")
        new = begin()
        run, corpus = new.create(path), new.corpus
    else:
        run = RunDir(path)
        if check is not None:
            check(run)
    train, validation = training_blocks(run, corpus, progress)
    if ready is not None:
        ready(run)
    return Trainer(run, train, validation, **options)


def new_run_path(root: str | Path, preset: str) -> Path:
    """A fresh folder under `root` named by date, time and preset (as `folder_label` makes it safe)."""
    name = f"{time.strftime('%Y%m%d-%H%M%S')}-{folder_label(preset)}"
    path = Path(root) / name
    suffix = 1
    while path.exists():
        suffix += 1
        path = Path(root) / f"{name}-{suffix}"
    return path


def folder_label(preset: str) -> str:
    """`preset` as part of one folder name: its letters, digits and `_`, every other run of characters (a
    separator, dot, space or control character) one `-`; at most FOLDER_LABEL_LENGTH characters, `run` when
    nothing is left."""
    return re.sub(r"\W+", "-", preset).strip("-_")[:FOLDER_LABEL_LENGTH].strip("-_") or "run"


def start_run(
    path: str | Path, config: RunConfig, corpus: Corpus, tokenizer: MLMTokenizer, initial: ImportedModel | None = None
) -> RunDir:
    """Create the run folder for a new run on `corpus` with `tokenizer` (its size sets the vocabulary). With
    `initial`, the run continues pre-training an imported model: its architecture and tokenizer are used."""
    if initial is not None:
        tokenizer = initial.tokenizer
    config = new_run_config(config, tokenizer, initial)
    sources = [s.path for s in corpus.loaded_sources]
    weights = (initial.build_model(), initial.origin()) if initial is not None else None
    return RunDir.create(path, config, tokenizer, sources, corpus.options, weights)


def new_run_config(config: RunConfig, tokenizer: MLMTokenizer, initial: ImportedModel | None = None) -> RunConfig:
    """The configuration a new run records: `initial`'s architecture, or the vocabulary of `tokenizer`; and the
    precision resolved."""
    if initial is not None:
        config = with_architecture(config, initial)
    else:
        config = config.with_vocabulary(tokenizer.vocab_size, tokenizer.pad_id)
    return with_resolved_precision(config)


def with_architecture(config: RunConfig, initial: ImportedModel) -> RunConfig:
    """`config` with the imported model's architecture; refuses a sequence length the model cannot read."""
    limit = initial.config.max_tokens()
    if config.data.max_seq_len > limit:
        raise ConfigError(
            f"{{0}} ({config.data.max_seq_len}) must not exceed the {limit} tokens this model reads",
            ("data.max_seq_len",),
        )
    return initial.run_config(config)


def continuing(config: RunConfig, initial: ImportedModel, given: Collection[str] = ()) -> tuple[RunConfig, str]:
    """The configuration a new run continuing `initial` starts from (the CLI's --init-from, the window's import):
    its architecture, and the continuation recipe for each recipe field `given` (what the user set) lacks; with
    the sentence that says what was chosen."""
    return continued(with_architecture(config, initial), given)


def training_blocks(
    run: RunDir, corpus: Corpus | None = None, progress: Progress | None = None
) -> tuple[BlockSet, BlockSet]:
    """Training and validation blocks of a run; without `corpus`, the sources recorded in the run are read."""
    if corpus is None:
        sources, options = run.corpus_sources()
        check_corpus_unchanged(run, progress=progress)
        corpus = load_corpus(sources, options, progress)
    tokenizer = run.tokenizer
    return split_blocks(tokenize_corpus(corpus, tokenizer, progress), run.config.data, tokenizer)


# What a resumed run may change and stay one run: how long it trains, its learning rate from here on (the schedule
# reads it at every step), how often it logs, evaluates and saves, and the hardware it runs on. Every other
# setting shapes the model, its data, the order of its batches or the optimizer's state, which the checkpoint holds.
RESUMABLE = tuple(
    f"training.{name}"
    for name in (
        "max_steps",
        "epochs",
        "time_budget",
        "learning_rate",
        "eval_interval",
        "eval_blocks",
        "checkpoint_interval",
        "keep_checkpoints",
        "log_interval",
        "report_to",
        "max_nonfinite_steps",
        "device",
        "precision",
        "compile",
    )
)


def resume_differences(run: RunDir, given: RunConfig) -> tuple[dict[str, tuple[Any, Any]], dict[str, tuple[Any, Any]]]:
    """How `given` differs from the run's configuration: (what a resume applies, what it cannot change). The
    vocabulary, set by the run's tokenizer, is not compared."""
    model = run.config.model
    given = with_resolved_precision(given.with_vocabulary(model.vocab_size, model.pad_token_id))
    changes = config_differences(run.config, given)
    applied = {name: values for name, values in changes.items() if name in RESUMABLE}
    return applied, {name: values for name, values in changes.items() if name not in RESUMABLE}


def check_resume(run: RunDir, config: RunConfig | None, tokenizer: MLMTokenizer | None) -> RunConfig:
    """The run's configuration with what `config` changes that a resume may change (RESUMABLE); another tokenizer
    or any other difference is refused, each named with the run's value and the given one."""
    try:
        refuse_nonfinite_resume(run)
    except CheckpointError as exc:
        raise TrainingRefused(str(exc)) from exc
    theirs = run.own_tokenizer()  # before anything is written: one removed, cut short or replaced is refused here
    problems, resumed = [], run.config
    if config is not None:
        applied, refused = resume_differences(run, config)
        problems += [described(refused)] if refused else []
        resumed = resumed.with_values({name: new for name, (_, new) in applied.items()}, "the resumed settings")
    if tokenizer is not None and tokenizer.fingerprint() != theirs.fingerprint():
        problems.append(
            f"tokenizer: {theirs.vocab_size:,} pieces ({theirs.fingerprint()}) → "
            f"{tokenizer.vocab_size:,} pieces ({tokenizer.fingerprint()})"
        )
    if problems:
        raise TrainingRefused(
            f"cannot resume {run.name}: these settings differ from the run's (run → given): {'; '.join(problems)}. "
            "A resumed run may change only its length, learning rate, intervals and hardware; start a new run "
            "for the others"
        )
    return resumed


def check_corpus_unchanged(
    run: RunDir, given: Corpus | None = None, progress: Progress | None = None, doing: str = "resume"
) -> None:
    """Refuse to resume (or what `doing` names: "branch from") on other text than the run started on: corpus files
    changed since, or (`given`) other files than the run's. The built-in corpus, gone with a cleared cache, is
    rebuilt first (its fingerprint then says whether it is the run's)."""
    if given is not None:
        recorded, _ = run.corpus_sources()
        now = [s.path.resolve() for s in given.loaded_sources]
        if sorted(map(str, now)) != sorted(map(str, recorded)):
            raise TrainingRefused(
                f"cannot resume {run.name} on another corpus: it was trained on "
                f"{', '.join(p.name for p in recorded[:5])}, not {', '.join(p.name for p in now[:5])}. "
                "Leave out --corpus to resume, or start a new run"
            )
    for source in run.corpus_sources()[0]:
        restore_builtin_corpus(source, progress)
    changes = run.corpus_changes()
    if changes:
        raise TrainingRefused(
            f"cannot {doing} {run.name}: its corpus changed since the run started ({'; '.join(changes[:5])}); "
            "training on would continue on other text. Restore the files or start a new run"
        )
