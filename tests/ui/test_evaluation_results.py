"""The Evaluation panel's rules without a window (results.py imports no Qt: an import-linter contract keeps it so):
which results belong to which model, checkpoint and comparison; what a change of choice or corpus clears, stops and
says; which task's end is news; what the buttons offer. The panel clicked through is tests/ui/test_evaluation_*.py."""

from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.data.corpus import SourceReport
from mlm_studio.ui.panels.evaluation.results import (
    COMPARE_NEXT,
    NO_MODEL_TIP,
    NOT_A_RUN,
    SILENCE,
    Choice,
    Results,
    Said,
    Task,
    Update,
    offered,
    reported,
)

LATE = Choice("runs/late", None, None, "late, latest checkpoint")
LATE_40 = Choice("runs/late", 40, None, "late, checkpoint-40")
EARLY = Choice("runs/early", None, None, "early, latest checkpoint")
LATE_BESIDE_EARLY = Choice("runs/late", None, "runs/early", "late, latest checkpoint", "early")
LATE_BESIDE_40 = Choice("runs/late", None, "runs/late/checkpoint-40", "late, latest checkpoint", "checkpoint-40")
IMPORTED = Choice("models/bert", None, None, "Hugging Face: bert", imported=True)


@dataclass(frozen=True)
class Scored:
    """What the rules read of a scored model: its title (the diagnosis and the blocks are carried, never read)."""

    title: str


def evaluated(results: Results, choice: Choice) -> bool:
    """Evaluate pressed for `choice`, and its scores back."""
    results.ask(Task.EVALUATE, choice)
    compared = (Scored(choice.other_name), "its diagnosis", "its blocks") if choice.other else None
    return results.evaluated(choice, (Scored(choice.name), "a diagnosis", "blocks"), compared)


def shown_for(choice: Choice) -> Results:
    results = Results()
    results.choose(choice)
    assert evaluated(results, choice)
    return results


def test_before_any_evaluation_the_line_says_what_evaluate_would_score():
    results = Results()
    assert results.line() == ""  # nothing chosen yet
    assert results.choose(Choice(None, None, None)) == Update(said=SILENCE) and results.line() == ""
    results.choose(LATE_BESIDE_EARLY)
    assert results.line() == "Nothing evaluated yet: press Evaluate to score late, latest checkpoint beside early."


def test_scores_for_the_choice_made_are_shown_and_named():
    results = shown_for(LATE_BESIDE_EARLY)
    assert results.shown == LATE_BESIDE_EARLY and results.asked == {}
    assert (results.subject.title, results.diagnosis, results.blocks) == ("late, latest checkpoint", "a diagnosis",
                                                                           "blocks")  # fmt: skip
    assert (results.other.title, results.other_diagnosis) == ("early", "its diagnosis")
    assert results.line() == "Shown: late, latest checkpoint beside early."


def test_another_model_clears_every_result_and_the_line_names_those_that_left():
    results = shown_for(LATE)
    results.probed([("late", "its probe")])
    update = results.choose(EARLY)
    assert update == Update(forget=True, said=SILENCE)  # every view clears and what was said of `late` goes
    assert results.subject is results.diagnosis is results.blocks is results.shown is None
    assert results.task_results == []
    assert results.line() == "Results of late, latest checkpoint cleared — press Evaluate for early, latest checkpoint."


def test_another_checkpoint_of_the_same_run_is_another_model():
    results = shown_for(LATE)
    assert results.choose(LATE_40).forget and results.subject is None
    assert results.line().endswith("press Evaluate for late, checkpoint-40.")


def test_the_same_choice_read_again_changes_nothing():
    """The lists are read again when a run writes a checkpoint: the same model, under its names of now, keeps its
    results and what was said of it."""
    results = shown_for(LATE)
    assert results.choose(Choice("runs/late", None, None, "Current run: late")) == Update()
    assert results.subject.title == "late, latest checkpoint" and results.line() == "Shown: late, latest checkpoint."


def test_another_comparison_drops_the_compared_model_and_keeps_the_evaluated_one():
    results = shown_for(LATE_BESIDE_EARLY)
    update = results.choose(LATE_BESIDE_40)
    assert update == Update(forget_comparison=True, said=Said(COMPARE_NEXT))
    assert results.other is results.other_diagnosis is None and results.subject.title == "late, latest checkpoint"
    assert results.shown == LATE and results.shown.other_name == ""
    assert results.line() == "Shown: late, latest checkpoint alone — press Evaluate to compare it with checkpoint-40."
    assert results.choose(LATE) == Update(said=SILENCE)  # no comparison chosen: the one shown is right as it is
    assert results.line() == "Shown: late, latest checkpoint."


def test_no_comparison_chosen_any_more_leaves_the_evaluated_model_alone_without_a_word():
    results = shown_for(LATE_BESIDE_EARLY)
    assert results.choose(LATE) == Update(forget_comparison=True, said=SILENCE)
    assert results.line() == "Shown: late, latest checkpoint."


def test_a_task_asked_for_another_choice_stops_without_a_word_and_its_result_is_not_shown():
    results = Results()
    results.choose(LATE)
    results.ask(Task.EVALUATE, LATE)
    results.ask(Task.PROBE, LATE)
    update = results.choose(EARLY)
    assert set(update.stop) == {Task.EVALUATE, Task.PROBE}
    assert results.ended(Task.PROBE) is None  # its cancel, asked by the rules, is not news
    late = (Scored("late"), "a diagnosis", "blocks")
    assert not results.evaluated(LATE, late, None)  # it ended before its cancel arrived: still not shown
    assert results.subject is None and results.asked == {} and results.dropped == set()


def test_scores_computed_for_a_choice_left_meanwhile_are_never_shown_under_another_name():
    results = Results()
    results.choose(LATE)
    results.ask(Task.EVALUATE, LATE)
    results.choose(LATE_BESIDE_EARLY)  # the task is stopped; its result was already on its way
    assert not results.evaluated(LATE, (Scored("late"), "a diagnosis", "blocks"), None)
    assert results.shown is None


def test_every_checkpoint_of_a_run_serves_any_of_its_checkpoints_and_comparisons():
    results = Results()
    results.choose(LATE)
    results.ask(Task.TRACK, LATE)
    assert results.choose(LATE_40).stop == () and results.choose(LATE_BESIDE_EARLY).stop == ()
    assert results.tracked("runs/late", ["its scores"]) and results.scores == ["its scores"]
    assert results.choose(LATE_40) == Update(said=SILENCE)  # the curves stay with their run
    assert results.tracked_run == "runs/late"


def test_another_run_chosen_stops_its_scoring_and_takes_its_curves_away():
    results = Results()
    results.choose(LATE)
    assert results.tracked("runs/late", ["its scores"])
    results.ask(Task.TRACK, LATE)
    update = results.choose(EARLY)
    assert update.stop == (Task.TRACK,) and update.forget_series
    assert results.tracked_run is None and results.scores == []
    assert not results.tracked("runs/late", ["scores of late"]) and results.scores == []


def test_curves_of_a_run_no_longer_chosen_are_not_drawn():
    results = Results()
    results.choose(EARLY)
    assert not results.tracked("runs/late", ["scores of late"]) and results.tracked_run is None


def test_another_corpus_stops_the_contexts_and_clears_the_views_that_read_it():
    results = shown_for(LATE)
    results.ask(Task.MAP, LATE)
    update = results.corpus_changed()
    assert update == Update(stop=(Task.MAP,), forget_corpus_views=True)  # a run's blocks are its own: they stay
    assert results.subject.title == "late, latest checkpoint"
    assert not results.mapped()  # the contexts of the corpus before arrive: not shown


def test_another_corpus_clears_an_imported_models_results_which_were_scored_on_the_one_before():
    results = shown_for(IMPORTED)
    assert results.corpus_changed() == Update(forget=True, forget_corpus_views=True)
    assert results.subject is None
    assert results.line() == (
        "Results of Hugging Face: bert (on the corpus before) cleared — press Evaluate for Hugging Face: bert."
    )


def test_a_failure_or_a_cancel_the_user_asked_for_is_said():
    results = Results()
    results.choose(LATE)
    results.ask(Task.EVALUATE, LATE)
    assert results.ended(Task.EVALUATE, "checkpoint-40 is damaged") == Said("checkpoint-40 is damaged", "error")
    results.ask(Task.PROBE, LATE)
    assert results.ended(Task.PROBE) == Said("Cancelled.")
    assert results.asked == {}


def test_a_failure_of_a_task_stopped_for_another_choice_is_not_said():
    results = Results()
    results.choose(LATE)
    results.ask(Task.EVALUATE, LATE)
    results.choose(EARLY)
    assert results.ended(Task.EVALUATE, "late's weights could not be read") is None


def test_a_task_asked_again_after_it_was_stopped_is_news_again():
    results = Results()
    results.choose(LATE)
    results.ask(Task.EVALUATE, LATE)
    results.choose(EARLY)  # stopped; its runner starts the new one in its place, the old one reports nothing
    assert evaluated(results, EARLY) and results.subject.title == "early, latest checkpoint"


def test_a_word_map_and_a_probe_asked_for_the_models_shown_are_shown():
    results = shown_for(LATE)
    results.ask(Task.MAP, LATE)
    assert results.mapped()
    results.ask(Task.PROBE, LATE)
    assert results.probed([("late", "its probe")]) and results.task_results == [("late", "its probe")]
    assert evaluated(results, LATE) and results.task_results == []  # evaluated again: the probe was of before


def test_a_probe_of_models_no_longer_shown_is_not_shown():
    results = shown_for(LATE)
    results.ask(Task.PROBE, LATE)
    results.choose(EARLY)
    assert not results.probed([("late", "its probe")]) and results.task_results == []


def test_the_subjects_shown_are_the_evaluated_model_then_the_compared_one():
    assert Results().evaluated_subjects == [] and Results().names() == ""
    results = shown_for(LATE_BESIDE_EARLY)
    assert [s.title for s in results.evaluated_subjects] == ["late, latest checkpoint", "early"]
    assert results.names() == "late, latest checkpoint beside early"


def test_evaluate_needs_a_model_and_every_checkpoint_a_run_both_that_nothing_runs():
    nothing = offered(Choice(None, None, None), busy=False)
    assert (nothing.evaluate, nothing.every) == (False, False)
    assert nothing.evaluate_tip == nothing.every_tip == NO_MODEL_TIP
    run = offered(LATE, busy=False)
    assert (run.evaluate, run.every) == (True, True) and run.evaluate_tip.startswith("Score the chosen model")
    imported = offered(IMPORTED, busy=False)
    assert (imported.evaluate, imported.every, imported.every_tip) == (True, False, NOT_A_RUN)
    busy = offered(LATE, busy=True)
    assert (busy.evaluate, busy.every) == (False, False) and busy.every_tip == run.every_tip


def test_a_task_files_lines_left_out_are_said_as_a_warning_beside_the_result():
    clean = SourceReport(Path("topics.csv"), "csv", True, documents=240)
    assert reported("Probed 240 labelled texts of topics.csv.", clean) == Said(
        "Probed 240 labelled texts of topics.csv."
    )
    assert reported("Scored 3 checkpoints of late.", None) == Said("Scored 3 checkpoints of late.")
    gapped = SourceReport(Path("gapped.csv"), "csv", True, encoding_note="read as latin-1", documents=239)
    said = reported("Probed 239 labelled texts of gapped.csv.", gapped)
    assert said == Said("Probed 239 labelled texts of gapped.csv.\nEncoding: read as latin-1", "warning")


def test_a_choice_is_the_model_its_checkpoint_and_its_comparison_whatever_they_are_called():
    assert LATE == Choice("runs/late", None, None, "Current run: late") and LATE.model == LATE_BESIDE_EARLY.model
    assert LATE != LATE_40 and LATE_BESIDE_EARLY != LATE_BESIDE_40
    assert LATE_BESIDE_EARLY.wanted == "late, latest checkpoint beside early" and LATE.wanted == LATE.name
