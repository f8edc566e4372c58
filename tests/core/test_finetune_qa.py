"""Question answering as a fine-tuning kind, on a small pre-trained run and made-up SQuAD files: it learns where
answers lie, scores exact match and F1 (SQuAD v2.0's split besides), splits by context, resumes exactly, answers as
the question-answering pipeline does, and refuses what cannot be a question-answering task in a sentence."""

import json
import random
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file

from mlm_studio.core.data.labelled import TaskError
from mlm_studio.core.finetune.compare import compare
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.qa.data import read_qa_file
from mlm_studio.core.finetune.qa.task import context_split
from mlm_studio.core.finetune.setup import ResumeRefused, prepare_finetuner
from mlm_studio.core.finetune.tuner import BEST
from mlm_studio.core.runs.control import TrainingControl
from mlm_studio.core.runs.records import StartedRecord, StepRecord, TestRecord, ValidationRecord, WarningRecord
from mlm_studio.core.runs.run_folder import RunDir
from tests.core.qa_tasks import squad_document, write_squad


def qa_options(path, **values):
    defaults = dict(learning_rate=1e-2, epochs=10, batch_size=8, patience=10, device="cpu", doc_stride=16)
    return FinetuneOptions("qa", path, **{**defaults, **values})


@pytest.fixture(scope="module")
def squad_file(tmp_path_factory):
    return write_squad(tmp_path_factory.mktemp("qa") / "squad.json", contexts=300, facts=1)


@pytest.fixture(scope="module")
def qa_run(trained_run, squad_file, tmp_path_factory):
    """A question-answering run fine-tuned to its end: (its folder, its records)."""
    path = tmp_path_factory.mktemp("qa-run") / "ft"
    return path, list(prepare_finetuner(path, str(trained_run.path), qa_options(squad_file)).run())


def test_a_question_answering_run_learns_where_answers_lie(qa_run):
    path, records = qa_run
    started = records[0]
    assert isinstance(started, StartedRecord) and started.score == "answer F1"
    test = next(r for r in records if isinstance(r, TestRecord))
    assert test.exact_match >= 0.3 and test.f1 >= test.exact_match  # a random span: about 2% exact
    assert (test.accuracy, test.macro_f1, test.per_class, test.confusion) == (None, None, (), ())
    assert test.has_answer_f1 is None and test.no_answer_exact_match is None  # SQuAD v1.1: no split
    assert f"exact match {test.exact_match:.1%}, F1 {test.f1:.1%}" in test.describe()
    validations = [r for r in records if isinstance(r, ValidationRecord)]
    best = max(validations, key=lambda r: r.f1)
    assert test.best_step == best.step  # the best checkpoint chosen by F1
    written = [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]
    assert {"exact_match", "f1"} <= set(next(r for r in written if r["type"] == "test"))
    assert json.loads((path / "task.json").read_text())["doc_stride"] == 16


def test_an_answer_is_what_the_pipeline_returns(qa_run):
    model = FineTuned(RunDir(qa_run[0]))
    context = "a value to return . the colour is blue . this is an error"
    answers = model.answer("what is the colour ?", context, top_k=3)
    assert len(answers) == 3 and [a["score"] for a in answers] == sorted((a["score"] for a in answers), reverse=True)
    for answer in answers:
        assert set(answer) == {"score", "start", "end", "answer"}
        assert context[answer["start"] : answer["end"]] == answer["answer"] and 0 < answer["score"] <= 1
    assert answers[0]["answer"] == "blue"
    with_none = model.answer("what is the colour ?", context, top_k=1000, handle_impossible_answer=True)
    assert [(a["start"], a["end"]) for a in with_none if a["answer"] == ""] == [(0, 0)]


def test_a_question_longer_than_the_model_reads_is_cut_and_said_and_one_of_nothing_refused(qa_run):
    model = FineTuned(RunDir(qa_run[0]))
    context = "a value to return . the colour is blue . this is an error"
    short = model.answer_text("what is the colour ?", context)
    assert short.question.whole and short.question.describe() == ""
    assert short.as_pipeline() == model.answer("what is the colour ?", context)
    question = "what is the colour ? " + " ".join(["the list of a file"] * 20)
    long = model.answer_text(question, context, top_k=2)
    pieces = model.tokenizer.backend.encode(question, add_special_tokens=False).ids
    read = long.question.read
    assert len(model.tokenizer.backend.encode(question[:read], add_special_tokens=False).ids) == 16
    assert long.question.describe() == (
        f"the model reads 16 tokens of a question: it read the first 16 of its {len(pieces)} tokens (the first "
        f"{read} of {len(question)} characters)"
    )
    assert long.answers == model.answer(question[:read], context, top_k=2)  # what it read is what it answered
    for asked, about, what in (("\u200b", context, "question"), ("what is the colour ?", "\u200b \u200b", "context")):
        with pytest.raises(TaskError, match=rf"^the {what} '.*' holds no character the model reads; type words$"):
            model.answer(asked, about)  # a zero-width space alone: nothing to ask, or nothing to answer from


@pytest.mark.slow  # thousands of windows
def test_a_context_of_a_megabyte_is_read_in_windows(qa_run):
    rng = random.Random(0)
    filler = " . ".join(rng.choice(["the list of a file is long", "a value to return"]) for _ in range(50_000))
    context = f"{filler[:500_000]} . the colour is blue . {filler[500_000:1_000_000]}"
    answers = FineTuned(RunDir(qa_run[0])).answer("what is the colour ?", context, top_k=2)
    assert len(context) > 1_000_000 and len(answers) == 2
    assert all(context[a["start"] : a["end"]] == a["answer"] != "" for a in answers)


def test_contexts_are_never_on_two_sides_of_the_split(tmp_path):
    examples = read_qa_file(write_squad(tmp_path / "s.json", contexts=50, facts=3)).examples
    parts = context_split(examples, seed=4)
    assert sorted(i for part in parts for i in part) == list(range(len(examples)))
    contexts = [{examples[i].context for i in part} for part in parts]
    assert not (contexts[0] & contexts[1] or contexts[0] & contexts[2] or contexts[1] & contexts[2])
    assert [len(c) for c in contexts] == [40, 5, 5]
    with pytest.raises(TaskError, match="2 context"):
        context_split(examples[:6], seed=0)  # three questions on each of two contexts
    retitled = [replace(e, title=f"article {i % 7}") for i, e in enumerate(examples)]  # one context, several titles
    assert context_split(retitled, seed=4) == parts


def test_squad_v2_reports_answered_and_unanswerable_questions_apart(trained_run, tmp_path):
    task = write_squad(tmp_path / "v2.json", contexts=60, facts=1, impossible=True)
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), qa_options(task, epochs=2)).run())
    test = next(r for r in records if isinstance(r, TestRecord))
    assert None not in (test.has_answer_exact_match, test.has_answer_f1, test.no_answer_exact_match)
    assert "without one: exact" in test.describe()
    # every question is asked once with an answer and once without: the whole is their mean
    assert test.exact_match == pytest.approx((test.has_answer_exact_match + test.no_answer_exact_match) / 2)
    model = FineTuned(RunDir(tmp_path / "ft"))  # answers as it was scored: "no answer" among its answers
    asked = read_qa_file(task).examples[1]
    assert asked.impossible and model.answer(asked.question, asked.context, top_k=3) == model.answer(
        asked.question, asked.context, top_k=3, handle_impossible_answer=True
    )


def test_a_v2_file_of_unanswerable_questions_only_trains_and_says_so(trained_run, tmp_path):
    document = squad_document(contexts=30, impossible=True)
    for article in document["data"]:
        for paragraph in article["paragraphs"]:
            paragraph["qas"] = [qa for qa in paragraph["qas"] if qa["is_impossible"]]
    task = tmp_path / "none.json"
    task.write_text(json.dumps(document), encoding="utf-8")
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), qa_options(task, epochs=1)).run())
    notes = [r.message for r in records if isinstance(r, WarningRecord)]
    assert any("none.json: no question has an answer" in note for note in notes)
    test = next(r for r in records if isinstance(r, TestRecord))
    assert test.has_answer_f1 is None and test.no_answer_exact_match is not None


def test_a_question_longer_than_the_window_is_cut_and_said(trained_run, tmp_path):
    document = squad_document(contexts=30)
    qa = document["data"][0]["paragraphs"][0]["qas"][0]
    qa["question"] = " ".join(["what is the list of the file"] * 30) + " ?"
    task = tmp_path / "long.json"
    task.write_text(json.dumps(document), encoding="utf-8")
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), qa_options(task, epochs=1)).run())
    notes = [r.message for r in records if isinstance(r, WarningRecord)]
    assert any("longer than the 16 tokens the model reads of one and were cut, the first at row 1" in n for n in notes)
    assert isinstance(records[-1].reason, str) and records[-1].reason == "completed"


def test_a_classification_file_is_refused_as_a_question_answering_task(trained_run, tmp_path):
    task = tmp_path / "labels.csv"
    task.write_text("sentence,category\nthe file,files\nraise it,errors\n", encoding="utf-8")
    with pytest.raises(TaskError, match=r"labels.csv: no 'question' column \(columns: sentence, category\)"):
        prepare_finetuner(tmp_path / "ft", str(trained_run.path), qa_options(task))
    assert not (tmp_path / "ft").exists()


def test_a_stride_with_no_room_in_the_window_is_refused(trained_run, squad_file, tmp_path):
    with pytest.raises(TaskError, match="the document stride does not fit the model's window"):
        prepare_finetuner(tmp_path / "ft", str(trained_run.path), qa_options(squad_file, doc_stride=128))
    assert not (tmp_path / "ft").exists()


def test_a_resume_changing_the_stride_is_refused_before_anything_is_written(qa_run):
    path = qa_run[0]
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
    for field, value in (("doc_stride", 8), ("max_answer_length", 5)):
        with pytest.raises(ResumeRefused, match=f"{field} cannot change when resuming: the run's task is fixed"):
            prepare_finetuner(path, changes={field: value})
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == before


@pytest.mark.slow  # three short question-answering runs
def test_a_question_answering_resume_is_exact(trained_run, tmp_path):
    task = write_squad(tmp_path / "s.json", contexts=60, facts=1)
    chosen = qa_options(task, epochs=2)
    straight = list(prepare_finetuner(tmp_path / "a", str(trained_run.path), chosen).run())
    control = TrainingControl()
    first = prepare_finetuner(tmp_path / "b", str(trained_run.path), chosen, control)
    for record in first.run():
        if isinstance(record, StepRecord) and record.step >= 9:  # mid-epoch: 6 steps an epoch
            control.stop()
    assert first.step < first.total_steps
    resumed = list(prepare_finetuner(tmp_path / "b").run())
    losses = {
        r.step: (r.loss, getattr(r, "f1", None)) for r in straight if isinstance(r, StepRecord | ValidationRecord)
    }
    again = {r.step: (r.loss, getattr(r, "f1", None)) for r in resumed if isinstance(r, StepRecord | ValidationRecord)}
    assert again and all(again[step] == losses[step] for step in again)
    a, b = (load_file(str(p / BEST / "model.safetensors")) for p in (tmp_path / "a", tmp_path / "b"))
    assert all(torch.equal(a[name], b[name]) for name in a)
    tests = [next(r for r in records if isinstance(r, TestRecord)) for records in (straight, resumed)]
    assert (tests[0].exact_match, tests[0].f1) == (tests[1].exact_match, tests[1].f1)


def test_a_comparison_of_question_answerers_is_refused_before_any_run(trained_run, squad_file, tmp_path):
    with pytest.raises(TaskError, match="a comparison weighs classifiers and taggers"):
        next(compare(str(trained_run.path), qa_options(squad_file), tmp_path / "compare", 1))
    assert not (tmp_path / "compare").exists()


def test_predict_answers_a_question_about_a_text_as_the_pipeline_would(qa_run, squad_file, capsys):
    from mlm_studio.cli import main

    path = qa_run[0]
    asked = read_qa_file(squad_file).examples[5]
    expected = FineTuned(RunDir(path)).answer(asked.question, asked.context, top_k=2)
    assert main(["predict", str(path), asked.context, "--question", asked.question, "--top-k", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [{**a, "score": pytest.approx(a["score"], abs=1e-9)} for a in expected] == printed
    assert main(["predict", str(path), asked.context, "--question", asked.question]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "score  characters  answer" and table[1].endswith(f"  {expected[0]['answer']}")
    assert main(["predict", str(path), asked.context]) == 2
    assert capsys.readouterr().err.endswith("ft answers a question about TEXT: give the question with --question\n")


def test_answering_a_long_context_stops_when_no_longer_wanted(qa_run):
    from mlm_studio.core.progress import Cancelled, Progress

    class Impatient(Progress):
        def __init__(self):
            super().__init__()
            self.reports = []

        def report(self, done, total, message=""):
            self.reports.append((done, total, message))
            if len(self.reports) == 2:
                self.cancel()

    context = " . ".join(["the list of a file is long", "the colour is blue"] * 400)
    impatient = Impatient()
    with pytest.raises(Cancelled):
        FineTuned(RunDir(qa_run[0])).answer("what is the colour ?", context, progress=impatient)
    assert [done for done, _, _ in impatient.reports] == [0, 16] and impatient.reports[0][1] > 32


def test_own_validation_and_test_files_whose_contexts_repeat_from_training_are_said(trained_run, tmp_path):
    train = write_squad(tmp_path / "train.json", contexts=20)
    document = squad_document(contexts=10, seed=1)
    document["data"][0]["paragraphs"][:3] = squad_document(contexts=20)["data"][0]["paragraphs"][:3]  # 3 from train
    validation = tmp_path / "validation.json"
    validation.write_text(json.dumps(document), encoding="utf-8")
    test = write_squad(tmp_path / "test.json", contexts=10, seed=2)
    options = qa_options(train, epochs=1, validation=validation, test=test)
    records = list(prepare_finetuner(tmp_path / "ft", str(trained_run.path), options).run())
    notes = [r.message for r in records if isinstance(r, WarningRecord)]
    asked = sum(len(p["qas"]) for p in document["data"][0]["paragraphs"][:3])
    total = sum(len(p["qas"]) for article in document["data"] for p in article["paragraphs"])
    assert (
        f"validation.json: {asked} of its {total} validation questions are asked of a context that is also in the "
        "training file (train.json): their validation scores are measured on contexts the model trained on" in notes[0]
    )
    assert not any("test.json" in note for note in notes)
