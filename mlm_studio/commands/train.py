"""`mlm-studio train`: a run trained or resumed from the options, its progress on one rewritten line, every
other record in a sentence; Ctrl-C stops with a checkpoint (exit 130). Under torchrun only rank 0 speaks."""

from __future__ import annotations

import contextlib
import sys

from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import INTERRUPTED, Status, fail, interrupts_stop, print_report, reason
from mlm_studio.core.config.presets import preset
from mlm_studio.core.config.run_config import RunConfig, written_fields
from mlm_studio.core.durations import Eta, format_duration
from mlm_studio.core.runs import distributed
from mlm_studio.core.runs.distributed import Distributed
from mlm_studio.core.runs.records import FailedRecord, FinishedRecord, StartedRecord, StepRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training.request import Note, ResolvedTraining, TrainingRequest, prepare
from mlm_studio.core.training.runs import prepare_trainer
from mlm_studio.core.training.trainer import Trainer


def request(args) -> TrainingRequest:
    """The training the options ask for."""
    config = None
    if args.config is not None:
        config = RunConfig.load(args.config, presets=preset)
    elif args.preset is not None:
        config = preset(args.preset)
    chosen = {name for name, _ in args.settings} | (written_fields(args.config) if args.config else set())
    return TrainingRequest(
        resume=args.resume,
        out=args.out,
        config=config,
        objective=args.objective,
        settings=tuple(args.settings),
        max_steps=args.max_steps,
        time_budget=args.time_budget,
        device=args.device,
        precision=args.precision,
        corpus=tuple(args.corpus) if args.corpus else None,
        tokenizer=args.tokenizer,
        init_from=args.init_from,
        chosen=frozenset(chosen),
        branch=args.branch,
        from_step=args.from_step,
        skip_batches=args.skip_batches,
    )


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
            trainer = prepare(
                request(args),
                say=_say,
                resolved=_print_corpus_report,
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
    with interrupts_stop(trainer.control, say=dist.main):
        code = _report(trainer, dist)
    if dist.world_size > 1:
        del trainer  # DistributedDataParallel holds the process group; release it first
        distributed.leave()
    return code


def _say(note: Note) -> None:
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    print(note.text, file=sys.stderr, flush=True)


def _print_corpus_report(resolved: ResolvedTraining) -> None:
    """A new run's corpus report, as the window shows it: totals, then every file skipped, read as cp1252 or with
    bad lines."""
    if resolved.new is None or resolved.new.corpus is None:  # a resume or a branch: the run's own corpus
        return
    corpus = resolved.new.corpus
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
