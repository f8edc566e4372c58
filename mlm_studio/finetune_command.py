"""The terminal front end of fine-tuning: `mlm-studio finetune`, its progress lines (as `train` prints them) and
its result, in sentences or as one JSON object."""

from __future__ import annotations

import json
import signal
import sys

from mlm_studio.core.data.tokenizer import TokenizerError
from mlm_studio.core.durations import Eta, format_duration
from mlm_studio.core.finetune.labelled import Columns
from mlm_studio.core.finetune.setup import FinetuneOptions, prepare_finetuner
from mlm_studio.core.finetune.tuner import FineTuner
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.core.storage.run_folder import finite_or_none
from mlm_studio.core.storage.user_folders import default_runs_dir
from mlm_studio.core.training.records import FailedRecord, FinishedRecord, StepRecord, TestRecord, ValidationRecord
from mlm_studio.core.training.runs import new_run_path

USER_ERRORS = (ValueError, CheckpointError, TokenizerError, OSError)  # TaskError and ConfigError are ValueErrors


def finetune(args) -> int:
    """Fine-tune MODEL on a labelled file (or resume a fine-tuning run), printing progress; Ctrl-C stops after
    the current step with a checkpoint."""
    if args.resume is None and (args.model is None or args.task is None):
        return _fail("give MODEL and --task FILE to start, or --resume RUN to continue")
    path = args.resume or args.out or new_run_path(default_runs_dir(), "finetune")
    try:
        with RunLock(path):
            tuner = prepare_finetuner(path) if args.resume else prepare_finetuner(path, args.model, _options(args))
            previous = signal.signal(signal.SIGINT, lambda *_: tuner.control.stop())
            try:
                return _report(tuner, args.json)
            finally:
                signal.signal(signal.SIGINT, previous)
    except USER_ERRORS as exc:
        return _fail(str(exc))


def _options(args) -> FinetuneOptions:
    given = (args.text_column, args.label_column, args.pair_column)
    columns = Columns(*given) if any(given) else None
    return FinetuneOptions(
        task=args.kind,
        train=args.task,
        validation=args.validation,
        test=args.test,
        columns=columns,
        learning_rate=args.lr,
        epochs=args.epochs,
        batch_size=args.batch_size,
        warmup_share=args.warmup,
        weight_decay=args.weight_decay,
        freeze_layers=args.freeze_layers,
        patience=args.patience,
        eval_interval=args.eval_every,
        max_length=args.max_length,
        pooling=args.pooling,
        seed=args.seed,
        device=args.device,
    )


def _report(tuner: FineTuner, as_json: bool) -> int:
    """Progress on stderr (one rewritten line on a terminal), other records as sentences; the result on stdout."""
    tty = sys.stderr.isatty()
    eta = Eta(tuner.step, tuner.total_steps, 0.0, tuner.elapsed)
    validations, test, finished = [], None, None
    for record in tuner.run():
        if isinstance(record, StepRecord):
            left = format_duration(eta.seconds_left(record.step, record.elapsed))
            line = f"{record.describe()} · of {tuner.total_steps:,} steps · ETA {left}"
            print(f"\r{line}\033[K" if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
            continue
        if tty:
            print("\r\033[K", end="", file=sys.stderr)
        if isinstance(record, FailedRecord):
            return _fail(record.message)
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
        print(json.dumps(finite_or_none(result), ensure_ascii=False, allow_nan=False), flush=True)
    elif test is not None:
        print(_per_class_table(test), flush=True)
    return 0


def _per_class_table(test: TestRecord) -> str:
    width = max(len(label) for label in test.labels)
    lines = [f"{'label':<{width}}  precision  recall     F1  support"]
    for label, precision, recall, f1, support in test.per_class:
        lines.append(f"{label:<{width}}  {precision:9.1%}  {recall:6.1%}  {f1:5.1%}  {support:7,}")
    return "\n".join(lines)


def _fail(message: str) -> int:
    print(f"mlm-studio: {message}", file=sys.stderr)
    return 1
