"""The test examples a fine-tuned run gets wrong are those off its confusion matrix's diagonal, with its labels."""

from mlm_studio.core.finetune.mistakes import wrong_test_examples
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.runs.records import TestRecord
from tests.core.test_finetune import options, write_task


def test_the_mistakes_are_the_confusion_matrixs_off_diagonal(trained_run, tmp_path):
    task = write_task(tmp_path / "task.csv")
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), options(task, epochs=1)).run())
    test = next(r for r in records if isinstance(r, TestRecord))
    found = wrong_test_examples(tmp_path / "ft")
    off_diagonal = {}
    for m in found:
        off_diagonal[(m.true[0], m.predicted[0])] = off_diagonal.get((m.true[0], m.predicted[0]), 0) + 1
    expected = {
        (test.labels[r], test.labels[c]): n
        for r, row in enumerate(test.confusion)
        for c, n in enumerate(row)
        if r != c and n
    }
    assert off_diagonal == expected and expected  # one short epoch leaves some
    rows = [m.row for m in found]
    assert rows and all(isinstance(r, int) and r >= 2 for r in rows)  # rows of the file, after its header
    assert wrong_test_examples(tmp_path / "ft", limit=1) == found[:1]
