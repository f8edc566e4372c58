"""A question-answering task as fine-tuning reads it: its SQuAD files read (`qa/data.py`), split by context
unless validation and test files are given (the questions on one context all on one side, so that no test
question is asked of a context trained on), and each part cut into the windows the model reads (`qa/features.py`),
the document stride and the longest answer fixed when the run begins."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlm_studio.core.data.copies import SPLIT_SHARES, Normalise, copy_key
from mlm_studio.core.data.labelled import Example, TaskError
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.finetune.heads import QA_LABELS
from mlm_studio.core.finetune.qa.data import QAExample, QAFile, read_qa_file
from mlm_studio.core.finetune.qa.features import QAFeatures, qa_features
from mlm_studio.core.finetune.qa.kind import AnswerKind
from mlm_studio.core.finetune.tuner import TaskData
from mlm_studio.core.runs.run_folder import RunDir

DOC_STRIDE = 128  # tokens two windows of one context share (`transformers`' run_qa.py)
MAX_ANSWER_LENGTH = 30  # tokens of the longest answer decoded (run_qa.py)
MAX_QUESTION = 64  # tokens of a question the model reads at most (the question-answering pipeline's)


@dataclass(frozen=True)
class QAPart:
    """Questions and the windows the model reads of them: its length is the windows'."""

    examples: list[QAExample]
    features: QAFeatures

    @property
    def ids(self) -> list[np.ndarray]:
        return self.features.ids

    def __len__(self) -> int:
        return len(self.features)

    def lengths(self) -> np.ndarray:
        """Each window's length in tokens."""
        return np.asarray([len(ids) for ids in self.features.ids], dtype=np.int64)


def question_room(limit: int) -> int:
    """Tokens of a question a window of `limit` tokens keeps: `MAX_QUESTION`, or a quarter of a short window."""
    return min(MAX_QUESTION, limit // 4)


def windows_of(tokenizer: MLMTokenizer, examples: list[QAExample], limit: int, stride: int) -> QAPart:
    """The examples and their windows of at most `limit` tokens overlapping by `stride`; TaskError when such a
    window has no room for context."""
    try:
        return QAPart(examples, qa_features(tokenizer, examples, limit, stride, question_room(limit)))
    except ValueError as exc:
        raise TaskError(f"the document stride does not fit the model's window: {exc}") from None


def read_qa_task(train: Path, validation: Path | None, test: Path | None) -> list[QAFile]:
    """The question-answering files read and checked (`qa/data.py`)."""
    if (validation is None) != (test is None):
        raise TaskError("give both a validation and a test file, or neither (then the training file is split)")
    return [read_qa_file(p) for p in (train, validation, test) if p is not None]


def context_split(examples: list[QAExample], seed: int) -> tuple[list[int], list[int], list[int]]:
    """Indices of training, validation and test (`SPLIT_SHARES` of the contexts, seeded), every question on a
    context on the same side as the context, whatever the titles it comes under."""
    by_context: dict[str, list[int]] = {}
    for index, example in enumerate(examples):
        by_context.setdefault(example.context, []).append(index)
    groups = list(by_context.values())
    if len(groups) < 3:
        raise TaskError(
            f"{len(groups)} context(s) cannot be split into training, validation and test without asking a test "
            "question of a context trained on; give more contexts, or your own validation and test files"
        )
    order = np.random.default_rng(seed).permutation(len(groups)).tolist()
    held = max(1, round(len(groups) * SPLIT_SHARES[1]))
    parts = (order[2 * held :], order[:held], order[held : 2 * held])
    return tuple(sorted(i for g in part for i in groups[g]) for part in parts)


def qa_split(files: list[QAFile], seed: int) -> tuple[list[QAExample], list[QAExample], list[QAExample]]:
    """The training, validation and test questions: the user's files, or a split of the one file by context."""
    if len(files) == 3:
        return files[0].examples, files[1].examples, files[2].examples
    examples = files[0].examples
    return tuple([examples[i] for i in part] for part in context_split(examples, seed))


def qa_task_data(run: RunDir) -> TaskData:
    """A question-answering run's questions, read again from its task's files, split and cut into windows as when it
    began."""
    task = run.task
    files = read_qa_task(task.train, task.validation, task.test)
    limit, stride = run.config.data.max_seq_len, task.doc_stride
    parts = [windows_of(run.tokenizer, part, limit, stride) for part in qa_split(files, task.split_seed)]
    notes = [f"{f.path.name}: rows left out: {f.skipped}" for f in files if f.skipped]
    notes += [f"{f.path.name}: {f.encoding_note}" for f in files if f.encoding_note]
    if all(example.impossible for example in files[0].examples):
        notes.append(f"{files[0].path.name}: no question has an answer; the model learns only to answer none")
    room = question_room(limit)
    questions = [e for part in parts for e in part.examples]
    pieces = run.tokenizer.backend.encode_batch([e.question for e in questions], add_special_tokens=False)
    long = [e.row for e, encoded in zip(questions, pieces, strict=True) if len(encoded.ids) > room]
    if long:
        notes.append(
            f"{len(long):,} question(s) are longer than the {room} tokens the model reads of one and were cut, "
            f"the first at row {long[0]}"
        )
    if len(files) == 3:
        notes += contexts_seen_in_training([f.path.name for f in files], files, run.tokenizer.normalised)
    kind = AnswerKind(task.max_answer_length, any(f.has_impossible for f in files))
    return TaskData(list(QA_LABELS), *parts, kind, tuple(notes))


def contexts_seen_in_training(names: list[str], files: list[QAFile], normalise: Normalise) -> list[str]:
    """For files given apart (training, validation, test): the validation and test questions asked of a context
    that is also a training context (as the tokenizer reads it, spacing aside), in words, as `copies_said` says a
    classification's."""

    def key(example: QAExample) -> bytes:
        return copy_key(Example(example.row, (example.context,), ()), normalise)

    trained = {key(example) for example in files[0].examples}
    said = []
    for name, file, kind in zip(names[1:], files[1:], ("validation", "test"), strict=True):
        seen = sum(key(example) in trained for example in file.examples)
        if seen:
            said.append(
                f"{name}: {seen:,} of its {len(file.examples):,} {kind} questions are asked of a context that is also "
                f"in the training file ({names[0]}): their {kind} scores are measured on contexts the model trained "
                "on, not on unseen ones"
            )
    return said
