"""The test questions a fine-tuned question answerer gets wrong (its answer not exactly one of the gold answers,
as SQuAD's exact match says), read again from the run's files and split as it was trained, with its answer and
where it lies in the context beside the gold answers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.qa.metric import exact_match
from mlm_studio.core.finetune.qa.task import qa_split, read_qa_task
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.run_folder import RunDir


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
    task = run.task
    paths = [Path(p) if p else None for p in (task["files"][name] for name in ("train", "validation", "test"))]
    files = read_qa_task(*paths)
    impossible = any(f.has_impossible for f in files)
    test = qa_split(files, task["split_seed"])[2]
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
