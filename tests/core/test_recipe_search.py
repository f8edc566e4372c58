"""The recipe search: every candidate learning rate with the first seed, the better half with the next, each a real
fine-tuning run; the table and the chosen recipe read back from its folder; a rerun continues the same search only,
and a stop between (or inside) runs loses nothing."""

import json
import re
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlm_studio.core.config.sections import MAX_SEED
from mlm_studio.core.finetune.options import FinetuneOptions, OptionError
from mlm_studio.core.finetune.recipe.result import Candidate, ranked, read_search, searches
from mlm_studio.core.finetune.recipe.search import SearchPlan, SearchRefused, check_folder, plan_of, search
from mlm_studio.core.finetune.recipe.searched import PLAN, recipe_options
from mlm_studio.core.finetune.recipe.trials import Trial, trial_folder
from mlm_studio.core.finetune.request import SCRATCH, StartingModel, model_fingerprint
from mlm_studio.core.finetune.runs import last_test
from mlm_studio.core.finetune.scores import main_score
from mlm_studio.core.finetune.setup import measured_learning_rate, prepare_finetuner
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.history import Listed
from mlm_studio.core.runs.records import FinishedRecord
from mlm_studio.core.storage.json_record import RecordError
from tests.core.test_finetune import options, write_task

RATES = (1e-3, 5e-3, 2e-2)


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return write_task(tmp_path_factory.mktemp("task") / "task.csv", rows=60)


def plan_for(run, task, **values):
    return SearchPlan(str(run.path), options(task, patience=1), **{"learning_rates": RATES, "max_epochs": 2,
                                                                   "seeds": 2, **values})  # fmt: skip


@pytest.fixture(scope="module")
def searched(trained_run, task, tmp_path_factory):
    """A search of three learning rates, two seeds, run to its end; its records."""
    root = tmp_path_factory.mktemp("runs") / "search"
    return root, list(search(plan_for(trained_run, task), root))


def snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*"))}


@pytest.mark.slow  # a search of five fine-tuning runs
def test_every_candidate_runs_once_and_the_better_half_again_and_one_that_never_beat_the_majority_is_said(
    searched, trained_run
):
    root, records = searched
    runs = [(t.learning_rate, t.seed, t.run, t.runs) for t in records if isinstance(t.record, FinishedRecord)]
    first = [lr for lr, seed, _, _ in runs if seed == 0]
    assert first == list(RATES) and [(n, of) for *_, n, of in runs] == [(n, 5) for n in range(1, 6)]
    found = read_search(root)
    by_seed0 = sorted(RATES, key=lambda lr: (-round(main_score(_best(root, lr, 0)), 6), _best(root, lr, 0).epoch))
    assert [lr for lr, seed, *_ in runs if seed == 1] == [lr for lr in RATES if lr in by_seed0[:2]]
    assert (found.expected, found.complete, found.state) == (5, True, "complete")
    for candidate in found.candidates:
        for trial in candidate.trials:
            assert trial.test == main_score(last_test(trial.path))
            assert trial.validation == main_score(_best(root, trial.learning_rate, trial.seed))
            assert 1 <= trial.best_epoch <= 2
    baseline = found.baseline
    assert baseline is not None and all(t.baseline == baseline for t in found.trials)
    for candidate, row in zip(found.candidates, found.to_json()["candidates"], strict=True):
        learned = [round(t.validation, 6) > round(baseline, 6) for t in candidate.trials]
        assert [t.learned for t in candidate.trials] == row["beat_majority"] == learned
        assert row["best_epochs"] == [t.best_epoch if beat else None for t, beat in zip(candidate.trials, learned)]
        assert row["never_beat_majority"] == (not any(learned))
    # two epochs of 60 texts are too few for this model: no run leaves the majority class, and none is chosen
    assert not any(c.learned for c in found.candidates) and found.chosen is None and found.recipe() is None
    assert found.verdict == (
        f"No recipe chosen: no learning rate beat the majority class (validation macro-F1 {baseline:.1%}) in 2 "
        "epochs; a longer schedule or other learning rates may."
    )
    table = found.table().splitlines()
    assert len(table) == 4 and table[0].split()[:3] == ["lr", "best", "epochs"] and "validation macro-F1" in table[0]
    assert all("never beat majority" in line and not line.startswith("*") for line in table[1:])
    assert all(line.count("(majority)") == len(c.trials) for line, c in zip(table[1:], found.candidates))
    assert found.to_json()["chosen"] is None and found.to_json()["majority_baseline"] == baseline
    assert searches(root.parent).found == (found,)


def _best(root, learning_rate, seed):
    """The validation record of a run's best step."""
    folder = trial_folder(root, learning_rate, seed)
    step = last_test(folder).best_step
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    record = next(r for r in map(json.loads, lines) if r["type"] == "validation" and r["step"] == step)
    return SimpleNamespace(**{"entity_f1": None, **record})


def test_the_plan_names_what_is_searched(searched, trained_run, task):
    root, _ = searched
    written = json.loads((root / PLAN).read_text())
    assert written["model"] == str(trained_run.path) and written["model fingerprint"] == model_fingerprint(
        StartingModel(str(trained_run.path))
    )
    assert written["train file"]["path"] == str(task.resolve()) and len(written["train file"]["sha256"]) == 64
    assert (written["learning rates"], written["max epochs"], written["seeds"]) == (list(RATES), 2, 2)
    assert written["fixed options"]["batch_size"] == 8 and written["fixed options"]["patience"] == 1


@pytest.mark.parametrize("plan_from", ["the same options", "its folder"])
def test_a_rerun_continues_the_same_search_and_trains_nothing(searched, trained_run, task, plan_from):
    """The plan given again, or read back from the folder (as the window resumes a search): the same search."""
    root, _ = searched
    before = snapshot(root)
    plan = plan_for(trained_run, task) if plan_from == "the same options" else plan_of(read_search(root))
    assert plan.identity() == plan_for(trained_run, task).identity()
    again = list(search(plan, root))
    assert [t.record.message for t in again] == [
        f"{t.path.name} has finished already; its scores are read back" for t in read_search(root).trials
    ]
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"learning_rates": (1e-3, 5e-3)}, "its learning rates 0.001, 0.005, 0.02, not 0.001, 0.005"),
        ({"max_epochs": 4}, "its max epochs 2, not 4"),
        ({"seeds": 3}, "its seeds 2, not 3"),
        ("another task", "its train file task.csv"),
        ("another model", f"its model {{run}}, not {SCRATCH}{{run}}"),
    ],
)
def test_another_search_in_the_same_folder_is_refused_and_nothing_is_written(
    searched, trained_run, task, tmp_path, change, named
):
    root, _ = searched
    if change == "another task":
        plan = plan_for(trained_run, write_task(tmp_path / "task.csv", rows=60, seed=1))
    elif change == "another model":
        plan = SearchPlan(SCRATCH + str(trained_run.path), plan_for(trained_run, task).options, RATES, 2, 2)
    else:
        plan = plan_for(trained_run, task, **change)
    before = snapshot(root)
    with pytest.raises(SearchRefused) as refused:
        list(search(plan, root))
    said = str(refused.value)
    assert said.startswith(f"{root} holds another search: ") and named.format(run=trained_run.path) in said
    assert said.endswith("give the same options to continue it, or another folder to start a new search")
    assert snapshot(root) == before


def test_a_damaged_plan_is_refused_and_left_as_it_was(trained_run, task, tmp_path):
    (tmp_path / PLAN).write_text('{"learning rates": [0.001')
    said = f"{PLAN} is damaged: it is not JSON .*; start a new search in another folder"
    with pytest.raises(SearchRefused, match=said):
        list(search(plan_for(trained_run, task), tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == [PLAN] and (tmp_path / PLAN).read_text().endswith("0.001")


def test_a_scratch_model_is_known_by_its_shape_and_tokenizer(trained_run):
    scratch = StartingModel.of(SCRATCH + str(trained_run.path))
    assert scratch == StartingModel(str(trained_run.path), fresh=True)
    assert str(scratch) == SCRATCH + str(trained_run.path)
    assert model_fingerprint(scratch) != model_fingerprint(StartingModel(str(trained_run.path)))
    assert len(model_fingerprint(scratch)) == 64


def test_a_model_given_by_a_relative_path_is_planned_where_it_is_so_its_recipe_trains_from_any_folder(
    trained_run, task, tmp_path, monkeypatch
):
    """The command line's MODEL as typed in one folder, its chosen recipe's command (and the window's Train it) run
    from another: the plan names the model's folder as the task's files are named, a Hub name as it is; a search
    recorded with the relative path continues from the folder it was typed in."""
    monkeypatch.chdir(trained_run.path.parent)
    name, where = trained_run.path.name, str(trained_run.path)
    assert SearchPlan(name, options(task, patience=1), RATES, 2, 2).identity()["model"] == where
    assert SearchPlan(SCRATCH + name, options(task, patience=1), RATES, 2, 2).spec == SCRATCH + where
    assert StartingModel("org/a-hub-model").located() == StartingModel("org/a-hub-model")
    before = {**plan_for(trained_run, task).identity(), "model": name}  # as a search recorded it before
    (tmp_path / PLAN).write_text(json.dumps(before))
    assert check_folder(tmp_path, SearchPlan(name, options(task, patience=1), RATES, 2, 2))["model"] == where


def test_a_folder_of_other_files_is_refused(trained_run, task, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SearchRefused, match="holds files and no search"):
        list(search(plan_for(trained_run, task), tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


@pytest.mark.slow  # a search of five fine-tuning runs
def test_a_stopped_search_continues_where_it_stopped_and_ends_as_if_never_stopped(
    searched, trained_run, task, tmp_path
):
    root = tmp_path / "search"
    control = TrainingControl()
    for tried in search(plan_for(trained_run, task), root, control):
        if tried.run == 2 and tried.record.kind == "step":
            control.stop()  # inside the second run: it checkpoints and the search ends there
    half = read_search(root)
    assert [(t.learning_rate, t.counts, t.state == "stopped") for t in half.trials] == [
        (RATES[0], True, False),
        (RATES[1], False, True),
    ]
    assert half.chosen is None and half.verdict == (
        f"No recipe chosen until all 5 runs have finished: 1 have. Not weighed, as they did not finish: "
        f"lr {RATES[1]:g}, seed 0."
    )
    list(search(plan_for(trained_run, task), root))
    resumed, whole = read_search(root), read_search(searched[0])
    assert [(c.learning_rate, c.validation, c.test) for c in resumed.candidates] == [
        (c.learning_rate, c.validation, c.test) for c in whole.candidates
    ]
    assert resumed.verdict == whole.verdict


def test_ties_go_to_the_earlier_best_epoch_and_unscored_candidates_rank_last():
    def candidate(lr, *scores_epochs, baseline=None):
        trials = tuple(
            Trial(lr, s, Path("x"), "completed", v, e, v, v, baseline=baseline)
            for s, (v, e) in enumerate(scores_epochs)
        )
        return Candidate(lr, trials)

    slow, quick, worse, none = (
        candidate(1e-5, (0.8, 5)),
        candidate(1e-4, (0.8, 2)),
        candidate(3e-4, (0.7, 1)),
        Candidate(1e-3, ()),
    )
    assert [c.learning_rate for c in ranked([none, slow, worse, quick])] == [1e-4, 1e-5, 3e-4, 1e-3]
    assert candidate(1e-4, (0.5, 2), (0.7, 3), (0.6, 4)).cost == 3  # the median best epoch
    # a run no better than the majority class has no best epoch: it is neither said nor weighed in a tie
    mixed = candidate(1e-4, (0.25, 1), (0.7, 6), baseline=0.25)
    assert (mixed.learned, mixed.best_epochs, mixed.cost) == (True, [6], 6)
    assert mixed.to_json()["best_epochs"] == [None, 6] and mixed.to_json()["beat_majority"] == [False, True]
    stuck = candidate(1e-5, (0.25, 1), (0.2, 2), baseline=0.25)
    assert (stuck.learned, stuck.best_epochs, stuck.to_json()["never_beat_majority"]) == (False, [], True)


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"learning_rates": ()}, "learning_rates must be one or more different values"),
        ({"learning_rates": (1e-4, 1e-4)}, "not 0.0001,0.0001"),
        (
            {"learning_rates": (1e-4, 1.0000001e-4)},
            "different values, each more than 0 and less than 1, not 0.0001,0.0001",
        ),  # two that print alike: refused as equal
        ({"learning_rates": (1e-4, 2.0)}, "each more than 0 and less than 1, not 0.0001,2"),
        ({"max_epochs": 0}, "max_epochs must be between 1 and 1,000, not 0"),
        ({"seeds": 0}, "seeds must be between 1 and 100, not 0"),
    ],
)
def test_bad_plans_are_refused_in_a_sentence(task, values, said):
    with pytest.raises(OptionError, match=re.escape(said)):
        SearchPlan("model", options(task), **values)


def test_seeds_past_the_largest_seed_are_refused_before_anything_is_trained(task):
    """Its seeds run from the first one on: the last of them must be a seed too, or the search would refuse it only
    after training every first-seed run."""
    with pytest.raises(OptionError, match=re.escape(f"seeds must be at most 1 from seed {MAX_SEED:,}, not 2")):
        SearchPlan("model", options(task, seed=MAX_SEED), seeds=2)
    assert SearchPlan("model", options(task, seed=MAX_SEED - 1), seeds=2).runs == 6


def test_a_folder_without_a_plan_is_no_search(tmp_path):
    (tmp_path / "notes").mkdir()
    assert read_search(tmp_path / "notes") is None and read_search(tmp_path / "gone") is None
    assert searches(tmp_path) == Listed(())
    shutil.rmtree(tmp_path)
    assert searches(tmp_path) == Listed(())


def test_the_chosen_recipe_trains_on_the_model_and_task_searched(searched, trained_run, task):
    found = read_search(searched[0])
    spec, chosen = recipe_options(found.plan, 1e-4, 4)
    searched_options = plan_for(trained_run, task).options
    assert spec == str(trained_run.path)
    assert chosen == replace(
        searched_options, train=task.resolve(), learning_rate=1e-4, epochs=4, split_seed=0, device="auto"
    )


def test_the_measured_default_learning_rate_follows_the_model_and_the_task_size(trained_run, task, tmp_path):
    assert measured_learning_rate(1_540_928, 480) == 3e-4  # the default preset on a few hundred verses
    assert measured_learning_rate(1_540_928, 1_920) == 1e-4
    assert measured_learning_rate(22_744_506, 480) == 1e-4  # all-MiniLM-L6-v2
    unset = options(task, learning_rate=None, epochs=1)
    assert unset.learning_rate is None and FinetuneOptions("classification", task).learning_rate is None
    run = prepare_finetuner(tmp_path / "ft", str(trained_run.path), unset).run_dir
    assert run.config.training.learning_rate == 3e-4  # a tiny model, 48 training examples: written resolved


def copied(searched, tmp_path) -> Path:
    """A copy of the whole search, to change."""
    return Path(shutil.copytree(searched[0], tmp_path / "search"))


def test_a_run_is_known_by_what_it_trained_not_by_its_folder_name(searched, trained_run, task, tmp_path):
    """Two folders swapped: each run is still the learning rate its config.toml says it trained, and a rerun trains
    nothing."""
    root = copied(searched, tmp_path)
    first, second = trial_folder(root, RATES[0], 0), trial_folder(root, RATES[1], 0)
    first.rename(root / "aside")
    second.rename(first)
    (root / "aside").rename(second)
    found, whole = read_search(root), read_search(searched[0])
    assert found.trial(RATES[1], 0).path == first and found.trial(RATES[0], 0).path == second
    assert [(c.learning_rate, c.validation, c.test) for c in found.candidates] == [
        (c.learning_rate, c.validation, c.test) for c in whole.candidates
    ]
    assert found.complete and found.verdict == whole.verdict and found.left_out == []
    before = snapshot(root)
    again = list(search(plan_for(trained_run, task), root))
    assert all(t.record.message.endswith("has finished already; its scores are read back") for t in again)
    assert snapshot(root) == before


def damaged_start(line: str) -> str:
    """A line of metrics.jsonl, its start's record damaged in a field other than the majority class's score."""
    record = json.loads(line)
    return json.dumps({**record, "parameters": "many"}) if record["type"] == "started" else line


@pytest.mark.parametrize("cut", ["emptied", "validations removed", "start damaged"])
def test_a_run_whose_records_are_missing_is_refused_never_dropped(searched, trained_run, task, tmp_path, cut):
    """The better candidate's first run loses its records: the search neither weighs it as a run that scored nothing
    (nor, its start's record damaged, as one that beat the majority class), nor ranks the others again and trains a
    seed it had not planned; it says which and why, and stops."""
    root = copied(searched, tmp_path)
    whole = read_search(searched[0])
    rate = whole.half[0]
    metrics = trial_folder(root, rate, 0) / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    kept = {
        "emptied": [],
        "validations removed": [line for line in lines if json.loads(line)["type"] != "validation"],
        "start damaged": [damaged_start(line) for line in lines],
    }[cut]
    best_step = last_test(metrics.parent).best_step
    metrics.write_text("".join(f"{line}\n" for line in kept))
    missing = {
        "emptied": "its metrics.jsonl holds no record of the steps it trained",
        "validations removed": f"its metrics.jsonl lacks the validation scores of its best step ({best_step:,})",
        "start damaged": "the record of its start in its metrics.jsonl is damaged",
    }[cut]
    found = read_search(root)
    assert not found.complete and found.chosen is None and found.half is None
    assert found.trial(rate, 0).missing == missing
    assert f"Not weighed, as their records are missing: lr {rate:g}, seed 0 ({metrics.parent.name}: {missing})." in (
        found.verdict
    )
    before = snapshot(root)
    with pytest.raises(SearchRefused) as refused:
        list(search(plan_for(trained_run, task), root))
    assert str(refused.value) == (
        f"{metrics.parent} cannot be weighed: {missing}; move the folder out of {root} and run the search again to "
        f"train lr {rate:g}, seed 0 anew"
    )
    assert snapshot(root) == before


def _set_seed(run: Path, seed: int) -> None:
    """Make `run` a run of `seed`, in its configuration and its request alike."""
    config = run / "config.toml"
    config.write_text(config.read_text().replace("\nseed = 0\n", f"\nseed = {seed}\n"))
    task = json.loads((run / "task.json").read_text())
    task["request"]["seed"] = seed
    (run / "task.json").write_text(json.dumps(task))


def test_run_folders_that_are_none_of_its_trials_are_left_out_and_said(searched, trained_run, task, tmp_path):
    """A copy of a run, a run whose records disagree, a run of another task, a damaged task.json, a run of a learning
    rate outside the better half: each left out with why, the search still complete on its own runs."""
    root = copied(searched, tmp_path)
    whole = read_search(searched[0])
    worse = next(rate for rate in RATES if rate not in whole.half)
    own = trial_folder(root, worse, 0)
    shutil.copytree(own, root / "a-copy")
    shutil.copytree(own, root / "disagrees")
    asked = json.loads((root / "disagrees" / "task.json").read_text())
    asked["request"]["learning_rate"] = 0.3
    (root / "disagrees" / "task.json").write_text(json.dumps(asked))
    shutil.copytree(own, root / "other-task")
    (root / "other-task" / "task.json").write_text(json.dumps({**asked, "split_seed": 7, "request": None}))
    shutil.copytree(own, root / "damaged")
    (root / "damaged" / "task.json").write_text("{}")
    shutil.copytree(own, root / "unplanned")
    _set_seed(root / "unplanned", 1)
    found = read_search(root)
    assert found.complete and [c.validation for c in found.candidates] == [c.validation for c in whole.candidates]
    weighed = [t.path.name for t in found.trials if t not in found.unplanned]
    assert weighed == [t.path.name for t in whole.trials]
    assert {left.path.name: left.reason for left in found.left_out} == {
        "unplanned": f"lr {worse:g}, seed 1 is not among the better half by the first seed",
        "a-copy": f"it trained lr {worse:g}, seed 0, as {own.name} did: one is a copy",
        "damaged": f'{root / "damaged" / "task.json"} is damaged: its "task" is missing (it must be one of '
        "classification, tokens, qa)",
        "disagrees": f"its records disagree: its task.json asked learning_rate 0.3, its config.toml trained {worse:g}",
        "other-task": "it was made for another search: its held-out examples' seed 7, the search's 0",
    }
    assert found.verdict.endswith(f"Left out: {'; '.join(f'{x.path.name} ({x.reason})' for x in found.left_out)}.")
    assert [x["folder"] for x in found.to_json()["left_out"]] == [str(x.path) for x in found.left_out]
    before = snapshot(root)
    assert all("has finished already" in t.record.message for t in search(plan_for(trained_run, task), root))
    assert snapshot(root) == before  # nothing left out is trained over, resumed or removed


def test_a_folder_a_run_is_to_begin_in_that_holds_another_run_is_refused(searched, trained_run, task, tmp_path):
    root = copied(searched, tmp_path)
    last = read_search(root).trials[-1]  # the better candidate's second seed
    shutil.rmtree(last.path)
    shutil.copytree(trial_folder(root, RATES[0], 0), last.path)  # another run put in its place
    before = snapshot(root)
    with pytest.raises(SearchRefused) as refused:
        list(search(plan_for(trained_run, task), root))
    assert str(refused.value).startswith(
        f"{last.path} is where the search trains lr {last.learning_rate:g}, seed 1, "
        f"but it holds a run that is not it (it trained lr {RATES[0]:g}, seed 0, as "
    )
    assert snapshot(root) == before


def test_a_damaged_search_record_is_refused_naming_its_field_and_left_out_of_the_list(searched, tmp_path):
    root = copied(searched, tmp_path)
    plan = json.loads((root / PLAN).read_text())
    (root / PLAN).write_text(json.dumps({**plan, "seeds": "two"}))
    said = f"{root / PLAN} is damaged: its \"seeds\" must be a whole number from 1 to 100, not 'two'"
    with pytest.raises(RecordError) as refused:
        read_search(root)
    assert str(refused.value) == said
    listed = searches(tmp_path)
    assert listed.found == () and [(x.path, x.reason) for x in listed.left_out] == [(root, said)]


def test_the_majority_class_score_is_naming_the_most_frequent_training_label_for_every_validation_text(
    searched, trained_run, task, tmp_path
):
    """What a run that learned nothing scores, recorded at its start: here the split's labels counted by hand."""
    data = prepare_finetuner(tmp_path / "run", str(trained_run.path), options(task)).data  # the search's split
    train, validation = ([int(row[0]) for row in part.labels] for part in (data.train, data.validation))
    majority = Counter(train).most_common(1)[0][0]
    share = validation.count(majority) / len(validation)
    f1 = 2 * share / (1 + share)  # the majority's: precision its share, recall 1; every other label's F1 is 0
    assert data.kind.baseline(data.train, data.validation) == pytest.approx(f1 / len(set(validation)))
    assert read_search(searched[0]).baseline == pytest.approx(f1 / len(set(validation)))
