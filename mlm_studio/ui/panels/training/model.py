"""The Training panel's rules without Qt: whether a run can start and why not, what Start, Pause and Stop offer,
what the Runs tab's buttons can do with the selected run, and the run being trained as its records arrive (how far
its preparation got, its curves kept for when it is shown again, its last step and evaluation, its time left, and
what is said of it while another run is shown).

The panel forwards the trainer's state and records as explicit transitions (`launch`, `set_phase`, `preparing`,
`prepared`, `record`, `finished`) and renders what the model says; nothing here draws."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.durations import Eta
from mlm_studio.core.errors import UserError
from mlm_studio.core.runs.control import IDLE, PAUSED, PREPARING, RUNNING, STOPPING
from mlm_studio.core.runs.history import RunSummary, nothing_left, same_run
from mlm_studio.core.runs.records import (
    EvalRecord,
    FinishedRecord,
    PausedRecord,
    StartedRecord,
    StepRecord,
    WarningRecord,
)
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.training.probes import load_probes
from mlm_studio.core.training.request import Note
from mlm_studio.ui.panels.training.texts import finished_message, hints

RUN_ACTS = ("open", "overlay", "resume", "export", "branch")  # the Runs tab's buttons for the selected run


@dataclass(frozen=True)
class Controls:
    """What Start, Pause and Stop offer, each with its tooltip; `reason`: why Start cannot, said beside the buttons
    while idle ("" for nothing to say)."""

    start: bool
    start_tip: str
    reason: str
    pause: bool
    pause_text: str
    pause_tip: str
    stop: bool
    stop_tip: str


class TrainingModel:
    """The trainer's phase, the configuration's error and the run being prepared or trained (None while idle)."""

    def __init__(self) -> None:
        self.phase = IDLE
        self.config_error = ""  # the Configuration panel's, said while it stops a start
        self.training: Path | None = None
        self.launched = ""  # what its launch said ("Starting …")
        self.probes = 0  # how many cloze probes it scores
        self.notes: list[Note] = []  # what its resolution says (appended on the trainer's thread), said once started
        self.preparation: tuple[int, int, str] | None = None  # how far its preparation got
        self.started: StartedRecord | None = None
        self.eta: Eta | None = None
        self.records: list[dict] = []  # its records, to draw again when it is shown again
        self.last_step: StepRecord | None = None
        self.last_eval: EvalRecord | None = None  # for its finishing message

    # --- whether a run can start, and the buttons ---------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.phase != IDLE

    def refusal(self, corpus: bool, tokenizer: bool) -> str:
        """Why Start cannot train a new run with a `corpus` loaded (or not) and a `tokenizer` ready (or not); ""
        where it can."""
        if self.busy:
            return "A training is already running."
        if not corpus:
            return "Load a corpus first (Corpus panel)."
        if not tokenizer:
            return "Train or load a tokenizer first (Corpus panel)."
        if self.config_error:
            return f"Fix the configuration first: {self.config_error}."
        return ""

    def controls(self, refusal: str) -> Controls:
        """The buttons in this phase, Start refused for `refusal` (from `refusal()`)."""
        phase = self.phase
        name = self.training.name if self.training is not None else "the training run"
        pause = "Resume" if phase == PAUSED else "Pause"
        return Controls(
            start=not refusal,
            start_tip=refusal or "Train a new run with the current configuration (Ctrl+R)",
            reason=refusal if phase == IDLE else "",
            pause=phase in (RUNNING, PAUSED),
            pause_text=pause,
            pause_tip=f"{pause} {name} (Ctrl+P)",
            stop=phase in (PREPARING, RUNNING, PAUSED),
            stop_tip=f"Stop {name} after this step and save a checkpoint (Ctrl+.)",
        )

    def why_not(
        self, path: Path | None, summary: RunSummary | None, shown: Path | None, exporting: bool
    ) -> dict[str, str]:
        """By Runs tab button (`RUN_ACTS`), why it cannot act on the selected run `path` ("" where it can):
        `summary` is what the runs table read of it, `shown` the run shown, `exporting` whether an export runs."""
        if path is None:
            return dict.fromkeys(RUN_ACTS, "Select a run first")
        name, one_at_a_time = path.name, "A training is running: one at a time"
        no_checkpoint = f"{name} has no checkpoint yet" if summary is None or summary.checkpoint_step == 0 else ""
        if self.busy:
            resume = one_at_a_time
        elif summary is not None and (path / "config.toml").is_file() and nothing_left(RunDir(path), summary):
            resume = f"{name} is at the end of its training: nothing is left to train"
        else:
            resume = no_checkpoint
        return {
            "open": "",
            "overlay": f"{name} is the run shown" if same_run(path, shown) else "",
            "resume": resume,
            "export": "An export is running" if exporting else no_checkpoint,
            "branch": one_at_a_time if self.busy else no_checkpoint,
        }

    # --- the run being trained: transitions ---------------------------------------------------------
    def set_phase(self, phase: str) -> None:
        self.phase = phase

    def launch(self, path: Path, said: str, probes: int) -> None:
        """`path` is to be trained from now on, scoring `probes` probes: nothing of an earlier run is kept."""
        self.training, self.launched, self.probes = path, said, probes
        self.preparation = self.started = self.eta = self.last_step = self.last_eval = None
        self.records = []
        self.notes.clear()

    def preparing(self, done: int, total: int, message: str) -> None:
        self.preparation = (done, total, message)

    def prepared(self, started: StartedRecord, earlier: list[dict]) -> Path:
        """The run began at `started.step`, after its `earlier` records (a resumed or branched run's, up to that
        step): they are its curves so far, and its time left is counted from their last elapsed time. Returns its
        folder as the trainer names it."""
        self.started = started
        self.training = Path(started.run_dir)
        self.records = list(earlier)
        first_elapsed = max((r.get("elapsed", 0.0) for r in earlier), default=0.0)
        self.eta = Eta(started.step, started.total_steps, started.time_budget, first_elapsed)
        return self.training

    def record(self, record) -> None:
        """Keep the training's `record`."""
        self.records.append(record.to_dict())
        if isinstance(record, StepRecord):
            self.last_step = record
        elif isinstance(record, EvalRecord):
            self.last_eval = record

    def finished(self) -> Path | None:
        """The training ended (or never began): returns the run it was."""
        training, self.training = self.training, None
        self.started = self.last_step = self.preparation = self.eta = None
        return training

    def take_notes(self) -> list[Note]:
        """What the resolution said, once: said when the run has started."""
        notes, self.notes[:] = list(self.notes), []
        return notes

    # --- what is said of it -------------------------------------------------------------------------
    def is_training(self, path: Path | None) -> bool:
        return same_run(path, self.training)

    def said_of(self, record, shown: bool) -> tuple[str, str]:
        """What the message bar says of `record`, and at what level ("" for nothing): a pause or a warning, named
        by its run where that run is not `shown`; the end, with the last validation figures."""
        if isinstance(record, (PausedRecord, WarningRecord)):
            return (record.message if shown else f"{self.training.name}: {record.message}"), "warning"
        if isinstance(record, FinishedRecord):
            return finished_message(record, self.training.name, self.last_eval), "info"
        return "", ""

    def hints(self, shown: Path | None, probes_set: int) -> dict[str, str]:
        """By plot, what it says while empty, `shown` being the run shown: for none, the `probes_set` on the Probes
        tab to be scored; for the run being trained, its probes to come; for another, its probes never scored (as
        its folder lists them: none where the list cannot be read)."""
        live = self.is_training(shown)
        if shown is None:
            probes = probes_set
        elif live:
            probes = self.probes
        else:
            try:
                probes = len(load_probes(shown))
            except (UserError, OSError):
                probes = 0
        return hints(shown, live, probes)

    def elsewhere(self) -> str:
        """How far the training is and which run it is, said while another run is shown ("" when none trains): the
        progress first, where a narrow header still shows it."""
        if self.training is None:
            return ""
        if self.started is None:
            return f"Training: preparing · {self.training.name}"
        step = self.last_step.step if self.last_step is not None else self.started.step
        total = f" of {self.started.total_steps:,}" if self.started.time_budget <= 0 else ""
        return f"Training: {self.phase}, step {step:,}{total} · {self.training.name}"

    def seconds_left(self) -> float:
        """The time the training still needs after its last step (0 before one)."""
        record = self.last_step
        return self.eta.seconds_left(record.step, record.elapsed) if record is not None and self.eta else 0.0

    def live_row(self) -> tuple[Path, str, int, int | None, float | None]:
        """The Runs table's row of the run being trained, once started: its folder, state, step, tokens seen and
        time so far (the last two unknown before its first step here)."""
        last = self.last_step
        step = last.step if last is not None else self.started.step
        tokens, elapsed = (last.tokens_seen, last.elapsed) if last is not None else (None, None)
        return Path(self.started.run_dir), self.phase, step, tokens, elapsed

    @property
    def counts_seconds(self) -> bool:
        """Whether its bar counts its time budget's seconds rather than steps."""
        return self.started is not None and self.started.time_budget > 0

    @property
    def paused(self) -> bool:
        return self.phase == PAUSED

    @property
    def stopping(self) -> bool:
        return self.phase == STOPPING
