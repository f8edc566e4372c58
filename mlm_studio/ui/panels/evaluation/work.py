"""What the Evaluation panel runs in the background, as `work(progress)` functions for a TaskRunner: scoring the
chosen model (and the one compared) down to the chips its samples are shown as, every checkpoint of a run, a
word's contexts, a task's probe. Each result names what it was computed for, so that the panel shows it only
under that name; and what a task lacks before it can start, in words."""

from __future__ import annotations

from collections.abc import Callable

from mlm_studio.core.evaluation.contexts import context_map
from mlm_studio.core.evaluation.diagnosis import diagnose
from mlm_studio.core.evaluation.subject import Subject, load_subject
from mlm_studio.core.evaluation.sweep import over_checkpoints
from mlm_studio.core.evaluation.task_probe import probe_task, read_task
from mlm_studio.core.models.encoder import layer_count
from mlm_studio.core.models.hf_folder import is_hf_folder
from mlm_studio.core.progress import Progress
from mlm_studio.ui.panels.evaluation.results import Choice
from mlm_studio.ui.widgets.diagnosis_views import answered_blocks

Work = Callable[[Progress], object]


def scoring(choice: Choice, corpus) -> Work:
    """The chosen model and checkpoint diagnosed (and the model compared): `(choice, (subject, diagnosis, blocks),
    the same for the compared model or None)`. A run reads its own recorded corpus, an imported model `corpus`."""

    def scored(source: str, step: int | None, progress: Progress):
        subject = load_subject(source, step, corpus if is_hf_folder(source) else None, progress)
        diagnosis = diagnose(subject.model, subject.tokenizer, subject.config, subject.validation, progress=progress)
        return subject, diagnosis, answered_blocks(subject.title, diagnosis.samples, subject.tokenizer)

    def work(progress: Progress):
        first = scored(choice.path, choice.step, progress)
        return choice, first, scored(choice.other, None, progress) if choice.other else None

    return work


def tracking(path: str, task_file: str, columns: list[str]) -> Work:
    """Every checkpoint of the run at `path` scored (and probed on the task file, if any): `(path, scores, the task
    file's report or None)`."""

    def work(progress: Progress):
        task = read_task(task_file, *columns, progress=progress) if task_file else None
        return path, over_checkpoints(path, None, task, progress), task.report if task else None

    return work


def mapping(subjects: list[Subject], corpus, word: str, layer: int) -> Work:
    """`word`'s occurrences in `corpus` placed by each model's vectors at `layer` (or its last)."""

    def work(progress: Progress):
        maps = []
        for subject in subjects:
            at = min(layer, layer_count(subject.encoder))
            maps.append(context_map(subject.encoder, subject.tokenizer, corpus.iter_documents(), word, at,
                                    progress=progress))  # fmt: skip
        return maps

    return work


def probing(subjects: list[Subject], path: str, columns: list[str], layer: int | None) -> Work:
    """Each model's probe of the labelled file: `([(title, result)], the file's report)`."""

    def work(progress: Progress):
        task = read_task(path, *columns, progress=progress)
        results = []
        for subject in subjects:
            at = layer and min(layer, layer_count(subject.encoder))
            results.append((subject.title, probe_task(subject.encoder, subject.tokenizer, task.texts, task.labels,
                                                      at, progress=progress, read_once=task.read_once)))  # fmt: skip
        return results, task.report

    return work


def missing_for_scoring(choice: Choice, no_corpus: bool) -> str:
    """What scoring the choice lacks, in words ("" when nothing): an imported model is scored on a corpus."""
    imported = [name for path, name in ((choice.path, choice.name), (choice.other, choice.other_name))
                if path is not None and is_hf_folder(path)]  # fmt: skip
    if no_corpus and imported:
        return (
            f"{imported[0]} is a Hugging Face model: it is scored on a corpus of yours; load one on the Corpus panel "
            "first."
        )
    return ""


def missing_for_contexts(model: bool, corpus: bool, word: bool) -> str:
    """What showing a word's contexts lacks, in words ("" when nothing)."""
    if model and corpus:
        return "Evaluate a model and load a corpus on the Corpus panel first: the contexts are its sentences."
    if model:
        return "Evaluate a model first: its vectors place the word's contexts."
    if corpus:
        return "Load a corpus on the Corpus panel first: the word's contexts are its sentences."
    if word:
        return "Type a word of the corpus first."
    return ""
