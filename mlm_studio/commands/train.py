"""`mlm-studio train`: a run trained or resumed from the options, its progress on one rewritten line, every
other record in a sentence; Ctrl-C stops with a checkpoint (exit 130). Under torchrun only rank 0 speaks."""

from __future__ import annotations

import contextlib
import signal
import sys
from dataclasses import replace

from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import INTERRUPTED, Status, fail, print_report, reason, stop_on_interrupt
from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import RunConfig, written_fields
from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import Corpus, load_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer, train_tokenizer
from mlm_studio.core.durations import Eta, format_duration
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.storage.user_folders import default_runs_dir
from mlm_studio.core.training import distributed
from mlm_studio.core.training.device import autocast_dtype, resolve_device
from mlm_studio.core.training.distributed import Distributed
from mlm_studio.core.training.records import FailedRecord, FinishedRecord, StartedRecord, StepRecord
from mlm_studio.core.training.run_folder import RunDir
from mlm_studio.core.training.runs import (
    NewRun,
    apply_resume,
    check_corpus_unchanged,
    check_resume,
    continuing,
    new_run_path,
    prepare_trainer,
)
from mlm_studio.core.training.trainer import Trainer


def _config(args, base: RunConfig | None = None) -> RunConfig:
    """The configuration the options give: a file, a preset or `base` (a resumed run's own), then --objective,
    --set, the length, the device and the precision."""
    if args.config is not None:
        config = RunConfig.load(args.config, presets=preset)
    elif args.preset is not None or base is None:
        config = preset(args.preset or DEFAULT_PRESET)
    else:
        config = base
    if args.objective is not None:
        config = config.with_objective(args.objective)
    config = config.with_values(dict(args.settings))  # --set and run_mlm.py's names, checked like a file
    training = _with_length(config.training, args)
    if args.device is not None:
        training = replace(training, device=args.device)
    if args.precision is not None:
        training = replace(training, precision=args.precision)
    # refused before any work: a device this machine lacks, a precision it cannot train in
    autocast_dtype(training.precision, resolve_device(training.device))
    return replace(config, training=training)


def _with_length(training, args):
    """--max-steps and --time-budget, when given, decide how long the run trains."""
    if args.max_steps is not None:
        training = replace(training, max_steps=args.max_steps, epochs=0.0, time_budget=0.0)
    if args.time_budget is not None:
        training = replace(training, time_budget=args.time_budget)
    return training


def run(args) -> int:
    """Train (or resume) a run, printing progress; Ctrl-C stops cleanly with a checkpoint. The run folder is
    locked from the start of the preparation to the end."""
    with contextlib.ExitStack() as held:
        return _train(args, held)


def _train(args, held: contextlib.ExitStack) -> int:
    try:
        dist, device = distributed.join()
    except (RuntimeError, ValueError) as exc:
        return fail(f"could not join the distributed run ({exc})")
    shared = False

    def ready(run: RunDir) -> None:
        nonlocal shared
        distributed.share(dist, str(run.path))  # rank 0 prepared the run: the others read its token cache
        shared = True
        _line(sys.stderr.isatty(), "")

    try:
        if dist.main:
            path, begin, check = _plan(args)
            trainer = prepare_trainer(
                path,
                begin=begin,
                check=check,
                ready=ready,
                held=held,
                progress=Status(),
                distributed=dist,
                device=device,
            )
        else:
            path, shared = distributed.share(dist, None), True
            trainer = prepare_trainer(path, distributed=dist, device=device)
    except USER_ERRORS as exc:
        if not shared:
            distributed.share(dist, None, error=str(exc))
        return fail(reason(exc))
    except distributed.RankZeroFailed as exc:
        return fail(reason(exc))
    previous = signal.signal(signal.SIGINT, stop_on_interrupt(trainer.control, say=dist.main))
    try:
        code = _report(trainer, dist)
    finally:
        signal.signal(signal.SIGINT, previous)
    if dist.world_size > 1:
        del trainer  # DistributedDataParallel holds the process group; release it first
        distributed.leave()
    return code


def _plan(args):
    """(run folder, how to begin it or None, how to check it before resuming or None), all from the options;
    what can be refused without reading anything is refused here."""
    if args.resume is not None:
        if args.init_from is not None:
            raise ConfigError("--init-from starts a new run; it cannot be combined with --resume")
        return args.resume, None, lambda run: _check_resume(run, args)
    if args.init_from is not None and args.tokenizer is not None:
        raise ConfigError("--init-from brings the model's own tokenizer; leave out --tokenizer")
    config = _config(args)
    return args.out or new_run_path(default_runs_dir(), config.preset), lambda: _begin(config, args), None


def _check_resume(run: RunDir, args) -> None:
    """Refuse another tokenizer, another corpus or settings a resume cannot change; then (only now is anything
    written) apply and say the changes it may make."""
    resumed = check_resume(
        run, _config(args, run.config), MLMTokenizer.load(args.tokenizer) if args.tokenizer else None
    )
    check_corpus_unchanged(run, load_corpus(args.corpus) if args.corpus else None, Status())
    message = apply_resume(run, resumed)
    if message:
        print(message, file=sys.stderr, flush=True)


def _begin(config: RunConfig, args) -> NewRun:
    """Read the corpus (the built-in one unless given) and get the tokenizer: the model's, a file, or trained."""
    initial = None
    if args.init_from is not None:
        initial = import_model(args.init_from)
        print(initial.summary(), file=sys.stderr, flush=True)
        given = {name for name, _ in args.settings} | (written_fields(args.config) if args.config else set())
        config, recipe = continuing(config, initial, given)
        if recipe:
            print(recipe, file=sys.stderr, flush=True)
    corpus = load_corpus(args.corpus or [ensure_builtin_corpus()], progress=Status())
    _print_corpus_report(corpus)
    if initial is not None:
        tokenizer = initial.tokenizer
    elif args.tokenizer is not None:
        tokenizer = MLMTokenizer.load(args.tokenizer)
    else:
        tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents, Status())
    return NewRun(config, corpus, tokenizer, initial)


def _print_corpus_report(corpus: Corpus) -> None:
    """The corpus report the window shows: totals, then every file skipped, read as cp1252 or with bad lines."""
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    skipped = sum(not s.loaded for s in corpus.sources)
    problems = sum(s.issue_count for s in corpus.sources)
    print(
        f"Corpus: {corpus.documents:,} documents, {corpus.words:,} words from {len(corpus.loaded_sources):,} "
        f"file(s); {skipped:,} skipped, {problems:,} problem line(s)",
        file=sys.stderr,
    )
    for report in corpus.sources:
        if report.noteworthy:
            print_report(report)


def _report(trainer: Trainer, dist: Distributed) -> int:
    """Print what the trainer says: progress on one rewritten line (a terminal) and every other record in a
    sentence; only rank 0 speaks. The exit status: 0 when the run ended, INTERRUPTED when the user stopped it."""
    tty = sys.stderr.isatty()
    eta = Eta(trainer.step, trainer.total_steps, trainer.config.training.time_budget, trainer.elapsed)
    code = 0
    for record in trainer.run():
        if isinstance(record, FinishedRecord) and record.reason == "stopped":
            code = INTERRUPTED
        if not dist.main:
            continue
        if isinstance(record, StepRecord):
            line = _step_line(record, trainer, eta)
            print(f"\r{line}\033[K" if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
        elif isinstance(record, FailedRecord):
            _line(tty, "")
            return fail(record.message)
        elif isinstance(record, (StartedRecord, FinishedRecord)):
            _line(tty, "")
            print(record.describe(), flush=True)
        else:
            _line(tty, record.describe())
    return code


def _step_line(record: StepRecord, trainer: Trainer, eta: Eta) -> str:
    budget = trainer.config.training.time_budget
    if budget > 0:
        done = f"{format_duration(record.elapsed)} of {format_duration(budget)}"
    else:
        done = f"of {trainer.total_steps:,} steps"
    return f"{record.describe()} · {done} · ETA {format_duration(eta.seconds_left(record.step, record.elapsed))}"


def _line(tty: bool, text: str) -> None:
    if tty:
        print("\r\033[K", end="", file=sys.stderr)
    if text:
        print(text, file=sys.stderr, flush=True)
