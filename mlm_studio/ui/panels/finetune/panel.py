"""The Fine-tune panel: a model (a run, a Hugging Face folder, or either's shape from scratch) fine-tuned on a
labelled file in the background, with live curves of the training loss and accuracy and the validation score, pause
and stop; when it ends, the test scores, confusion matrix and mistakes (results.py), and the classifier exported.
Compare fine-tunes the model against its starting model and the same from scratch over several seeds
(comparison.py); Search recipe tries several learning rates on the validation split and shows the recipe they
choose (recipe.py). One run, a comparison and a search are each its own mode (modes.py: what starts it, who said
each record, the status line and the bar), chosen when it starts or is reopened; the panel shows what the mode says.
The Runs tab lists the fine-tuning runs, comparisons and searches, shows a run's results, reopens a comparison or
search and resumes a run or search (runs_list.py). Every tab names the run it shows (subjects.py)."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QStackedWidget, QVBoxLayout, QWidget

from mlm_studio.core.errors import UserError
from mlm_studio.core.finetune.mistakes import wrong_test_examples
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.recipe.search import SearchPlan, plan_of
from mlm_studio.core.finetune.runs import before_latest_start, last_test
from mlm_studio.core.finetune.tasks import SEARCH_MAX_EPOCHS, SEARCH_RATES, SEARCH_SEEDS
from mlm_studio.core.runs.control import IDLE, PAUSED, PREPARING
from mlm_studio.core.runs.records import CheckpointRecord, FinishedRecord, StepRecord, TestRecord, ValidationRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.json_text import json_object
from mlm_studio.core.training.runs import new_run_path
from mlm_studio.ui.panels.finetune.comparison import ComparisonView
from mlm_studio.ui.panels.finetune.controls import ControlRow
from mlm_studio.ui.panels.finetune.explained_try_it import ExplainedTryIt
from mlm_studio.ui.panels.finetune.form import FinetuneForm
from mlm_studio.ui.panels.finetune.modes import UNREADABLE, ComparisonRun, OneRun, ReopenError, SearchRun
from mlm_studio.ui.panels.finetune.plots import CURVES_HINT, FinetunePlots, curves_hint
from mlm_studio.ui.panels.finetune.recipe import RecipeSearchView, search_plan_line
from mlm_studio.ui.panels.finetune.results import ResultsView, tags_words
from mlm_studio.ui.panels.finetune.runs_list import FinetuneRunsList
from mlm_studio.ui.panels.finetune.subjects import (
    comparison_plan,
    comparison_subject,
    run_subject,
    search_subject,
    shown_run_line,
)
from mlm_studio.ui.run_export import RunExporter
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.trainer_thread import TrainingController
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.workspace import Workspace


class FinetunePanel(QWidget):
    """Choose, fine-tune, read the outcome, export; compare and search recipes (modes.py)."""

    run_finished = Signal(object)  # the run folder

    @property
    def runs_root(self) -> Path:
        return self.workspace.runs_root

    def __init__(self, workspace: Workspace, sliced: bool = False) -> None:
        super().__init__()
        self.workspace = workspace
        self.form = FinetuneForm(workspace)
        self.run_path: Path | None = None  # the run the single-run tabs show
        self.test: TestRecord | None = None  # its test scores, when it is one run's to export
        self.mode: OneRun = OneRun()  # running or shown: one run, a comparison or a recipe search
        self.search_grid = (SEARCH_RATES, SEARCH_MAX_EPOCHS, SEARCH_SEEDS)  # its learning rates, epochs and seeds
        self.controller = TrainingController(self)
        self.controller.state_changed.connect(self._update_controls)
        self.controller.record.connect(self._on_record)
        self.controller.failed.connect(self._on_failed)
        self.controller.finished.connect(self._on_finished)
        self.message_bar = MessageBar()
        self.mistakes_task = TaskRunner(self)
        self.mistakes_task.succeeded.connect(lambda m: self.results.show_mistakes(m, tags_words(self.run_path)))
        self.mistakes_task.failed.connect(lambda m: self.message_bar.show_message(f"Could not list the mistakes: {m}"))
        self.form.example_failed.connect(
            lambda m: self.message_bar.show_message(f"Could not write the built-in example: {m}")
        )
        self.exporter = RunExporter(self, self.message_bar, lambda _: None)
        self.plots = FinetunePlots(sliced=sliced)
        self.construction = self.plots.construction  # the slow part: the rest is built at once
        self.hint = curves_hint()
        self.curves = QStackedWidget()  # the hint until the first record, then the plots
        self.curves.addWidget(self.hint)
        self.curves.addWidget(self.plots)
        self.comparison = ComparisonView()
        self.runs = FinetuneRunsList(workspace)
        self.runs.chosen.connect(self.show_run)
        self.runs.comparison_chosen.connect(self.show_comparison)
        self.runs.search_chosen.connect(self.show_search)
        self.runs.resume_button.clicked.connect(lambda: self.resume(self.runs.selected()))
        # one tab area under the form: the curves take all its height while training, the results after
        self.results = ResultsView(self.curves)
        self.try_it = ExplainedTryIt()  # the run the single-run tabs show, answering a text typed in (and why)
        self.results.addTab(self.try_it, "Try it")
        self.results.addTab(self.comparison, "Comparison")
        self.recipe = RecipeSearchView()
        self.recipe.train_chosen.connect(self.train_recipe)
        self.recipe.use_chosen.connect(self.form.use_recipe)
        self.results.addTab(self.recipe, "Recipe")
        self.results.addTab(self.runs, "Runs")
        self.results.setCurrentIndex(0)
        self.series_views = {  # where each series is shown, and how
            ComparisonRun: (self.comparison, self.comparison.show_comparison),
            SearchRun: (self.recipe, self.recipe.show_search),
        }
        self.row = row = ControlRow()
        self.controller.progress.connect(row.say_progress)
        self.start_button, self.compare_button, self.seeds = row.start_button, row.compare_button, row.seeds
        self.pause_button, self.stop_button, self.export_button = row.pause_button, row.stop_button, row.export_button
        self.progress_bar, self.status_label = row.progress_bar, row.status_label
        self.search_button = row.search_button
        self.start_button.clicked.connect(self.start)
        self.compare_button.clicked.connect(self.start_comparison)
        self.search_button.clicked.connect(self.start_search)
        self.pause_button.clicked.connect(self.controller.toggle_pause)
        self.stop_button.clicked.connect(self.controller.stop)
        self.export_button.clicked.connect(lambda: self.exporter.ask(self.run_path, self.runs_root))
        layout = QVBoxLayout(self)
        layout.addWidget(self.form)
        layout.addLayout(row)
        layout.addWidget(self.message_bar)
        layout.addWidget(self.results, 1)
        self.form.models_changed.connect(self._update_plan)
        self.form.model_combo.currentIndexChanged.connect(self._update_plan)
        self.seeds.valueChanged.connect(self._update_plan)
        for changed in (
            self.form.model_combo.currentIndexChanged,
            self.form.scratch_box.toggled,
            self.form.task_edit.textChanged,
        ):
            changed.connect(self._mark_recipe_stale)  # fmt: skip
        self.form.refresh_models()
        self.runs.refresh()
        self._update_controls(IDLE)

    def _update_plan(self) -> None:
        """Compare's tooltip says what it will run: the contenders × seeds."""
        self.compare_button.setToolTip(comparison_plan(self.form.model_combo.currentData(), self.seeds.value()))
        self.search_button.setToolTip(search_plan_line(self.form.model_combo.currentData(), *self.search_grid))
        self._update_controls(self.controller.state)

    # --- running ------------------------------------------------------------------------------------
    def _chosen(self) -> tuple[str | None, FinetuneOptions | None]:
        """The model and options the form gives, or (None, None) after saying what is wrong."""
        try:
            return self.form.spec(), self.form.options()
        except UserError as exc:  # an OptionError is one
            self.message_bar.show_message(str(exc), "warning")
            return None, None

    def start(self) -> None:
        spec, options = self._chosen()
        if spec is not None:
            run = OneRun(new_run_path(self.runs_root, "finetune"), spec, options)
            self._launch(run, "Reading the task and preparing the model…")

    def start_comparison(self) -> None:
        """Fine-tune the chosen model, its starting model and the same from scratch, once per seed, in a new folder
        of runs under the runs folder."""
        (spec, options), seeds = self._chosen(), self.seeds.value()
        if spec is not None:
            self.comparison.clear()
            comparison = ComparisonRun(new_run_path(self.runs_root, "compare"), spec, options, seeds)
            self._launch(comparison, "Reading the task and preparing the first contender…")

    def start_search(self) -> None:
        """Search the learning rate and epochs for the chosen model and task (the rest of the recipe as the form
        says), in a new folder under the runs folder; its table fills the Recipe tab as its runs end."""
        spec, options = self._chosen()
        if spec is not None:
            self.recipe.clear()
            plan = SearchPlan(str(spec), options, *self.search_grid)
            search = SearchRun(new_run_path(self.runs_root, "search"), plan)
            self._launch(search, "Reading the task and preparing the first candidate…")

    def train_recipe(self, found) -> None:
        """Fine-tune the searched model on the searched task with the search's chosen recipe, as its runs trained."""
        recipe = found.recipe() if found is not None else None
        if recipe is not None and not self.controller.busy:
            run = OneRun(new_run_path(self.runs_root, "finetune"), *recipe)
            self._launch(run, f"Training the chosen recipe of {found.path.name}…")

    def resume(self, path: Path | None) -> None:
        """Continue a stopped or interrupted fine-tuning run exactly where its latest checkpoint left it (a recipe
        search: with the run it stopped in, then the rest of its plan)."""
        if path is None:
            return
        if self.runs.is_search(path):  # read again: the message bar says why not when its record changed since
            found = self._read_back(SearchRun(path))
            if found is not None:
                self._launch(SearchRun(path, plan_of(found)), f"Reading the task and resuming {path.name}…")
            return
        self._launch(OneRun(path), f"Resuming {path.name}…")
        self.run_path = path
        self.results.set_subject(run_subject(path))
        self.try_it.set_run(path)

    def _launch(self, mode: OneRun, message: str) -> None:
        self._show_nothing()
        self.mode = mode
        self.results.setCurrentWidget(self.results.curves)
        self.progress_bar.setRange(0, 0)
        self.row.say(message)
        self.controller.start(mode.prepare)

    def _read_back(self, series):
        """The comparison or search `series` as its folder tells it, or None once the message bar has said why."""
        try:
            return series.read_back()
        except ReopenError as exc:
            self.message_bar.show_message(str(exc), "error")
            return None

    def _show_nothing(self, subject: str = "") -> None:
        """No run's curves, scores or mistakes: what a new run starts from; with a `subject` (a run, comparison or
        search reopened) each tab names it instead of saying how to start."""
        self.mistakes_task.cancel()
        self.message_bar.clear()
        self.plots.clear()
        self.results.clear()
        self.results.set_subject(subject)
        self.hint.setText("" if subject else CURVES_HINT)
        self.curves.setCurrentWidget(self.hint)
        self.test, self.run_path, self.mode = None, None, OneRun()
        self.try_it.set_run(None)

    def state(self) -> dict[str, object]:
        """What the window remembers of this panel between starts: its form."""
        return {"form": json.dumps(self.form.state())}

    def restore(self, state: dict[str, object]) -> None:
        """Return to a remembered `state`; a value of another kind, out of its range or no longer offered leaves
        its field as it is."""
        self.form.restore(json_object(state.get("form")))

    # --- reopening ----------------------------------------------------------------------------------
    def show_run(self, path: Path) -> None:
        """A fine-tuning run's curves and test scores, read from its folder, and then its mistakes; each tab and the
        status line name it."""
        if self.controller.busy:
            return  # the run training keeps the view
        try:
            records, test = RunDir(path).read_metrics(), last_test(path)
        except UNREADABLE as exc:
            self.message_bar.show_message(f"Could not read {path.name}: {exc}", "error")
            return
        self._show_nothing(run_subject(path))
        self.plots.load(records)
        self.curves.setCurrentWidget(self.plots if records else self.hint)
        self.run_path, self.test = path, test
        self.try_it.set_run(path)
        total = next((r.get("total_steps") for r in reversed(records) if r.get("type") == "started"), None)
        reached = max((r.get("step", 0) for r in records), default=0)
        self.row.show_progress(reached, total or reached)
        self.row.say(shown_run_line(path, test, total))
        if test is not None:
            self.results.show_test(test, tags_words(path))
            self.mistakes_task.start(lambda progress: wrong_test_examples(path, progress))
        self._update_controls(self.controller.state)

    def show_comparison(self, path: Path) -> None:
        """A comparison reopened from its folder: its table, plot and verdict from its runs' test records; the
        single-run tabs say they show none of its runs."""
        self._reopen(ComparisonRun(path), comparison_subject)

    def show_search(self, path: Path) -> None:
        """A recipe search reopened from its folder, on the Recipe tab; the single-run tabs say they show none of
        its runs."""
        self._reopen(SearchRun(path), search_subject)

    def _reopen(self, series: ComparisonRun | SearchRun, subject) -> None:
        found = None if self.controller.busy else self._read_back(series)
        if found is not None:
            self._show_nothing(subject(found))
            self.mode = series
            self._show_outcome(found)
            self._update_controls(self.controller.state)

    def _show_outcome(self, found=None) -> None:
        """The comparison or search on its tab as its folder tells it (read again unless `found`), the bar at its
        runs finished of those it makes; the single-run tabs keep its last run, named."""
        found = found if found is not None else self._read_back(self.mode)
        if found is not None:
            view, show = self.series_views[type(self.mode)]
            show(found)
            self._mark_recipe_stale()
            self.results.setCurrentWidget(view)
            self.row.show_progress(*self.mode.counts(found))
            self.row.say(self.mode.line(found))

    # --- following ----------------------------------------------------------------------------------
    def _on_record(self, item) -> None:
        mode, record = self.mode, self.mode.record_of(item)
        if self.curves.currentWidget() is self.hint:
            self.curves.setCurrentWidget(self.plots)
        if record.kind == "started":
            self._on_started(item, record)
        self.plots.add(record.kind, record.to_dict())
        if isinstance(record, (StepRecord, ValidationRecord, FinishedRecord)):
            mode.reached(record.step)  # a validation's: the bar showed the scoring's progress (`say_progress`)
            self.row.show_progress(*mode.progress)
        if isinstance(record, TestRecord):
            self.test = record
            self.results.show_test(record, tags_words(self.run_path))
            if not mode.series:
                self.results.setCurrentWidget(self.results.scores)
        elif isinstance(record, CheckpointRecord):
            self.form.refresh_models()
            self.try_it.refresh()  # the run's best weights may be these
        said = mode.said(item, record, self.controller.state == PAUSED, self.test)
        if said.warning:
            self.message_bar.show_message(said.warning, "warning")
        elif said.line:
            self.row.say(said.line, said.detail)
        found = mode.now() if mode.refreshes(record) else None
        if found is not None:  # the series' table with the runs finished so far
            self.series_views[type(mode)][1](found)
            self._mark_recipe_stale()

    def _on_started(self, item, record) -> None:
        """A run began (a comparison's next contender or seed): the single-run tabs are its from now on."""
        self.run_path, self.test = Path(record.run_dir), None
        if self.mode.series:
            self.plots.clear()  # each contender's (or candidate's) and seed's curves in turn
            self.results.clear()
        if record.step > 0:  # resumed: the curves it drew before, which the records from here continue
            self.plots.load(before_latest_start(self.run_path))
        self.results.set_subject(self.mode.started(item, self.run_path, record.step, record.total_steps))
        self.try_it.set_run(self.run_path)
        self.row.show_progress(*self.mode.progress)
        self.row.say(self.mode.starting_line(item, self.run_path))

    def _on_failed(self, message: str) -> None:
        self.message_bar.show_message(message, "error")
        if self.controller.state == PREPARING:  # no run began: the status line says why, not what it was doing
            self.row.say(f"Could not start: {message}")
        if self.mode.series:
            self.controller.stop()  # a contender that fails leaves the comparison without its scores

    def _on_finished(self) -> None:
        shown = self.run_path if self.test is not None else None
        if self.mode.series:
            self.test = None  # the series' runs are many: Export is for one run's
            self._show_outcome()
            if self.message_bar.level != "error":  # a failure stays said; its runs' notes become the series'
                note = self.mode.closing_note()
                self.message_bar.show_message(note, "warning") if note else self.message_bar.clear()
        else:
            self.row.show_progress(*self.mode.progress)  # where it ended: a stopped run's bar is not full
            if shown is not None:
                self.run_finished.emit(shown)
        if shown is not None:
            self.mistakes_task.start(lambda progress, run=shown: wrong_test_examples(run, progress))
        self.workspace.read_runs()  # the runs list follows the folder's news
        self._update_controls(IDLE)

    def _update_controls(self, state: str) -> None:
        idle, can_start = state == IDLE, self.form.model_combo.count() > 0
        self.row.set_state(state, can_start, self.test is not None)
        self.recipe.setEnabled(idle)
        self.runs.set_idle(idle)
        self.form.setEnabled(idle)
        if state == PAUSED:
            self.row.say(self.mode.step_line(paused=True))

    def _mark_recipe_stale(self) -> None:
        self.recipe.mark_stale(*self.form.searched())
