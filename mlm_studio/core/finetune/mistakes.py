"""The test examples a fine-tuned model gets wrong, read again from the run's task files and split as it was
trained, with the model's answers beside the true labels (for tagging: a sentence with any word mistagged)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.finetune.labelled import Columns
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.qa.mistakes import wrong_answers
from mlm_studio.core.finetune.setup import copies_by, files_split, read_task
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.run_folder import RunDir


@dataclass(frozen=True)
class Mistake:
    """One wrong test example: its row in its file, its text (or words), the true and the predicted label(s)."""

    row: int
    inputs: tuple[str, ...]
    true: tuple[str, ...]
    predicted: tuple[str, ...]


def wrong_test_examples(path: str | Path, progress: Progress | None = None, limit: int = 500) -> list[Mistake]:
    """Up to `limit` test examples the run's best weights get wrong, in the test split's order (a question
    answerer's: `qa_mistakes.wrong_answers`)."""
    progress = progress or Progress()
    run = RunDir(path)
    if run.task is not None and run.task["task"] == "qa":
        return wrong_answers(path, progress, limit)  # AnswerMistakes
    model = FineTuned(run)
    task = run.task
    files = {name: Path(p) if p else None for name, p in task["files"].items()}
    columns = Columns(**task["columns"]) if task["columns"] else None
    read, _ = read_task(task["task"], files["train"], files["validation"], files["test"], columns)
    test = files_split(read, task["split_seed"], task["task"], copies_by(run))[2]
    found = []
    for done, example in enumerate(test):
        progress.check()
        progress.report(done, len(test), "Reading the test examples again")
        if task["task"] == "tokens":
            predicted = tuple(model.tag(list(example.inputs)))
        else:
            text = example.inputs[0] if len(example.inputs) == 1 else tuple(example.inputs)  # a text or a pair
            predicted = (model.classify([text])[0][0],)
        if predicted != example.labels:
            found.append(Mistake(example.row, example.inputs, example.labels, predicted))
            if len(found) >= limit:
                break
    return found
