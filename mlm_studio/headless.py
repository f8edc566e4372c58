"""The terminal front end of the engine: `mlm-studio train`, `predict` and `export`."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from dataclasses import replace

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import RunConfig, written_fields
from mlm_studio.core.config.sections import ConfigError
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import Corpus, CorpusError, SourceReport, load_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer, TokenizerError, train_tokenizer
from mlm_studio.core.durations import Eta, format_duration
from mlm_studio.core.evaluation.predict import FillMask, PredictError
from mlm_studio.core.finetune.heads import CLASS_NAMES
from mlm_studio.core.interop.export import export_choice, write_export
from mlm_studio.core.interop.hf import GENERATOR_FOLDER, import_model
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.core.storage.run_folder import RunDir
from mlm_studio.core.storage.user_folders import default_runs_dir
from mlm_studio.core.training import distributed
from mlm_studio.core.training.device import autocast_dtype, resolve_device
from mlm_studio.core.training.distributed import Distributed
from mlm_studio.core.training.records import FailedRecord, FinishedRecord, StartedRecord, StepRecord
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
from mlm_studio.terminal import INTERRUPTED, Status, emit, fail, reason, stop_on_interrupt, strict_json

FILL_MASK_TOP_K = 5  # candidates per mask unless told
USER_ERRORS = (ConfigError, CorpusError, TokenizerError, CheckpointError, PredictError, ValueError, OSError)


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


def train(args) -> int:
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
            _print_report(report)


def _print_report(report: SourceReport) -> None:
    """What happened to one file read, indented, on stderr."""
    print("\n".join(f"  {line}" for line in report.describe()), file=sys.stderr, flush=True)


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


def export(args) -> int:
    """Write a run (latest or best checkpoint) or a checkpoint folder as a Hugging Face `transformers` folder."""
    try:
        choice = export_choice(args.model, args.best)
        out = write_export(choice, args.out, overwrite=args.overwrite, progress=Status())
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    print(f"Took {choice.said}.")
    generator = out / GENERATOR_FOLDER
    if generator.is_dir():
        print(
            f"Exported to {out}; load the discriminator with ElectraForPreTraining.from_pretrained({str(out)!r}), "
            f"the generator with AutoModelForMaskedLM.from_pretrained({str(generator)!r})"
        )
    else:
        architecture = json.loads((out / "config.json").read_text(encoding="utf-8"))["architectures"][0]
        head = next((h for h in CLASS_NAMES.values() if architecture.endswith(h)), "ForMaskedLM")
        print(f"Exported to {out}; load it with AutoModel{head}.from_pretrained({str(out)!r})")
    return 0


def tensorboard(args) -> int:
    """Write each run's TensorBoard events from its metrics.jsonl (refused while the run trains: it writes them)."""
    from mlm_studio.core.storage.tensorboard import write_events

    for path in args.runs:
        try:
            run = RunDir(path)
            with RunLock(run.path):
                folder, notes = write_events(run.path, run.read_metrics())
        except (ImportError, CheckpointError, OSError) as exc:
            return fail(reason(exc))
        print(f"TensorBoard events of {path} in {folder}; view them with: tensorboard --logdir {folder.parent}")
        for note in notes:
            print(f"Note: {note}.")
    return 0


def predict(args) -> int:
    """Print the top-k candidates for each [MASK] (or the filled text with --fill), as text or JSON (a fine-tuning
    run's `predict` is try_command.py's)."""
    args.top_k = FILL_MASK_TOP_K if args.top_k is None else args.top_k
    try:
        predictor = FillMask.from_path(args.model, str(resolve_device(args.device)))
        output = _predictions(predictor, args)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if predictor.untrained_head:
        _warn_untrained(args.model, "these predictions are random")
    return emit(output)


def _predictions(predictor: FillMask, args) -> str:
    """What `predict` prints: the pipeline's JSON (each candidate marked when the head is untrained), or with
    --fill the text and each mask's candidates, or lines for people."""
    if args.json and not args.fill:
        rows = predictor.as_pipeline(args.text, args.top_k)
        if predictor.untrained_head:
            for candidate in rows if isinstance(rows[0], dict) else [c for row in rows for c in row]:
                candidate["untrained_head"] = True
        return strict_json(rows)
    if args.fill:
        filled = predictor.fill(args.text, args.top_k)
        results, text = list(filled.candidates), filled.text
    else:
        results, text = predictor.predict(args.text, args.top_k), None
    if args.json:
        masks = [[{"score": c.score, "token": c.token_id, "token_str": c.token} for c in mask] for mask in results]
        return strict_json({"text": text, "masks": masks, "untrained_head": predictor.untrained_head})
    lines = [text] if text is not None else []
    for number, candidates in enumerate(results, start=1):
        lines.append(f"[MASK] {number}: " + "  ".join(f"{c.token} {c.score:.3f}" for c in candidates))
    return "\n".join(lines)


def evaluate(args) -> int:
    """Print the masked-token diagnosis of a model (and, with --task, the downstream probe) as a table or JSON;
    refused when the held-out text gave nothing to score."""
    from mlm_studio.core.data.corpus import load_corpus
    from mlm_studio.core.evaluation.diagnosis import diagnose
    from mlm_studio.core.evaluation.subject import load_subject
    from mlm_studio.core.evaluation.task_probe import probe_task, read_task
    from mlm_studio.core.finetune.labelled import TaskError

    try:
        task = read_task(args.task, args.text_column, args.label_column, Status()) if args.task is not None else None
        if task is not None and task.report.noteworthy:
            _print_report(task.report)
        corpus = load_corpus(list(args.corpus)) if args.corpus else None
        subject = load_subject(args.model, args.checkpoint, corpus)
        diagnosis = diagnose(subject.model, subject.tokenizer, subject.config, subject.validation)
        if diagnosis.predicted == 0:
            return fail(
                f"{subject.title}: nothing was scored, as the held-out text ({len(subject.validation):,} blocks) gave "
                "no masked position; give a larger corpus"
            )
        result = {**diagnosis.to_json(), "untrained_head": subject.untrained_head}
        if task is not None:
            result["task"] = probe_task(subject.encoder, subject.tokenizer, task.texts, task.labels).to_json()
    except (*USER_ERRORS, TaskError) as exc:
        return fail(reason(exc))
    if subject.untrained_head:
        _warn_untrained(args.model, "the masked-token figures are those of a random head (a --task probe reads "
                        "the encoder alone and still counts)")  # fmt: skip
    return emit(strict_json(result) if args.json else _diagnosis_table(subject.title, diagnosis, result.get("task")))


def _diagnosis_table(title: str, diagnosis, task: dict | None) -> str:
    """`evaluate`'s report for people; an empty group's accuracy is a dash."""
    lines = [
        f"{title}: {diagnosis.predicted:,} masked positions",
        f"loss {diagnosis.loss:.4f} · accuracy {diagnosis.accuracy:.2%} · top-5 {diagnosis.top5_accuracy:.2%} · "
        f"calibration error {diagnosis.ece:.3f}",
    ]
    for heading, shares in (("by corpus frequency", diagnosis.by_frequency), ("by kind", diagnosis.by_kind)):
        lines += ["", f"{heading}:"]
        for share in shares:
            accuracy = f"{share.accuracy:7.2%}" if share.count else f"{'—':>7}"
            lines.append(f"  {share.name:>14}  {share.count:>7,}  {accuracy}")
    lines += ["", "most frequent confusions (expected → predicted):"]
    lines += [f"  {expected} → {predicted}  ×{count}" for expected, predicted, count in diagnosis.confusions[:10]]
    if task is not None:
        lines += [
            "",
            f"task ({task['examples']:,} examples): accuracy {task['accuracy']:.2%}, macro-F1 {task['macro_f1']:.3f}; "
            f"majority class {task['majority_accuracy']:.2%}, bag of words {task['bag_of_words_accuracy']:.2%}",
            "same-label neighbours of the held-out texts among the training texts: "
            f"recall@1 {task['recall_at_1']:.2%}, recall@5 {task['recall_at_5']:.2%}, MRR {task['mrr']:.3f}; "
            f"bag of words recall@1 {task['bag_of_words_recall_at_1']:.2%}, recall@5 "
            f"{task['bag_of_words_recall_at_5']:.2%}, MRR {task['bag_of_words_mrr']:.3f}",
        ]
    return "\n".join(lines)


def _warn_untrained(model, consequence: str) -> None:
    """Say, on stderr, that a folder's masked-LM head was made on import: it is warned of, not refused, because its
    encoder is real (a --task probe measures it, the Playground compares it with a trained one) and a script reads
    the JSON's `untrained_head` to decide for itself."""
    print(
        f"mlm-studio: warning: {model} holds an encoder without a masked-LM head, so the head is new and untrained "
        f"and {consequence}; train it first with: mlm-studio train --init-from {model}",
        file=sys.stderr,
    )
