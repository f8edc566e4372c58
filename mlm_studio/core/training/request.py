"""A training as the user asks for it: what to train, from what, resumed or new. The command line and the window
each build a `TrainingRequest`; `resolve` alone turns it into what the trainer needs, or refuses it in one
sentence, so that both front ends give the same request the same configuration and the same refusals."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import SECTIONS
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import Corpus, load_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer, train_tokenizer
from mlm_studio.core.durations import format_duration
from mlm_studio.core.models.hf_folder import ImportedModel, import_model
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.device import autocast_dtype, resolve_device
from mlm_studio.core.runs.history import nothing_left, summarize
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.runs.settings import apply_resume, config_differences, described, with_resolved_precision
from mlm_studio.core.storage.user_folders import default_runs_dir
from mlm_studio.core.training.branching import plan_branch
from mlm_studio.core.training.probes import Probe
from mlm_studio.core.training.runs import (
    NewFolder,
    NewRun,
    TrainingRefused,
    check_corpus_unchanged,
    check_resume,
    continuing,
    new_run_config,
    new_run_path,
    prepare_trainer,
)
from mlm_studio.core.training.trainer import Trainer

CONTINUED_LABEL = "continued"  # a new run's folder name when it continues an imported model


@dataclass(frozen=True)
class TrainingRequest:
    """What the user asked to train. Left out (None), a value is the resumed run's own, or for a new run the
    default: the default preset, the built-in corpus, a tokenizer trained on the corpus, fresh weights."""

    resume: Path | None = None  # a run to continue from its latest checkpoint; None: a new run
    out: Path | None = None  # the new run's folder; None: a fresh one under `runs_root`
    runs_root: Path | None = None  # where a new run's folder is made (None: the user's runs folder)
    config: RunConfig | None = None  # given whole: a file, a preset, the window's form
    objective: str | None = None
    settings: tuple[tuple[str, Any], ...] = ()  # `section.field` values set on top (--set), checked as a file's
    max_steps: int | None = None  # the length: a number of steps (then no epochs and no time budget) …
    time_budget: float | None = None  # … and/or seconds of training
    device: str | None = None
    precision: str | None = None
    corpus: Corpus | tuple[Path, ...] | None = None  # read already, or its files
    tokenizer: MLMTokenizer | Path | None = None  # loaded already, or its file
    init_from: ImportedModel | str | Path | None = None  # a Hugging Face model to continue pre-training
    chosen: frozenset[str] | None = None  # settings the user chose, which a continuation keeps; None: all (a form)
    probes: tuple[Probe, ...] = ()  # cloze probes a new run scores at each evaluation
    form: RunConfig | None = None  # a configuration shown beside a resume, which it does not use: said where it differs
    branch: Path | None = None  # a run to branch from: a new run from its checkpoint at `from_step` (branching.py)
    from_step: int | None = None
    skip_batches: tuple[int, int] | None = None  # (A, B): the branch passes over the batches of steps A + 1 … B


class Note(NamedTuple):
    """What a front end says before training starts: `text` in full (the terminal, the log), `short` in a line
    (the window's message bar)."""

    text: str
    short: str


@dataclass(frozen=True)
class ResolvedTraining:
    """What the trainer needs: the run folder, the configuration it trains with (its config.toml once started),
    how to create it (`new`; None for a resume) and the notes to say."""

    path: Path
    config: RunConfig
    new: NewFolder | None
    notes: tuple[Note, ...]


def run_folder(request: TrainingRequest) -> Path:
    """The folder the request trains in, found without reading anything: the run resumed, `out`, or a new one
    named by date, time and preset. What can be refused without reading is refused here."""
    _refuse_combinations(request)
    if request.resume is not None:
        return Path(request.resume)
    config = configured(request) if request.branch is None else None
    if request.out is not None:
        return Path(request.out)
    if config is None:
        label = f"branch-at-{request.from_step}"
    else:
        label = CONTINUED_LABEL if request.init_from is not None else config.preset
    return new_run_path(request.runs_root or default_runs_dir(), label)


def _refuse_combinations(request: TrainingRequest) -> None:
    branched = {"--resume": request.resume, "--init-from": request.init_from, "--corpus": request.corpus,
                "--tokenizer": request.tokenizer}  # fmt: skip
    given = [name for name, value in branched.items() if value is not None]
    if request.branch is not None and given:
        raise TrainingRefused(f"--branch trains on its parent's checkpoint, corpus and tokenizer: leave out {given[0]}")
    if request.branch is not None and request.from_step is None:
        raise TrainingRefused("--branch needs --from-step: the step of the checkpoint to branch from")
    if request.branch is None and (request.from_step is not None or request.skip_batches is not None):
        raise TrainingRefused("--from-step and --skip-batches go with --branch RUN_DIR: the run to branch from")
    if request.resume is not None and request.init_from is not None:
        raise TrainingRefused("--init-from starts a new run; it cannot be combined with --resume")
    if request.init_from is not None and request.tokenizer is not None:
        raise TrainingRefused("--init-from brings the model's own tokenizer; leave out --tokenizer")


def configured(request: TrainingRequest, base: RunConfig | None = None) -> RunConfig:
    """The configuration asked for: given whole, else `base` (a resumed run's own) or the default preset; then
    the objective, the settings, the length, the device and the precision. A device this machine lacks and a
    precision it cannot train in are refused here, before any work."""
    config = request.config if request.config is not None else base if base is not None else preset(DEFAULT_PRESET)
    if request.objective is not None:
        config = config.with_objective(request.objective)
    if request.settings:
        config = config.with_values(dict(request.settings))
    training = config.training
    if request.max_steps is not None:
        training = replace(training, max_steps=request.max_steps, epochs=0.0, time_budget=0.0)
    if request.time_budget is not None:
        training = replace(training, time_budget=request.time_budget)
    if request.device is not None:
        training = replace(training, device=request.device)
    if request.precision is not None:
        training = replace(training, precision=request.precision)
    autocast_dtype(training.precision, resolve_device(training.device))
    return replace(config, training=training)


def resolve(request: TrainingRequest, progress: Progress | None = None, path: Path | None = None) -> ResolvedTraining:
    """The request resolved (in `path` when `run_folder` gave it already): every refusal (`TrainingRefused`, or
    the error of a file that cannot be read) comes from here, before anything is written. Reads what it needs:
    the run resumed, the model continued, the corpus, a tokenizer (trained on the corpus when none is given)."""
    _refuse_combinations(request)
    path = path or run_folder(request)
    if request.resume is not None:
        return _resumed(request, RunDir(path), progress)
    if request.branch is not None:
        return _branched(request, path)
    return _new(request, path, progress)


def _branched(request: TrainingRequest, path: Path) -> ResolvedTraining:
    """A branch: the parent's settings with the request's on top, checked with the step and the skip range."""
    parent = RunDir(request.branch)
    plan = plan_branch(parent, request.from_step, request.skip_batches, configured(request, parent.config))
    said = f"{path.name}: {plan.branch.said()}"
    return ResolvedTraining(path, plan.config, plan, (Note(said, said),))


def _resumed(request: TrainingRequest, run: RunDir, progress: Progress | None) -> ResolvedTraining:
    """A resume: another tokenizer, another corpus, a setting a resume cannot change or a length already trained
    is refused; the changes it may make are applied and said."""
    tokenizer = request.tokenizer
    if isinstance(tokenizer, Path):
        tokenizer = MLMTokenizer.load(tokenizer)
    given = configured(request, run.config)
    config = check_resume(run, given, tokenizer)
    corpus = request.corpus
    if corpus is not None and not isinstance(corpus, Corpus):
        corpus = load_corpus(list(corpus))
    check_corpus_unchanged(run, corpus, progress)
    _refuse_nothing_left(run, config)
    notes = []
    changes = config_differences(run.config, config)
    if changes:
        said = f"resumed with {described(changes)}"
        notes.append(Note(said, said))
    if request.form is not None:
        notes += _unused(run, request.form, config)
    return ResolvedTraining(run.path, config, None, tuple(notes))


def _refuse_nothing_left(run: RunDir, config: RunConfig) -> None:
    """Refuse a resume whose length the run has already trained (the rule the Runs table's Resume follows)."""
    summary, training = summarize(run), config.training
    if not nothing_left(run, summary, training):
        return
    if training.time_budget > 0:
        reached = f"it has trained {format_duration(summary.elapsed)}, and its time budget is "
        more = f"{format_duration(training.time_budget)}, so nothing is left to train; give it more time to continue"
    else:
        latest = run.latest_checkpoint()
        at = f"its latest checkpoint, {latest.name if latest else 'none'}, is at step {summary.checkpoint_step:,}"
        if training.epochs > 0:
            reached = f"{at}, the last of its {training.epochs:g} epoch(s), so nothing is left to train; "
            more = "give it more epochs to continue"
        else:
            reached = f"{at}, and training.max_steps is {training.max_steps:,}, so nothing is left to train; "
            more = "give it more steps to continue"
    raise TrainingRefused(f"cannot resume {run.name}: {reached}{more}")


def _unused(run: RunDir, form: RunConfig, config: RunConfig) -> list[Note]:
    """Where the window's form differs from what the resume trains with: said as not used."""
    model = config.model
    differences = config_differences(
        config, with_resolved_precision(form.with_vocabulary(model.vocab_size, model.pad_token_id))
    )
    if not differences:
        return []
    names = list(differences)
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    said = f"{run.name} resumes with its own settings; the Configuration panel's differ and are not used"
    return [Note(f"{said}: {described(differences)} (run → panel)", f"{said} ({', '.join(names[:4])}{more}).")]


def _new(request: TrainingRequest, path: Path, progress: Progress | None) -> ResolvedTraining:
    """A new run: the model continued (imported when named), the corpus read (the built-in one unless given) and
    the tokenizer: the model's, the one given, or trained on the corpus."""
    config, notes, initial = configured(request), [], request.init_from
    if initial is not None and not isinstance(initial, ImportedModel):
        initial = import_model(initial)
        notes.append(Note(initial.summary(), initial.summary()))
    if initial is not None:
        config, recipe = continuing(config, initial, _chosen(request, config))
        notes += [Note(recipe, recipe)] if recipe else []
    corpus = request.corpus
    if not isinstance(corpus, Corpus):
        corpus = load_corpus(list(corpus or [ensure_builtin_corpus()]), progress=progress)
    tokenizer = request.tokenizer
    if initial is not None:
        tokenizer = initial.tokenizer
    elif isinstance(tokenizer, Path):
        tokenizer = MLMTokenizer.load(tokenizer)
    elif tokenizer is None:
        tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents, progress)
    new = NewRun(config, corpus, tokenizer, initial, request.probes)
    return ResolvedTraining(path, new_run_config(config, tokenizer, initial), new, tuple(notes))


def _chosen(request: TrainingRequest, config: RunConfig) -> Collection[str]:
    if request.chosen is not None:
        return request.chosen
    return {f"{section}.{name}" for section in SECTIONS for name in getattr(config, section).values()}


def prepare(
    request: TrainingRequest,
    *,
    say: Callable[[Note], None] = lambda note: None,
    resolved: Callable[[ResolvedTraining], None] = lambda resolved: None,
    path: Path | None = None,
    **options: Any,
) -> Trainer:
    """The trainer for `request`, in `path` when `run_folder` gave it already (a new run's name holds the time it
    was asked for: asked again a second later, it would name another folder): its folder locked (with `held`, as
    `prepare_trainer`), the request resolved and its notes said (`say`) before anything is written, then the run
    created or resumed. `resolved` sees the resolution once its notes are said; `options` go to `prepare_trainer`
    (held, progress, ready) and on to `Trainer`."""
    progress = options.get("progress")

    def resolution() -> ResolvedTraining:
        answer = resolve(request, progress, path)
        for note in answer.notes:
            say(note)
        resolved(answer)
        return answer

    path = path or run_folder(request)
    if request.resume is None:  # a new run or a branch
        return prepare_trainer(path, begin=lambda: resolution().new, **options)
    return prepare_trainer(path, check=lambda run: apply_resume(run, resolution().config), **options)
