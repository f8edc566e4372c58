"""The Fine-tune panel's three modes without a window: each prepares its work as the trainer thread runs it, names
whose every record is (the contender or learning rate, the seed, which run of how many, counted from the records
that arrive) and says the status line and the bar; a comparison or search is read back from its folder, and one
that cannot be says why in a sentence. The modes import no Qt."""

import json
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlm_studio.core.finetune.compare import SCRATCH_LABEL, YOURS
from mlm_studio.core.finetune.recipe.search import SearchPlan
from mlm_studio.core.finetune.recipe.searched import PLAN
from mlm_studio.core.finetune.scores import MACRO_F1
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import FinishedRecord, StartedRecord, StepRecord, ValidationRecord, WarningRecord
from mlm_studio.ui.panels.finetune.modes import ComparisonRun, OneRun, ReopenError, Said, SearchRun
from tests.core.test_finetune import options, write_task

KINDS_SAID = (StepRecord, ValidationRecord, FinishedRecord)


def follow(mode):
    """Run `mode` as the trainer thread does, and follow every record as the panel does: what its status lines
    said at each run's start and end, each run's subject, and the records."""
    said, subjects, records = [], [], []
    with ExitStack() as held:
        for item in mode.prepare(None, TrainingControl(), held).run():
            record = mode.record_of(item)
            records.append(record)
            if isinstance(record, StartedRecord):
                subjects.append(mode.started(item, Path(record.run_dir), record.step, record.total_steps))
                said.append(mode.starting_line(item, Path(record.run_dir)))
            elif isinstance(record, StepRecord):
                mode.reached(record.step)
            elif isinstance(record, FinishedRecord):
                mode.reached(record.step)
                said.append(mode.finished_line(item, record, None))
    return said, subjects, records


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return write_task(tmp_path_factory.mktemp("task") / "task.csv", rows=60)


def test_the_modes_import_no_qt():
    code = "import sys, mlm_studio.ui.panels.finetune.modes; print(sorted(m for m in sys.modules if 'PySide6' in m))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert imported.strip() == "[]"


def test_one_run_says_its_steps_of_its_total_and_its_end(trained_run, task, tmp_path):
    run = OneRun(tmp_path / "ft", str(trained_run.path), options(task, epochs=1))
    assert run.progress == (0, 1) and not run.series  # before its start: an empty bar, never a division by zero
    said, subjects, records = follow(run)
    assert said[0] == "Fine-tuning ft" and said[1].startswith(f"Finished (completed) at step {run.step:,} of ")
    assert subjects == [f"Run ft: {trained_run.path.name} on task.csv (classification)"]
    assert run.progress == (run.step, run.total_steps) and run.step == run.total_steps > 0
    assert run.step_line(paused=True) == f"Paused after step {run.step:,} of {run.total_steps:,}"
    assert not any(run.refreshes(record) for record in records)  # no table to read again
    step, validation, finished = (next(r for r in records if isinstance(r, kind)) for kind in KINDS_SAID)
    assert run.said(step, step, paused=True, test=None) == Said(run.step_line(paused=True))
    assert run.said(finished, finished, paused=False, test=None) == Said(said[1])
    on_validation = run.said(validation, validation, paused=False, test=None)
    assert on_validation.line.startswith(f"validation {MACRO_F1} ") and on_validation.line.endswith(
        f"% at step {validation.step:,}"
    )
    assert on_validation.detail == validation.describe() and not on_validation.warning  # its loss and every score
    warning = WarningRecord(step=3, message="Could not save the checkpoint")
    assert run.said(warning, warning, paused=False, test=None) == Said(warning="Could not save the checkpoint")
    assert run.said(records[0], records[0], paused=False, test=None) == Said()  # a start: its own line, elsewhere


def test_a_comparison_counts_its_runs_from_the_records_and_reads_its_outcome_back(trained_run, task, tmp_path):
    comparison = ComparisonRun(tmp_path / "compare", str(trained_run.path), options(task, epochs=1), seeds=1)
    assert comparison.series and comparison.runs == 2  # your model and from scratch, one seed each
    said, subjects, records = follow(comparison)
    assert [line for line in said if "Fine-tuning" in line] == [
        f"[{YOURS}, seed 0, run 1 of 2] Fine-tuning your-model-seed0",
        f"[{SCRATCH_LABEL}, seed 0, run 2 of 2] Fine-tuning from-scratch-seed0",
    ]
    assert said[-1].startswith(f"[{SCRATCH_LABEL}, seed 0, run 2 of 2] Finished (completed) at step ")
    assert subjects[0] == f"{YOURS}, seed 0: run your-model-seed0 of comparison compare"
    refreshed = [record for record in records if comparison.refreshes(record)]  # its table: as each run ends
    assert refreshed == [record for record in records if isinstance(record, FinishedRecord)] and len(refreshed) == 2
    found = comparison.read_back()
    assert (comparison.counts(found), comparison.line(found)) == ((2, 2), "Comparison compare: complete")
    reopened = ComparisonRun(tmp_path / "compare")  # from the Runs tab: the same outcome
    assert reopened.line(reopened.read_back()) == "Comparison compare: complete"


def test_a_search_names_each_run_of_its_plan_and_says_what_continues_it(trained_run, task, tmp_path):
    plan = SearchPlan(str(trained_run.path), options(task, patience=1), (1e-2, 2e-2), 1, 1)
    control = TrainingControl()
    search = SearchRun(tmp_path / "search", plan)
    said = []
    with ExitStack() as held:
        for item in search.prepare(None, control, held).run():
            record = search.record_of(item)
            if isinstance(record, StartedRecord):
                search.started(item, Path(record.run_dir), record.step, record.total_steps)
                said.append(search.starting_line(item, Path(record.run_dir)))
                assert search.refreshes(record)  # its table, with the runs before this one
            elif isinstance(record, FinishedRecord):
                control.stop()  # after its first run: the search stops there, to be continued
    assert said == ["[lr 0.01, seed 0, run 1 of 2] Fine-tuning lr0.01-seed0"]
    found = search.read_back()
    assert search.counts(found) == (1, 2)
    assert search.line(found) == "Recipe search search: 1 of 2 runs finished; Resume on the Runs tab continues it"


def test_a_folder_that_is_no_longer_a_comparison_or_search_is_said_in_a_sentence(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReopenError, match=r"^empty holds no comparison any more$"):
        ComparisonRun(tmp_path / "empty").read_back()
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / PLAN).write_text(json.dumps({"plan": "not a plan"}))
    with pytest.raises(ReopenError, match=r"^Could not read the recipe search damaged: "):
        SearchRun(damaged).read_back()
    assert SearchRun(damaged).now() is None  # while running: read again at the next run, nothing said


def test_a_series_ends_saying_its_runs_notes_each_once_without_whose_they_were(tmp_path):
    search = SearchRun(tmp_path / "search")
    assert search.closing_note() == ""  # its runs noted nothing: the message bar has nothing to say
    item = SimpleNamespace(learning_rate=1e-4, seed=0, run=1, runs=6)
    for step, note in enumerate(["rows left out: 1", "rows left out: 1", "stopped early", "cut", "slow", "odd"]):
        said = search.said(item, WarningRecord(step, note), paused=False, test=None)
        assert said.warning == f"[lr 0.0001, seed 0, run 1 of 6] {note}"  # while it trains: whose it is
    notes = "rows left out: 1; stopped early; cut; and 2 more"
    assert search.closing_note() == f"The recipe search search: its runs noted {notes}"
