"""Every checkpoint of a run scored in turn: since which step does it know the frequent words, the rare ones,
the task?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.data.labelled import LabelledFile
from mlm_studio.core.evaluation.diagnosis import Diagnosis, diagnose
from mlm_studio.core.evaluation.subject import load_subject
from mlm_studio.core.evaluation.task_probe import probe_task
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import load_weights


@dataclass(frozen=True)
class CheckpointScore:
    """One checkpoint of a run: its diagnosis and, when a task is given, its probe."""

    step: int
    diagnosis: Diagnosis
    task: object | None  # TaskResult


def over_checkpoints(
    source: str | Path, corpus=None, task: LabelledFile | None = None, progress: Progress | None = None
) -> list[CheckpointScore]:
    """Every checkpoint of a run diagnosed (and probed on `task`'s texts and labels), oldest first: since which
    step does it know the frequent words, the rare ones, the task?"""
    progress = progress or Progress()
    subject = load_subject(source, None, corpus, progress)
    scores = []
    checkpoints = RunDir(source).checkpoints()
    for number, checkpoint in enumerate(checkpoints):
        progress.check()
        progress.report(number, len(checkpoints), f"Scoring {checkpoint.name}")
        load_weights(checkpoint, subject.trained)
        diagnosis = diagnose(subject.model, subject.tokenizer, subject.config, subject.validation, samples=0)
        result = (
            probe_task(subject.encoder, subject.tokenizer, task.texts, task.labels, read_once=task.read_once)
            if task is not None
            else None
        )
        scores.append(CheckpointScore(int(checkpoint.name.split("-")[1]), diagnosis, result))
    progress.report(len(checkpoints), len(checkpoints), "Scored every checkpoint")
    return scores
