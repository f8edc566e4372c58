"""The terminal front end of fine-tuning: `mlm-studio finetune`, its progress lines (as `train` prints them) and
its result, in sentences or as one JSON object."""

from __future__ import annotations

import sys
from pathlib import Path

from mlm_studio.commands.finetune_flags import COLUMN_FLAGS, FLAGS, SEARCH_FLAGS, finetune_command
from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import (
    INTERRUPTED,
    LABEL_CHARS,
    MISUSED,
    Status,
    fail,
    interrupts_stop,
    reason,
    strict_json,
)
from mlm_studio.core.data.builtin_tasks import EXAMPLE_KINDS, builtin_task
from mlm_studio.core.data.labelled import Columns
from mlm_studio.core.durations import Eta, format_duration
from mlm_studio.core.finetune.compare import Said, compare, contenders, outcomes, score_name, table, verdict
from mlm_studio.core.finetune.options import FinetuneOptions, OptionError
from mlm_studio.core.finetune.recipe.result import read_search
from mlm_studio.core.finetune.recipe.search import SearchPlan, search
from mlm_studio.core.finetune.request import StartingModel
from mlm_studio.core.finetune.scores import per_class_rows
from mlm_studio.core.finetune.setup import ResumeRefused, prepare_finetuner
from mlm_studio.core.finetune.tasks import (
    COMPARE_SEEDS,
    MAX_SEEDS,
    SEARCH_MAX_EPOCHS,
    SEARCH_RATES,
    SEARCH_SEEDS,
)
from mlm_studio.core.finetune.tuner import FineTuner
from mlm_studio.core.runs import distributed
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.distributed import Distributed
from mlm_studio.core.runs.records import FailedRecord, FinishedRecord, StepRecord, TestRecord, ValidationRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.shown import one_line, shown
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.core.storage.user_folders import default_runs_dir
from mlm_studio.core.training.runs import new_run_path


def run(args) -> int:
    """Fine-tune MODEL on a labelled file (or resume a fine-tuning run, with the options it may change), printing
    progress; Ctrl-C stops after the current step with a checkpoint and exits INTERRUPTED."""
    misused = _misused(args)
    if misused is not None:
        return fail(*misused)
    if args.compare:
        return _compare(args)
    if args.search:
        return _search(args)
    try:
        options = None if args.resume else _options(args)
    except OptionError as exc:
        return fail(_said(exc))
    return _one_run(args, options)


def _one_run(args, options: FinetuneOptions | None) -> int:
    """Fine-tune (or resume) one run, on this process or on every process torchrun started."""
    try:
        dist, device = distributed.join()
    except (RuntimeError, ValueError) as exc:
        return fail(f"could not join the distributed run ({exc})")
    path = args.resume or args.out or new_run_path(default_runs_dir(), "finetune")
    if dist.world_size > 1 and not dist.main:
        return _follow(dist, device, args.json)
    shared = False

    def ready(run: RunDir) -> None:
        nonlocal shared
        distributed.share(dist, str(run.path))  # the other processes open the run rank 0 prepared
        shared = True

    try:
        with RunLock(path):
            try:
                tuner = _prepared(args, path, options, dist, device, ready)
            except Exception as exc:
                if not shared:
                    distributed.share(dist, None, error=reason(exc))
                raise
            return _trained(tuner, dist, args.json)
    except ResumeRefused as exc:
        return fail(_said(exc), MISUSED)
    except USER_ERRORS as exc:
        return fail(_said(exc))


def _prepared(args, path, options: FinetuneOptions | None, dist: Distributed, device, ready) -> FineTuner:
    """The fine-tuner of a new run, or of the run resumed (saying what its resume changed)."""
    if args.resume:
        tuner = prepare_finetuner(
            path, changes=_given(args), progress=Status(), distributed=dist, device=device, ready=ready
        )
        if tuner.resumed_with:
            print(f"{tuner.run_dir.name}: {tuner.resumed_with}", file=sys.stderr, flush=True)
        return tuner
    return prepare_finetuner(path, args.model, options, progress=Status(), distributed=dist, device=device, ready=ready)


def _follow(dist: Distributed, device, as_json: bool) -> int:
    """Another process of a torchrun run: it trains its share of each batch of the run rank 0 prepared."""
    try:
        path = distributed.share(dist, None)
        tuner = prepare_finetuner(path, distributed=dist, device=device)
    except distributed.RankZeroFailed as exc:
        return fail(reason(exc))
    except USER_ERRORS as exc:
        return fail(_said(exc))
    return _trained(tuner, dist, as_json)


def _trained(tuner: FineTuner, dist: Distributed, as_json: bool) -> int:
    """Train, Ctrl-C stopping after the current step; under torchrun only rank 0 speaks, and every process waits
    for the others before it leaves."""
    with interrupts_stop(tuner.control, say=dist.main):
        code = _report(tuner, as_json, quiet=not dist.main)
    if dist.world_size > 1:
        del tuner  # DistributedDataParallel holds the process group; release it first
        distributed.leave()
    return code


def _misused(args) -> tuple[str, int] | None:
    """Why the options given cannot go together (the sentence and the exit status), or None."""
    if args.resume is None and args.model is None:
        return "give MODEL (and --task FILE, else a built-in example) to start, or --resume RUN to continue", MISUSED
    if args.model is not None and not StartingModel.of(args.model).name:
        return (
            f"MODEL {shown(args.model)} names no model: give a run, a checkpoint or a Hugging Face model "
            "(scratch:MODEL for its shape with fresh weights)",
            MISUSED,
        )
    example = _example_misused(args)
    if example is not None:
        return example, MISUSED
    if args.seeds is not None and not args.compare and not args.search:
        return "--seeds needs --compare or --search: a single fine-tuning run takes one --seed", MISUSED
    searching = _search_misused(args)
    if searching is not None:
        return searching
    if args.compare and args.resume is not None:
        return "--compare starts its own runs; give MODEL and --task (and --out to continue a comparison)", MISUSED
    if args.resume is not None and args.out is not None:
        return f"--out names a new run's folder; the resumed run stays in {args.resume}", MISUSED
    columns = [flag for flag in COLUMN_FLAGS if getattr(args, flag.lstrip("-").replace("-", "_"))]
    if columns and args.kind == "qa":
        return (
            f"{columns[0]} names a column of a labelled table; a question-answering table is read by its question, "
            "context and answers columns",
            MISUSED,
        )
    answering = [FLAGS[name] for name in ("doc_stride", "max_answer_length") if getattr(args, name) is not None]
    if answering and args.resume is None and (args.kind or "classification") != "qa":
        return (
            f"{answering[0]} is question answering's (--kind qa); a {args.kind or 'classification'} task reads none",
            MISUSED,
        )
    return None


def _example_misused(args) -> str | None:
    """Why --example (or a built-in example, without --task) cannot go with the options given, or None."""
    if args.example is not None and args.task is not None:
        return "--example is a built-in task in place of --task FILE; give one of them"
    if args.example is not None and args.kind is not None and args.kind != EXAMPLE_KINDS[args.example]:
        return f"the built-in example {args.example} is a {EXAMPLE_KINDS[args.example]} task, not --kind {args.kind}"
    given = [flag for flag in ("--validation", "--test", *COLUMN_FLAGS) if getattr(args, flag[2:].replace("-", "_"))]
    if args.resume is None and args.task is None and given:
        return f"{given[0]} goes with --task FILE; a built-in example has its own columns and split"
    return None


def _options(args) -> FinetuneOptions:
    """A new run's options: those given, the engine's defaults for the rest (a classification unless --kind); without
    --task, the built-in example's files (the one --example names, else the kind's own)."""
    given = _given(args)
    given.pop("model", None)
    if args.task is None:
        example = builtin_task(args.example or args.kind or "classification", Status())
        train, validation, test = example.files
        given.update(task=example.kind, train=train, validation=validation, test=test)
        print(f"Built-in example: {example.title} ({example.folder})", file=sys.stderr, flush=True)
    return FinetuneOptions(**{"task": "classification", **given})


def _given(args) -> dict:
    """The FinetuneOptions fields (and "model") the command line sets; those left out keep the engine's
    defaults."""
    given = {field: getattr(args, flag.lstrip("-").replace("-", "_").lower()) for field, flag in FLAGS.items()}
    given = {field: value for field, value in given.items() if value is not None}
    columns = tuple(getattr(args, flag.lstrip("-").replace("-", "_")) for flag in COLUMN_FLAGS)
    if any(columns):
        given["columns"] = Columns(*columns)
    return given


def _compare(args) -> int:
    """Fine-tune the model, its starting model and the same from scratch with the same seeds; print the table.
    Stopped by Ctrl-C, the table holds the runs that finished, says it is partial and gives no verdict."""
    try:
        options = _options(args)
    except OptionError as exc:
        return fail(_said(exc))
    seeds = COMPARE_SEEDS if args.seeds is None else args.seeds
    if not 1 <= seeds <= MAX_SEEDS:
        return fail(f"--seeds must be between 1 and {MAX_SEEDS}, not {one_line(str(seeds))}")
    root = args.out or new_run_path(default_runs_dir(), "compare")
    control = TrainingControl()
    tty, seen = sys.stderr.isatty(), []
    try:
        with interrupts_stop(control), RunLock(root):
            for said in compare(args.model, options, root, seeds, control):
                contender, seed, record = said
                seen.append(said)
                if isinstance(record, FailedRecord):
                    return fail(f"{contender.label}, seed {seed}: {record.message}")
                _say_progress(tty, f"{contender.label}, seed {seed}", record)
    except USER_ERRORS as exc:
        return fail(_said(exc))
    finished = _finished(seen)
    total = seeds * len(contenders(args.model))
    found = outcomes(said for said in seen if (said.contender.label, said.seed) in finished)
    name, complete = score_name(found), len(finished) == total
    judged = (
        verdict(found, name)
        if complete
        else f"No verdict until all {total} runs have finished; to continue, run the same command again with "
        f"--out {root}."
    )
    if args.json:
        print(strict_json({"runs": str(Path(root).resolve()), "score": name, "complete": complete,
                           "finished": len(finished), "total": total, "contenders": [o.to_json() for o in found],
                           "verdict": judged}), flush=True)  # fmt: skip
    else:
        partial = [] if complete else [f"Partial: {len(finished)} of {total} runs finished before the stop."]
        print(*partial, *([table(found, name)] if found else []), judged, sep="\n", flush=True)
    return 0 if complete else INTERRUPTED


def _search_misused(args) -> tuple[str, int] | None:
    """Why --search (or one of its options) cannot go with the options given, or None."""
    given = [flag for flag in ("--lrs", "--max-epochs") if getattr(args, flag[2:].replace("-", "_")) is not None]
    if given and not args.search:
        return f"{given[0]} needs --search: it is the grid a recipe search tries", MISUSED
    if not args.search:
        return None
    if args.compare or args.resume is not None:
        other = "--compare" if args.compare else "--resume"
        return (
            f"--search starts its own runs and cannot go with {other}; rerun it with the same --out to continue",
            MISUSED,
        )
    chosen = [flag for flag, name in (("--lr", "lr"), ("--epochs", "epochs")) if getattr(args, name) is not None]
    if chosen:
        return f"--search chooses {chosen[0]} itself: give the grid with --lrs and --max-epochs", MISUSED
    return None


def _search(args) -> int:
    """Search the learning rate (and epochs) on the validation split and print the table and the chosen recipe.
    Stopped by Ctrl-C, the table holds the runs that finished and no recipe is chosen; the same command continues."""
    try:
        options = _options(args)
        rates = SEARCH_RATES if args.lrs is None else _learning_rates(args.lrs)
        epochs = SEARCH_MAX_EPOCHS if args.max_epochs is None else args.max_epochs
        plan = SearchPlan(args.model, options, rates, epochs, SEARCH_SEEDS if args.seeds is None else args.seeds)
    except OptionError as exc:
        return fail(_said(exc))
    root = args.out or new_run_path(default_runs_dir(), "search")
    control = TrainingControl()
    tty = sys.stderr.isatty()
    try:
        with interrupts_stop(control), RunLock(root):
            for tried in search(plan, root, control):
                record = tried.record
                if isinstance(record, FailedRecord):
                    return fail(f"learning rate {tried.learning_rate:g}, seed {tried.seed}: {record.message}")
                _say_progress(
                    tty, f"lr {tried.learning_rate:g}, seed {tried.seed}, run {tried.run} of {tried.runs}", record
                )
    except USER_ERRORS as exc:
        return fail(_said(exc))
    found = read_search(root)
    recipe = found.recipe()
    command = finetune_command(*recipe) if recipe is not None else None
    if args.json:
        result = found.to_json()
        if command is not None:
            result["chosen"]["command"] = command
        print(strict_json(result), flush=True)
    else:
        partial = [] if found.complete else [f"Partial: {found.state}; to continue, run the same command again."]
        again = [f"To train it: {command}"] if command is not None else []
        print(*partial, found.table(), found.verdict, *again, sep="\n", flush=True)
    return 0 if found.complete else INTERRUPTED


def _learning_rates(text: str) -> tuple[float, ...]:
    """--lrs as numbers: learning rates separated by commas."""
    try:
        return tuple(float(value) for value in text.split(","))
    except ValueError:
        shown = text if len(text) <= 80 else text[:79] + "…"
        raise OptionError("learning_rates", "learning rates separated by commas, such as 1e-5,1e-4", shown) from None


def _finished(seen: list[Said]) -> set[tuple[str, int]]:
    """The (contender, seed) runs that ended by themselves: their test scores count; a stopped run's do not."""
    return {
        (said.contender.label, said.seed)
        for said in seen
        if isinstance(said.record, FinishedRecord) and said.record.reason != "stopped"
    }


def _report(tuner: FineTuner, as_json: bool, quiet: bool = False) -> int:
    """Progress on stderr (one rewritten line on a terminal), other records as sentences; the result on stdout;
    nothing when `quiet`. The exit status: 0 when the run ended, INTERRUPTED when the user stopped it."""
    tty = sys.stderr.isatty()
    eta = Eta(tuner.step, tuner.total_steps, 0.0, tuner.elapsed)
    validations, test, finished = [], None, None
    for record in tuner.run():
        if quiet:
            if isinstance(record, FailedRecord):
                return 1
            finished = record if isinstance(record, FinishedRecord) else finished
            continue
        if isinstance(record, StepRecord):
            left = format_duration(eta.seconds_left(record.step, record.elapsed))
            line = f"{record.describe()} · of {tuner.total_steps:,} steps · ETA {left}"
            print(f"\r{line}\033[K" if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
            continue
        if tty:
            print("\r\033[K", end="", file=sys.stderr)
        if isinstance(record, FailedRecord):
            return fail(record.message)
        validations += [record] if isinstance(record, ValidationRecord) else []
        test = record if isinstance(record, TestRecord) else test
        finished = record if isinstance(record, FinishedRecord) else finished
        if not as_json or not isinstance(record, (TestRecord, FinishedRecord)):
            print(record.describe(), file=sys.stderr if as_json else sys.stdout, flush=True)
    if as_json and test is not None and finished is not None:
        result = {
            "run": str(tuner.run_dir.path.resolve()),
            "reason": finished.reason,
            "steps": finished.step,
            "test": test.to_dict(),
            "validation": [v.to_dict() for v in validations],
        }
        print(strict_json(result), flush=True)
    elif test is not None and test.labels:  # a question answerer's scores are its test record's sentence
        print(_per_class_table(test), flush=True)
    return INTERRUPTED if finished is not None and finished.reason == "stopped" else 0


def _per_class_table(test: TestRecord) -> str:
    """Each class's scores, a line each: a label shown on one line and in at most `LABEL_CHARS` characters."""
    rows = per_class_rows(test)  # a label the test data lacks: "—", not 0.0%
    names = [one_line(label, LABEL_CHARS) for label, *_ in rows]
    width = max(len("label"), *(len(name) for name in names))
    lines = [f"{'label':<{width}}  {'precision':>9}  {'recall':>6}  {'F1':>6}  {'support':>7}"]
    for name, (_, precision, recall, f1, support) in zip(names, rows, strict=True):
        lines.append(f"{name:<{width}}  {precision:>9}  {recall:>6}  {f1:>6}  {support:>7}")
    return "\n".join(lines)


def _say_progress(tty: bool, label: str, record) -> None:
    """A record of one of several runs on stderr, `label` first: steps overwrite one line on a terminal and are
    left out elsewhere."""
    if isinstance(record, StepRecord) and not tty:
        return
    line = f"[{label}] {record.describe()}"
    print(f"\r{line}\033[K" if tty else line, end="" if isinstance(record, StepRecord) else "\n",
          file=sys.stderr, flush=True)  # fmt: skip


def _said(exc: Exception) -> str:
    """The error in a sentence; an option out of range or refused on resuming named as the user typed it."""
    if isinstance(exc, OptionError | ResumeRefused):
        flag = FLAGS.get(exc.field) or SEARCH_FLAGS.get(exc.field)
        return exc.sentence(flag or ("the columns" if exc.field == "columns" else exc.field))
    return reason(exc)
