"""A recipe search as the Fine-tune panel shows it, live or when it ends: its name, state, model and task, the chosen
recipe in a sentence, and one table of the candidates (learning rate, the epoch each of its runs was best at, or
that none beat the majority class, the validation score's mean and spread over its seeds, the test score, each
seed's scores), the chosen row in bold. *Search recipe*, beside Start, starts one with the form's model, task and
recipe; *Train it* fine-tunes the searched model on the searched task with the chosen recipe, as the search's runs
trained (its schedule, early stopping and best weights, its first seed); *Use in the form* puts the learning rate
and the schedule's epochs in the form. Bound to its search: where the form names another model or task, the view
says so."""

from __future__ import annotations

import statistics

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QHeaderView, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from mlm_studio.core.finetune.recipe.result import RecipeSearch, better_half_size, epochs_shown
from mlm_studio.ui.panels.finetune.results import cell, read_only_table
from mlm_studio.ui.widgets.elided_label import ElidedLabel

NO_SEARCH = (
    "Search recipe fine-tunes the form's model on its task with each of several learning rates (the rest of the "
    "recipe as the form says), evaluating every epoch and stopping early, then the better half again with more "
    "seeds; the validation scores appear here, with the recipe they choose."
)
COLUMNS = ("learning rate", "best epochs", "validation", "± sd", "test", "per seed (validation / test)")


def search_plan_line(model: str | None, rates: tuple[float, ...], max_epochs: int, seeds: int) -> str:
    """What Search recipe will run, said before it does."""
    if not model:
        return "Search the learning rate and epochs on the validation split: choose a model first"
    runs = len(rates) + better_half_size(len(rates)) * (seeds - 1)
    return (
        f"Fine-tune with each learning rate of {', '.join(f'{rate:g}' for rate in rates)}, up to {max_epochs} epochs "
        f"with early stopping, then the better half with {seeds - 1} more seed(s): {runs} runs, the rest of the recipe "
        "as in the form; the best mean validation score chooses the recipe"
    )


class RecipeSearchView(QWidget):
    """One search's title, chosen recipe, candidates' table and the buttons that use the chosen recipe."""

    train_chosen = Signal(object)  # the RecipeSearch whose chosen recipe to train
    use_chosen = Signal(float, int)  # its learning rate and schedule's epochs, for the form

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.shown: RecipeSearch | None = None
        self.title = ElidedLabel()
        bold = self.title.font()
        bold.setBold(True)
        self.title.setFont(bold)
        self.verdict = QLabel(NO_SEARCH)
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stale = QLabel()
        self.stale.setWordWrap(True)
        self.table = read_only_table(list(COLUMNS))
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.train_button = QPushButton("Train it")
        self.train_button.setToolTip(
            "Fine-tune the searched model on the searched task with the chosen recipe, as the search's runs trained: "
            "its learning rate over the same schedule, stopped early with the best weights kept, the first seed"
        )
        self.train_button.clicked.connect(lambda: self.train_chosen.emit(self.shown))
        self.use_button = QPushButton("Use in the form")
        self.use_button.setToolTip("Put the chosen learning rate and the schedule's epochs in the form's recipe")
        self.use_button.clicked.connect(self._use)
        buttons = QHBoxLayout()
        buttons.addWidget(self.train_button)
        buttons.addWidget(self.use_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.verdict)
        layout.addWidget(self.stale)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        self.clear()

    def clear(self) -> None:
        self.shown = None
        self.title.setText("")
        self.title.hide()
        self.verdict.setText(NO_SEARCH)
        self.stale.hide()
        self.table.setRowCount(0)
        self._update_buttons()

    def show_search(self, found: RecipeSearch) -> None:
        """A search as its folder tells it: its state, model and task, the chosen recipe once every run has
        finished, and each candidate's scores over the seeds of its runs that finished."""
        self.shown = found
        self.title.setText(f"Recipe search {found.path.name}: {found.state} — {found.model_name} on {found.task}")
        self.title.show()
        self.verdict.setText(found.verdict)
        name = found.score_name
        for column, header in enumerate(
            ("learning rate", COLUMNS[1], f"validation {name}", "± sd", f"test {name}", COLUMNS[-1])
        ):
            self.table.horizontalHeaderItem(column).setText(header)
        chosen = found.chosen
        self.table.setRowCount(len(found.candidates))
        for row, candidate in enumerate(found.candidates):
            scored = bool(candidate.trials)
            values = [
                f"{candidate.learning_rate:g}",
                epochs_shown(candidate),
                f"{candidate.mean:.1%}" if scored else "–",
                f"± {candidate.spread:.1%}" if candidate.spread is not None else "–",
                f"{statistics.fmean(candidate.test):.1%}" if scored else "–",
                "\n".join(
                    f"seed {t.seed}: {t.validation:.1%} / {t.test:.1%}{'' if t.learned else ' (majority)'}"
                    for t in candidate.trials
                ),
            ]
            best = chosen is not None and candidate.learning_rate == chosen.learning_rate
            for column, value in enumerate(values):
                item = cell(value, 0 < column < 5)
                if best:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                    item.setToolTip("The chosen recipe: the best mean validation score")
                self.table.setItem(row, column, item)
        self._update_buttons()

    def mark_stale(self, model: str | None, task: str) -> None:
        """Say so when the form names another model or task file than the search's (its results stay its)."""
        found = self.shown
        if found is None:
            self.stale.hide()
            return
        if model == found.model and task == str(found.plan.train.path):
            self.stale.hide()
            return
        self.stale.setText(
            f"The form now names another model or task: this search was of {found.model_name} on {found.task}, and "
            "Train it trains that."
        )
        self.stale.show()

    def _use(self) -> None:
        chosen = self.shown.chosen if self.shown is not None else None
        if chosen is not None:
            self.use_chosen.emit(chosen.learning_rate, self.shown.plan.max_epochs)

    def _update_buttons(self) -> None:
        ready = self.shown is not None and self.shown.chosen is not None
        self.train_button.setEnabled(ready)
        self.use_button.setEnabled(ready)
