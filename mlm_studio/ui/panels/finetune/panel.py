"""The Fine-tune panel: a model (a run, a Hugging Face folder, or either's shape from scratch) fine-tuned on a
labelled file in the background, with live curves of the training loss and accuracy and the validation score, pause
and stop; when it ends, the test scores, confusion matrix and mistakes (results.py), and the classifier exported.
Compare fine-tunes the model against its starting model and the same from scratch over several seeds
(comparison.py); Search recipe tries several learning rates on the validation split and shows the recipe they
choose (recipe.py); both are run and reopened by series.py; the Runs tab lists the fine-tuning runs, comparisons and
searches, shows a run's results, reopens a comparison or search and resumes a run or search (runs_list.py). Every
tab names the run it shows (subjects.py)."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from mlm_studio.core.errors import UserError
from mlm_studio.core.finetune.compare import Said
from mlm_studio.core.finetune.mistakes import wrong_test_examples
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.recipe.result import read_search
from mlm_studio.core.finetune.recipe.search import SearchPlan, Tried, plan_of
from mlm_studio.core.finetune.runs import before_latest_start, last_test
from mlm_studio.core.finetune.scores import main_score, score_field
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.finetune.tasks import SEARCH_MAX_EPOCHS, SEARCH_RATES, SEARCH_SEEDS
from mlm_studio.core.runs.records import (
    CheckpointRecord,
    FinishedRecord,
    PausedRecord,
    StepRecord,
    TestRecord,
    ValidationRecord,
    WarningRecord,
)
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.json_text import json_object
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.core.training.runs import new_run_path
from mlm_studio.ui.panels.finetune.comparison import ComparisonView
from mlm_studio.ui.panels.finetune.explained_try_it import ExplainedTryIt
from mlm_studio.ui.panels.finetune.form import FinetuneForm
from mlm_studio.ui.panels.finetune.plots import FinetunePlots
from mlm_studio.ui.panels.finetune.recipe import RecipeSearchView, search_plan_line, trial_subject
from mlm_studio.ui.panels.finetune.results import ResultsView
from mlm_studio.ui.panels.finetune.runs_list import FinetuneRunsList
from mlm_studio.ui.panels.finetune.series import UNREADABLE, RunSeries
from mlm_studio.ui.panels.finetune.subjects import (
    comparison_plan,
    contender_subject,
    finished_line,
    run_subject,
    shown_run_line,
)
from mlm_studio.ui.run_export import RunExporter
from mlm_studio.ui.tasks import TaskRunner
from mlm_studio.ui.trainer_thread import IDLE, PAUSED, PREPARING, RUNNING, TrainingController
from mlm_studio.ui.widgets.elided_label import ElidedLabel
from mlm_studio.ui.widgets.message_bar import MessageBar
from mlm_studio.ui.workspace import Workspace

SEEDS = 3  # a comparison's seeds by default: the fewest that give a spread
CURVES_HINT = (
    "The curves of a fine-tuning appear here while it trains: the training loss and accuracy, the validation score "
    "after each epoch, the learning rate, the gradient norm and the speed.\n\nChoose a model and a labelled task "
    "file above, then Start, or Compare to see whether pre-training helps: your model against the same architecture "
    "from scratch, over several seeds; Search recipe, on the Recipe tab, finds the learning rate and epochs."
)
SERIES = (Said, Tried)  # a record of one of a comparison's or a recipe search's runs


class FinetunePanel(RunSeries, QWidget):
    """Choose, fine-tune, read the outcome, export; compare and search recipes (series.py)."""

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
        self.compare_root: Path | None = None  # the comparison running or shown
        self.compare_runs, self.compare_started = 0, 0  # its runs, those begun
        self.search_root: Path | None = None  # the recipe search running
        self.search_grid = (SEARCH_RATES, SEARCH_MAX_EPOCHS, SEARCH_SEEDS)  # its learning rates, epochs and seeds
        self.controller = TrainingController(self)
        self.controller.state_changed.connect(self._update_controls)
        self.controller.progress.connect(self._on_preparing)
        self.controller.record.connect(self._on_record)
        self.controller.failed.connect(self._on_failed)
        self.controller.finished.connect(self._on_finished)
        self.message_bar = MessageBar()
        self.mistakes_task = TaskRunner(self)
        self.mistakes_task.succeeded.connect(self._on_mistakes)
        self.mistakes_task.failed.connect(lambda m: self.message_bar.show_message(f"Could not list the mistakes: {m}"))
        self.form.example_failed.connect(
            lambda m: self.message_bar.show_message(f"Could not write the built-in example: {m}")
        )
        self.exporter = RunExporter(self, self.message_bar, lambda _: None)
        self.plots = FinetunePlots(sliced=sliced)
        self.construction = self.plots.construction  # the slow part: the rest is built at once
        self.hint = QLabel(CURVES_HINT)
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setMargin(24)
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
        self.recipe.use_chosen.connect(self._use_recipe)
        self.results.addTab(self.recipe, "Recipe")
        self.results.addTab(self.runs, "Runs")
        self.results.setCurrentIndex(0)
        layout = QVBoxLayout(self)
        layout.addWidget(self.form)
        layout.addLayout(self._build_controls())
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

    # --- the form -----------------------------------------------------------------------------------
    def _build_controls(self) -> QHBoxLayout:
        self.start_button = QPushButton("Start")
        self.start_button.clicked.connect(self.start)
        self.compare_button = QPushButton("Compare")
        self.compare_button.clicked.connect(self.start_comparison)
        self.search_button = self.recipe.search_button  # on the Recipe tab: the row keeps the panel narrow
        self.search_button.clicked.connect(self.start_search)
        self.seeds = QSpinBox()
        self.seeds.setRange(SEEDS, 20)
        self.seeds.setValue(SEEDS)
        self.seeds.setSuffix(" seeds")
        self.seeds.setToolTip("The seeds each contender of a comparison is fine-tuned with (at least 3, for a spread)")
        self.pause_button = QPushButton("Pause")
        self.pause_button.clicked.connect(self.toggle_pause)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop after this step; the test examples are scored with the best weights")
        self.stop_button.clicked.connect(self.controller.stop)
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Write the fine-tuned classifier as a Hugging Face folder, with its labels")
        self.export_button.clicked.connect(lambda: self.exporter.ask(self.run_path, self.runs_root))
        self.progress_bar = QProgressBar()
        self.step, self.total_steps = 0, 1  # of the run training: what the bar and the status line say of it
        keep_room = self.progress_bar.sizePolicy()
        keep_room.setRetainSizeWhenHidden(True)  # shown once a run starts, it never widens the panel
        self.progress_bar.setSizePolicy(keep_room)
        self.status_label = ElidedLabel()  # never widens the panel: cut with "…", the whole line its tooltip
        row = QHBoxLayout()
        for button in (self.start_button, self.compare_button, self.seeds, self.pause_button, self.stop_button):
            row.addWidget(button)
        row.addWidget(self.export_button)
        row.addWidget(self.progress_bar, 1)
        row.addWidget(self.status_label, 2)
        return row

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
        if spec is None:
            return
        path = new_run_path(self.runs_root, "finetune")

        def prepare(progress, control, held):
            held.enter_context(RunLock(path))
            return prepare_finetuner(path, spec, options, control, progress=progress, pause_on_save_error=True)

        self._launch(prepare, "Reading the task and preparing the model…")

    def resume(self, path: Path | None) -> None:
        """Continue a stopped or interrupted fine-tuning run exactly where its latest checkpoint left it (a recipe
        search: with the run it stopped in, then the rest of its plan)."""
        if path is None:
            return
        if self.runs.is_search(path):  # read again: the message bar says why not when its record changed since

            def planned(folder: Path) -> SearchPlan | None:
                found = read_search(folder)
                return None if found is None else plan_of(found)

            plan = self._reopened(planned, path, "recipe search")
            if plan is not None:
                self._search(plan, path, f"resuming {path.name}")
            return

        def prepare(progress, control, held):
            held.enter_context(RunLock(path))
            return prepare_finetuner(path, control=control, progress=progress, pause_on_save_error=True)

        self._launch(prepare, f"Resuming {path.name}…")
        self.run_path = path
        self.results.set_subject(run_subject(path))
        self.try_it.set_run(path)

    def _launch(self, prepare, message: str, compare_root: Path | None = None) -> None:
        self._show_nothing()
        self.results.setCurrentWidget(self.results.curves)
        self.compare_root = compare_root
        self.step, self.total_steps = 0, 1
        self.progress_bar.setRange(0, 0)
        self._say(message)
        self.controller.start(prepare)

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
        self.test, self.run_path, self.compare_root, self.search_root = None, None, None, None
        self.try_it.set_run(None)

    def state(self) -> dict[str, object]:
        """What the window remembers of this panel between starts: its form."""
        return {"form": json.dumps(self.form.state())}

    def restore(self, state: dict[str, object]) -> None:
        """Return to a remembered `state`; a value of another kind, out of its range or no longer offered leaves
        its field as it is."""
        self.form.restore(json_object(state.get("form")))

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
        self.progress_bar.setRange(0, max(total or reached, 1))
        self.progress_bar.setValue(reached)
        self._say(shown_run_line(path, test, total))
        if test is not None:
            self.results.show_test(test, self._tagging())
            self.mistakes_task.start(lambda progress: wrong_test_examples(path, progress))
        self._update_controls(self.controller.state)

    def toggle_pause(self) -> None:
        if self.controller.state == RUNNING:
            self.controller.pause()
        elif self.controller.state == PAUSED:
            self.controller.resume()

    def _on_preparing(self, done: int, total: int, message: str) -> None:
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(done)
        self._say(message)

    def _on_record(self, item) -> None:
        record = item.record if isinstance(item, SERIES) else item
        if self.curves.currentWidget() is self.hint:
            self.curves.setCurrentWidget(self.plots)
        if record.kind == "started":
            self._on_started(item, record)
        self.plots.add(record.kind, record.to_dict())
        if isinstance(record, StepRecord):
            self._reached(record.step)
            self._say_step(self._who(item))
        elif isinstance(record, ValidationRecord):
            self._reached(record.step)  # the bar showed the scoring's progress (`_on_preparing`)
            name = score_field(record)[1]
            self._say(f"{self._who(item)}validation {name} {main_score(record):.1%} at step {record.step:,}")
            self.status_label.setToolTip(record.describe())  # with its loss and every score
        elif isinstance(record, (WarningRecord, PausedRecord)):
            self.message_bar.show_message(f"{self._who(item)}{record.message}", "warning")
        elif isinstance(record, TestRecord):
            self._on_test(item, record)
        elif isinstance(record, FinishedRecord):
            self._reached(record.step)
            self._say(self._who(item) + finished_line(record, self.total_steps, self.test))
            if isinstance(item, Said):
                self._refresh_comparison()
        elif isinstance(record, CheckpointRecord):
            self.form.refresh_models()
            self.try_it.refresh()  # the run's best weights may be these

    def _on_started(self, item, record) -> None:
        """A run began (a comparison's next contender or seed): the single-run tabs are its from now on."""
        self.run_path, self.test = Path(record.run_dir), None
        if isinstance(item, SERIES):
            self.plots.clear()  # each contender's (or candidate's) and seed's curves in turn
            self.results.clear()
            self.compare_started += 1
        if record.step > 0:  # resumed: the curves it drew before, which the records from here continue
            self.plots.load(before_latest_start(self.run_path))
        subject = contender_subject(item, self.run_path) if isinstance(item, Said) else run_subject(self.run_path)
        subject = trial_subject(item, self.run_path) if isinstance(item, Tried) else subject
        if isinstance(item, Tried):
            self._refresh_search()  # with the runs before this one
        self.results.set_subject(subject)
        self.try_it.set_run(self.run_path)
        self.step, self.total_steps = record.step, record.total_steps
        self._show_steps()
        self._say(f"{self._who(item)}Fine-tuning {self.run_path.name}")

    def _on_test(self, item, test: TestRecord) -> None:
        self.test = test
        self.results.show_test(test, self._tagging())
        if not isinstance(item, SERIES):
            self.results.setCurrentWidget(self.results.scores)

    def _say(self, text: str) -> None:
        """The status line; its whole text also as its tooltip, for when the window is too narrow for it."""
        self.status_label.setText(text)

    def _reached(self, step: int) -> None:
        self.step = step
        self._show_steps()

    def _show_steps(self) -> None:
        """The bar: the steps the run training has taken of its total."""
        self.progress_bar.setRange(0, max(self.total_steps, 1))
        self.progress_bar.setValue(self.step)

    def _say_step(self, who: str = "") -> None:
        """How far the run has come, and that it waits while paused."""
        step = "Paused after step" if self.controller.state == PAUSED else "step"
        self._say(f"{who}{step} {self.step:,} of {self.total_steps:,}")

    def _who(self, item) -> str:
        """`[contender, seed n, run i of N] ` for a comparison's record; nothing for a single run's."""
        if isinstance(item, Tried):
            return f"[lr {item.learning_rate:g}, seed {item.seed}, run {item.run} of {item.runs}] "
        if not isinstance(item, Said):
            return ""
        return f"[{item.contender.label}, seed {item.seed}, run {self.compare_started} of {self.compare_runs}] "

    def _on_failed(self, message: str) -> None:
        self.message_bar.show_message(message, "error")
        if self.controller.state == PREPARING:  # no run began: the status line says why, not what it was doing
            self._say(f"Could not start: {message}")
        if self.compare_root is not None or self.search_root is not None:
            self.controller.stop()  # a contender that fails leaves the comparison without its scores

    def _on_finished(self) -> None:
        shown = self.run_path if self.test is not None else None
        if self.compare_root is not None:
            self.test = None  # the comparison's runs are many: Export is for one run's
            self._finish_comparison()
        elif self.search_root is not None:
            self.test = None
            self._refresh_search(ended=True)
        else:
            self._show_steps()  # where it ended: a stopped run's bar is not full
            if shown is not None:
                self.run_finished.emit(shown)
        if shown is not None:
            self.mistakes_task.start(lambda progress, run=shown: wrong_test_examples(run, progress))
        self.workspace.read_runs()  # the runs list follows the folder's news
        self._update_controls(IDLE)

    def _on_mistakes(self, mistakes) -> None:
        self.results.show_mistakes(mistakes, self._tagging())

    def _tagging(self) -> bool:
        """Whether the shown run tags words (with entity tags or not) rather than labelling texts."""
        if self.run_path is None:
            return False
        try:
            task = RunDir(self.run_path).task
        except CheckpointError:  # a task.json damaged since the run was shown: its mistakes are said as a text's
            return False
        return task is not None and task.kind == "tokens"

    def _update_controls(self, state: str) -> None:
        idle = state == IDLE
        self.start_button.setEnabled(idle and self.form.model_combo.count() > 0)
        self.compare_button.setEnabled(idle and self.form.model_combo.count() > 0)
        self.search_button.setEnabled(idle and self.form.model_combo.count() > 0)
        self.recipe.setEnabled(idle)
        self.seeds.setEnabled(idle)
        self.runs.set_idle(idle)
        self.pause_button.setEnabled(state in (RUNNING, PAUSED))
        self.pause_button.setText("Resume" if state == PAUSED else "Pause")
        if state == PAUSED:
            self._say_step()
        self.stop_button.setEnabled(not idle)
        self.progress_bar.setVisible(not idle or self.progress_bar.value() > 0)  # an empty idle bar reads as a field
        self.export_button.setEnabled(idle and self.test is not None)
        self.form.setEnabled(idle)
