"""The test examples a fine-tuned model gets wrong, read again from the run's task files and split as it was
trained, with the model's answers beside the true labels (for tagging: a sentence with any word mistagged)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.qa.metric import exact_match
from mlm_studio.core.finetune.qa.task import qa_split, read_qa_task
from mlm_studio.core.finetune.setup import copies_by, files_split, read_task
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.run_folder import RunDir


@dataclass(frozen=True)
class Mistake:
    """One wrong test example: its row in its file, its text (or words), the true and the predicted label(s)."""

    row: int
    inputs: tuple[str, ...]
    true: tuple[str, ...]
    predicted: tuple[str, ...]


def wrong_test_examples(path: str | Path, progress: Progress | None = None, limit: int = 500) -> list[Mistake]:
    """Up to `limit` test examples the run's best weights get wrong, in the test split's order (a question
    answerer's: `wrong_answers`)."""
    progress = progress or Progress()
    run = RunDir(path)
    if run.task is not None and run.task.kind == "qa":
        return wrong_answers(path, progress, limit)  # AnswerMistakes
    model = FineTuned(run)
    task = model.task
    read, _ = read_task(task.kind, task.train, task.validation, task.test, task.columns)
    test = files_split(read, task.split_seed, task.kind, copies_by(run), progress)[2]
    found = []
    for done, example in enumerate(test):
        progress.check()
        progress.report(done, len(test), "Reading the test examples again")
        if task.kind == "tokens":
            predicted = tuple(model.tag(list(example.inputs)))
        else:
            text = example.inputs[0] if len(example.inputs) == 1 else tuple(example.inputs)  # a text or a pair
            predicted = (model.classify([text])[0][0],)
        if predicted != example.labels:
            found.append(Mistake(example.row, example.inputs, example.labels, predicted))
            if len(found) >= limit:
                break
    return found


@dataclass(frozen=True)
class AnswerMistake:
    """One wrong answer: the question's row and id in its file, the question, its context, its gold answers
    ((text, first character) each; none for an unanswerable question) and the predicted answer's text and
    characters [start, end) ("" at 0, 0 for "no answer")."""

    row: int
    id: str
    question: str
    context: str
    gold: tuple[tuple[str, int], ...]
    predicted: tuple[str, int, int]


def wrong_answers(path: str | Path, progress: Progress | None = None, limit: int = 500) -> list[AnswerMistake]:
    """Up to `limit` test questions the run's best weights answer wrongly, in the test split's order."""
    progress = progress or Progress()
    run = RunDir(path)
    model = FineTuned(run)
    task = model.task
    files = read_qa_task(task.train, task.validation, task.test)
    impossible = any(f.has_impossible for f in files)
    test = qa_split(files, task.split_seed)[2]
    found = []
    for done, example in enumerate(test):
        progress.check()
        progress.report(done, len(test), "Answering the test questions again")
        best = model.answer(example.question, example.context, handle_impossible_answer=impossible)
        answer = best[0] if best else {"answer": "", "start": 0, "end": 0}
        if not exact_match(answer["answer"], [text for text, _ in example.answers]):
            predicted = (answer["answer"], answer["start"], answer["end"])
            found.append(
                AnswerMistake(example.row, example.id, example.question, example.context, example.answers, predicted)
            )
            if len(found) >= limit:
                break
    return found
