"""The Fine-tune panel's series of runs: a comparison (the model, its starting model and the same from scratch, over
several seeds; comparison.py shows it) and a recipe search (several learning rates on the validation split;
recipe.py shows it), each started, followed as its runs end, reopened from its folder and, for a search, continued.
A part of the panel (`FinetunePanel` is made of it): it works on the panel's views, controller and status line."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from types import SimpleNamespace

from mlm_studio.core.finetune.compare import compare, contenders
from mlm_studio.core.finetune.comparisons import Comparison, read_comparison
from mlm_studio.core.finetune.recipe.result import read_search
from mlm_studio.core.finetune.recipe.search import SearchPlan, search
from mlm_studio.core.finetune.request import StartingModel
from mlm_studio.core.finetune.setup import prepare_finetuner
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.core.training.runs import new_run_path
from mlm_studio.ui.panels.finetune.subjects import comparison_subject, search_subject

UNREADABLE = (CheckpointError, OSError, TypeError, ValueError, KeyError)  # a damaged or half-written folder


class RunSeries:
    """Compare and Search recipe, and the comparisons and searches the Runs tab reopens."""

    def start_comparison(self) -> None:
        """Fine-tune the chosen model, its starting model and the same from scratch, once per seed, in a new folder
        of runs under the runs folder."""
        (spec, options), seeds = self._chosen(), self.seeds.value()
        if spec is None:
            return
        root = new_run_path(self.runs_root, "compare")

        def prepare(progress, control, held):
            held.enter_context(RunLock(root))
            return SimpleNamespace(run=partial(compare, spec, options, root, seeds, control))

        self.comparison.clear()
        self._launch(prepare, "Reading the task and preparing the first contender…", root)
        self.compare_runs, self.compare_started = len(contenders(spec)) * seeds, 0

    def start_search(self) -> None:
        """Search the learning rate and epochs for the chosen model and task (the rest of the recipe as the form
        says), in a new folder under the runs folder; its table fills the Recipe tab as its runs end."""
        spec, options = self._chosen()
        if spec is not None:
            self.recipe.clear()
            plan = SearchPlan(str(spec), options, *self.search_grid)
            self._search(plan, new_run_path(self.runs_root, "search"), "preparing the first candidate")

    def _search(self, plan: SearchPlan, root: Path, what: str) -> None:
        def prepare(progress, control, held):
            held.enter_context(RunLock(root))
            return SimpleNamespace(run=partial(search, plan, root, control))

        self._launch(prepare, f"Reading the task and {what}…")
        self.search_root = root

    def show_comparison(self, path: Path) -> None:
        """A comparison reopened from its folder: its table, plot and verdict from its runs' test records; the
        single-run tabs say they show none of its runs."""
        comparison = None if self.controller.busy else self._reopened(read_comparison, path, "comparison")
        if comparison is None:
            return
        self._show_nothing(comparison_subject(comparison))
        self.compare_root = path
        self._show_comparison(comparison)
        self.results.setCurrentWidget(self.comparison)
        self._update_controls(self.controller.state)

    def _reopened(self, read, path: Path, what: str):
        """`read(path)`: the comparison or search in that folder, or None once the message bar has said why not."""
        try:
            found = read(path)
        except UNREADABLE as exc:
            self.message_bar.show_message(f"Could not read the {what} {path.name}: {exc}", "error")
            return None
        if found is None:
            self.message_bar.show_message(f"{path.name} holds no {what} any more", "error")
        return found

    def _show_comparison(self, comparison: Comparison) -> None:
        self.comparison.show_comparison(comparison)
        self.progress_bar.setRange(0, max(comparison.expected, 1))
        self.progress_bar.setValue(len(comparison.counted))
        self._say(f"Comparison {comparison.path.name}: {comparison.state}")

    def _refresh_comparison(self) -> None:
        """The comparison running, as its folder tells it now."""
        try:
            comparison = read_comparison(self.compare_root)
        except UNREADABLE:
            return  # a run folder being written: the next contender's end reads it again
        if comparison is not None:
            self.comparison.show_comparison(comparison)

    def _finish_comparison(self) -> None:
        """The comparison as its folder tells it, on its tab; the single-run tabs keep its last run, named."""
        try:
            comparison = read_comparison(self.compare_root)
        except UNREADABLE as exc:
            self.message_bar.show_message(f"Could not read the comparison {self.compare_root.name}: {exc}", "error")
            return
        if comparison is not None:
            self._show_comparison(comparison)
            self.results.setCurrentWidget(self.comparison)

    def show_search(self, path: Path) -> None:
        """A recipe search reopened from its folder, on the Recipe tab; the single-run tabs say they show none of
        its runs."""
        found = None if self.controller.busy else self._reopened(read_search, path, "recipe search")
        if found is None:
            return
        self._show_nothing(search_subject(found))
        self._show_search(found)
        self._update_controls(self.controller.state)

    def _show_search(self, found) -> None:
        """A search on the Recipe tab, the bar at the runs it has finished of those it makes."""
        self.recipe.show_search(found)
        self._mark_recipe_stale()
        self.results.setCurrentWidget(self.recipe)
        self.progress_bar.setRange(0, max(found.expected, 1))
        self.progress_bar.setValue(found.counted)
        left = "" if found.complete else "; Resume on the Runs tab continues it"
        self._say(f"Recipe search {found.path.name}: {found.state}{left}")

    def _refresh_search(self, ended: bool = False) -> None:
        """The recipe search running (or `ended`: with its bar and what continues it), as its folder tells it now."""
        try:
            found = read_search(self.search_root)
        except UNREADABLE:
            return  # a run folder being written: the next run's end reads it again
        if found is not None and ended:
            self._show_search(found)
        elif found is not None:
            self.recipe.show_search(found)
            self._mark_recipe_stale()
            self._say(f"Recipe search {found.path.name}: {found.state}")

    def train_recipe(self, found) -> None:
        """Fine-tune the searched model on the searched task with the search's chosen recipe, as its runs trained."""
        recipe = found.recipe() if found is not None else None
        if recipe is None or self.controller.busy:
            return
        spec, options = recipe
        path = new_run_path(self.runs_root, "finetune")

        def prepare(progress, control, held):
            held.enter_context(RunLock(path))
            return prepare_finetuner(path, spec, options, control, progress=progress, pause_on_save_error=True)

        self._launch(prepare, f"Training the chosen recipe of {found.path.name}…")

    def _use_recipe(self, learning_rate: float, epochs: int) -> None:
        self.form.learning_rate.setValue(learning_rate)
        self.form.epochs.setValue(epochs)

    def _mark_recipe_stale(self) -> None:
        model = self.form.model_combo.currentData()
        spec = str(StartingModel(model, self.form.scratch_box.isChecked())) if model else None
        task = self.form.task_edit.text().strip()
        self.recipe.mark_stale(spec, str(Path(task).resolve()) if task else "")
