"""`mlm-studio predict` on a fine-tuning run, as a user runs it: a classifier's labels as a table and as the
pipeline's JSON, a tagger's entities, a long text said to be cut; options of another kind of model refused in a
sentence with exit status 2, and the fill-mask `predict` unchanged; an exported question answerer read with
`transformers` as docs/finetuning.md shows answers as `predict` does; `evaluate` says what a fine-tuning run is."""

import io
import json
import os
import subprocess
import sys

import pytest

from mlm_studio.cli import main
from mlm_studio.commands.predict import _answers_table
from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.predict import fine_tuned_at
from mlm_studio.core.finetune.setup import prepare_finetuner
from tests.command import mlm_studio
from tests.core.helpers import small_config
from tests.core.qa_tasks import squad_document, write_squad
from tests.core.test_finetune import write_task
from tests.core.test_finetune_export import write_pairs
from tests.core.test_finetune_tokens import write_tagging
from tests.documents import fenced_blocks, page


def predict(*args, stdin=None):
    """`mlm-studio predict ARGS`; with `stdin`, as a subprocess reading it from a real pipe."""
    if stdin is None:
        done = mlm_studio("predict", *args, env={"COLUMNS": "100"})
        return done.returncode, done.stdout, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "mlm_studio", "predict", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "100"},
        input=stdin,
        encoding="utf-8",
    )
    return done.returncode, done.stdout, done.stderr


def same(printed, expected):
    """The same answers, their scores within 1e-6 (another process may sum in another order)."""
    assert [{**a, "score": 0} for a in printed] == [{**a, "score": 0} for a in expected]
    assert [a["score"] for a in printed] == pytest.approx([a["score"] for a in expected], abs=1e-6)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, small_corpus, small_tokenizer):
    """A short pre-training run and four runs fine-tuned from it for one epoch: texts, pairs, tags and answers."""
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer

    root = tmp_path_factory.mktemp("predict")
    run = start_run(root / "pre", small_config(max_steps=4), small_corpus, small_tokenizer)
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    tasks = {
        "texts": ("classification", write_task(root / "task.csv", rows=60)),
        "pairs": ("classification", write_pairs(root / "pairs.csv")),
        "tags": ("tokens", write_tagging(root / "tags.jsonl", sentences=40)),
        "qa": ("qa", write_squad(root / "squad.json", contexts=30, facts=1)),
    }
    for name, (task, path) in tasks.items():
        stride = {"doc_stride": 16} if task == "qa" else {}
        options = FinetuneOptions(task, path, learning_rate=5e-3, epochs=1, batch_size=8, device="cpu", **stride)
        list(prepare_finetuner(root / name, str(run.path), options).run())
    return root


def test_a_classifier_prints_its_labels_as_a_table_and_as_the_pipelines_json(runs):
    code, out, err = predict(runs / "texts", "return the value of a list")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["label", "probability"] and len(lines) == 4  # every label
    expected = fine_tuned_at(runs / "texts").label_text("return the value of a list").scores
    assert [line.split()[0] for line in lines[1:]] == [a["label"] for a in expected]
    assert [float(line.split()[1]) for line in lines[1:]] == pytest.approx([a["score"] for a in expected], abs=5e-4)
    code, out, err = predict(runs / "texts" / "best", "return the value of a list", "--json", "--top-k", 2)
    assert (code, err) == (0, "")
    same(json.loads(out), expected[:2])  # what pipeline(…, top_k=2) returns


def test_a_tagger_prints_its_entities_and_a_long_text_is_said_to_be_cut(runs):
    text = "the file of error value"
    code, out, err = predict(runs / "tags", text, "--json")
    assert (code, err) == (0, "")
    same(json.loads(out), fine_tuned_at(runs / "tags").tag_text(text).entities)
    long = " ".join(["the file of error value"] * 100)
    code, out, err = predict(runs / "tags", long)
    assert code == 0 and out.startswith("words: the/")
    limit = fine_tuned_at(runs / "tags").limit  # the fine-tuning's length
    assert err.startswith(f"Note: the model reads {limit} tokens: it read the first ")
    assert err.endswith(f" of {len(long):,} characters.\n")


UNSEEN = [  # names the tagger never saw, split into pieces its vocabulary has
    "Bob works at Globex in Lagos .",
    "Kwame Nkrumah works at Initech in Lagos .",
    "the path of Rio de Janeiro is an error value",
    "Zyxwv Qqrtz , the file of Hjklmn",
    "an error value in Vbnmzx to Wqerty Plokij",
    "Fjordgate and Brixton list the file",
]


def _table_entities(out):
    """The entity rows of predict's table: (type, score, characters, text)."""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith(("entity ", "entities: none")))
    rows = [line.split(maxsplit=3) for line in lines[header + 1 :] if not line.startswith("* ")]
    return [(kind, float(score), span, text) for kind, score, span, text in rows]


def _span(text, entity):
    """An entity's characters, as the table writes them, and their text."""
    start, end = entity["start"], entity["end"]
    return f"{start}–{end}", text[start:end]


def test_a_taggers_table_names_the_entities_and_scores_of_its_json_on_unseen_words(runs, capsys):
    """One answer: the table's entities are --json's (the exported model's pipeline's with "first"), type, score,
    characters and text, also where the model tags a word's later pieces otherwise than its first (marked * in the
    words): there the words keep their first piece's tags, as the test scores read them, where `--aggregation
    simple` groups the later pieces into entities of their own."""
    tables, answers, by_pieces, marked = [], [], 0, 0
    for text in UNSEEN:
        assert main(["predict", str(runs / "tags"), text, "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert main(["predict", str(runs / "tags"), text]) == 0
        table = capsys.readouterr().out
        tables.append(_table_entities(table))
        answers.append([(e["entity_group"], round(e["score"], 3), *_span(text, e)) for e in printed])
        tagged = fine_tuned_at(runs / "tags").tag_text(text)
        assert [(e["entity_group"], e["start"], e["end"]) for e in printed] == [
            (e["entity_group"], e["start"], e["end"]) for e in tagged.entities
        ]
        differ = [w for w in tagged.words if w.get("pieces_differ")]
        assert table.splitlines()[0].count("*") == len(differ)
        assert table.rstrip().endswith(
            "--aggregation simple, which groups every piece by its own tag, can split such a word"
        ) == bool(differ)
        assert main(["predict", str(runs / "tags"), text, "--json", "--aggregation", "simple"]) == 0
        by_pieces += len(json.loads(capsys.readouterr().out))
        marked += len(differ)
    assert tables == answers
    # the case at hand: one epoch tags these words' first pieces O and some later pieces as entities
    assert marked >= 3 and by_pieces >= 3 and sum(map(len, answers)) < by_pieces


@pytest.mark.parametrize(
    ("run", "options", "said"),
    [
        ("texts", ["--fill"], "--fill does not apply to texts: it is a text classifier"),
        ("tags", ["--top-k", "3", "--pair", "b"], "--top-k and --pair do not apply to tags: it is a token tagger"),
        ("texts", ["--question", "why?"], "--question does not apply to texts: it is a text classifier"),
        ("texts", ["--aggregation", "none"], "--aggregation does not apply to texts: it is a text classifier"),
        ("texts", ["--pair", "b"], "texts was fine-tuned on single texts: --pair is for a classifier of pairs"),
        ("pairs", [], "pairs was fine-tuned on pairs of texts: give the second with --pair"),
        ("pairs", ["--pair", " "], "pairs was fine-tuned on pairs of texts: give the second with --pair (it is empty)"),
        ("texts", ["--top-k", "0"], "--top-k is how many answers to print: 1 or more, not 0"),
        ("pre", ["--pair", "b"], "--pair is for a fine-tuned model; {runs}/pre fills masks"),
        ("pre", ["--question", "q", "--aggregation", "none"], "--question and --aggregation are for a fine-tuned"),
    ],
)
def test_options_of_another_kind_of_model_are_refused_in_a_sentence(runs, run, options, said, capsys):
    assert main(["predict", str(runs / run), "the value [MASK]", *options]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("mlm-studio: " + said.format(runs=runs))


def test_a_pair_is_labelled_and_fill_mask_keeps_its_five_candidates(runs, capsys):
    assert main(["predict", str(runs / "pairs"), "the error of", "--pair", "a list", "--json"]) == 0
    answers = json.loads(capsys.readouterr().out)
    assert sorted(a["label"] for a in answers) == ["first", "second"]
    same(answers, fine_tuned_at(runs / "pairs").label_text("the error of", "a list").scores)
    assert main(["predict", str(runs / "pre"), "the [MASK] of", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 5


def test_a_fine_tuning_run_without_weights_or_with_a_damaged_task_is_refused(runs, tmp_path, capsys):
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(runs / "texts", bare, ignore=shutil.ignore_patterns("best", "checkpoints"))
    assert main(["predict", str(bare), "a text"]) == 1
    assert capsys.readouterr().err == "mlm-studio: run bare has no weights yet; fine-tune it first\n"
    (bare / "task.json").write_text('{"task": ', encoding="utf-8")  # cut short
    assert main(["predict", str(bare), "a text"]) == 1
    assert capsys.readouterr().err.startswith(f"mlm-studio: {bare / 'task.json'} is damaged: it is not JSON (")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({}, 'is damaged: its "task" is missing (it must be one of classification, tokens, qa)'),
        ({"labels": "two"}, "is damaged: its \"labels\" must be a list of one or more texts, not 'two'"),
        (
            {"task": "regression"},
            "cannot be used: its \"task\" is 'regression', which this version of MLM Studio "
            "does not know (it knows classification, tokens, qa)",
        ),
    ],
)
def test_predict_and_resume_on_a_damaged_or_foreign_task_refuse_in_a_sentence_naming_the_file(
    runs, tmp_path, change, said
):
    """Not a KeyError, and a kind of task this version does not know is not blamed on the run's weights."""
    import shutil

    run = shutil.copytree(runs / "texts", tmp_path / "texts")
    written = json.loads((run / "task.json").read_text(encoding="utf-8"))
    (run / "task.json").write_text(json.dumps({**written, **change} if change else {}), encoding="utf-8")
    for args in (["predict", run, "a text"], ["finetune", "--resume", run], ["export", run, tmp_path / "out"]):
        done = mlm_studio(*args)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.startswith(f"mlm-studio: {run / 'task.json'} {said}") and done.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


CONTEXT = "and the path of the type . the list of a file is long . the port is return ."


def test_a_question_longer_than_the_model_reads_is_said_on_stderr(runs):
    question = "what is the port ? " + " ".join(["the list of a file"] * 20)
    code, out, err = predict(runs / "qa", CONTEXT, "--question", question, "--json")
    read = fine_tuned_at(runs / "qa").answer_text(question, CONTEXT).question
    assert code == 0 and not read.whole
    assert err == f"Note: {read.describe()}.\n" and err.startswith("Note: the model reads 16 tokens of a question: ")
    same(json.loads(out), fine_tuned_at(runs / "qa").answer(question, CONTEXT))
    code, out, err = predict(runs / "qa", CONTEXT, "--question", "what is the port ?")
    assert (code, err) == (0, "") and out.startswith("score  characters  answer\n")


def test_texts_one_a_line_from_stdin_or_a_file_are_answered_one_a_line(runs, tmp_path, capsys, monkeypatch):
    texts = ["return the value of a list", "the file is «open»", "an error"]
    code, out, err = predict(runs / "texts", "-", "--json", stdin="\n".join(texts) + "\n")  # a real pipe
    assert (code, err) == (0, "")
    model = fine_tuned_at(runs / "texts")
    for line, text in zip(out.splitlines(), texts, strict=True):
        same(json.loads(line), model.label_text(text).scores)
    (tmp_path / "texts.txt").write_text("\r\n".join(texts), encoding="utf-8")  # Windows line ends, no last one
    assert main(["predict", str(runs / "texts"), "--text-file", str(tmp_path / "texts.txt"), "--top-k", "2"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    for line, text in zip(out.splitlines(), texts, strict=True):
        best = model.label_text(text).scores[:2]
        assert line.split("\t")[::2] == [a["label"] for a in best]

    def answered(run, stdin, *options):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
        assert main(["predict", str(runs / run), "-", *options]) == 0
        return capsys.readouterr().out.splitlines()

    lines = answered("qa", f"{CONTEXT}\nthe port is open .\n", "--question", "what is the port ?", "--json")
    assert len(lines) == 2
    same(json.loads(lines[1]), fine_tuned_at(runs / "qa").answer("what is the port ?", "the port is open ."))
    assert answered("pairs", "the error of\ta list\n")[0].split("\t")[0] in ("first", "second")
    [line] = answered("tags", "the file of error value\n")
    assert line.startswith("the/")
    assert [len(json.loads(line)) for line in answered("pre", "the [MASK] of\nthe list [MASK]\n", "--json")] == [5, 5]


@pytest.mark.parametrize(
    ("run", "stdin", "options", "said"),
    [
        ("tags", "the file\n\nan error\n", [], "standard input, line 2: no text; give one text a line, none empty"),
        ("pairs", "a\tb\nthe file\n", [], "standard input, line 2: a classifier of pairs reads each line as TEXT,"),
        ("pairs", "a\tb\n", ["--pair", "c"], "--pair is one second text: give each line as TEXT, a tab, then TEXT2"),
        ("pre", "the [MASK]\nthe file\n", [], "standard input, line 2: The text has no [MASK]"),
        ("tags", None, [], "no TEXT: give TEXT, - to read texts one a line from standard input, or --text-file FILE"),
        ("tags", None, ["a text", "--text-file", "x.txt"], "both TEXT and --text-file: give TEXT, -"),
        ("texts", None, [" "], "TEXT is empty: give texts a text to label"),
        ("tags", None, [""], "TEXT is empty: give tags a text to tag"),
    ],
)
def test_lines_that_cannot_be_answered_are_refused_naming_the_line(
    runs, run, stdin, options, said, capsys, monkeypatch
):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
    code = main(["predict", str(runs / run), *(["-"] if stdin is not None else []), *options])
    out, err = capsys.readouterr()
    assert code in (1, 2) and err.startswith(f"mlm-studio: {said}")
    assert len(out.splitlines()) == (1 if "line 2" in said else 0)  # the lines before it are answered


def test_a_text_file_not_utf8_or_missing_is_refused_naming_it(runs, tmp_path, capsys):
    (tmp_path / "latin.txt").write_bytes("the file\ncafé\n".encode("latin-1"))
    assert main(["predict", str(runs / "tags"), "--text-file", str(tmp_path / "latin.txt")]) == 1
    out, err = capsys.readouterr()
    assert err == f"mlm-studio: {tmp_path / 'latin.txt'}, line 2: not UTF-8 text (byte 4 of the line)\n"
    assert out.startswith("the/") and len(out.splitlines()) == 1  # line 1 answered
    assert main(["predict", str(runs / "tags"), "--text-file", str(tmp_path / "missing.txt")]) == 1
    missing = f"{tmp_path / 'missing.txt'}: cannot be read (No such file or directory)"
    assert capsys.readouterr().err == f"mlm-studio: {missing}\n"
    assert main(["predict", str(runs / "tags"), "--text-file", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"mlm-studio: {tmp_path}: a folder, not a file of texts one a line\n"


def test_a_no_answer_is_printed_as_no_answer_not_a_blank_span():
    answers = [
        {"score": 0.023, "start": 0, "end": 0, "answer": ""},
        {"score": 0.01, "start": 4, "end": 8, "answer": "Rome"},
    ]
    assert _answers_table(answers).splitlines()[1:] == ["0.023  –           (no answer)", "0.010  4–8         Rome"]


def test_a_question_to_an_exported_question_answering_folder_says_to_give_the_run(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"architectures": ["BertForQuestionAnswering"]}', encoding="utf-8")
    assert main(["predict", str(tmp_path), "Bob lives in Rome.", "--question", "Where?"]) == 2
    error = capsys.readouterr().err
    assert f"{tmp_path} is a question-answering model exported for transformers (BertForQuestionAnswering)" in error
    assert "give predict its run's folder" in error and "fills masks" not in error


def test_the_documented_transformers_recipe_answers_exactly_as_predict(runs, tmp_path):
    """docs/finetuning.md's code for an exported question answerer (`transformers` 5 has no question-answering
    pipeline) gives `predict`'s answer to every question, its score within 1e-5, contexts read in several windows;
    with unanswerable questions allowed, the engine's; with `transformers` 4, its pipeline gives the same."""
    transformers = pytest.importorskip("transformers")
    from mlm_studio.core.runs.run_folder import RunDir

    assert mlm_studio("export", runs / "qa", tmp_path / "qa").returncode == 0
    [recipe] = [block for block in fenced_blocks(page("finetuning.md"), "python") if "ForQuestionAnswering" in block]
    assert '"exported/qa"' in recipe
    documented = {}
    exec(recipe.replace('"exported/qa"', repr(str(tmp_path / "qa"))), documented)
    run, model = RunDir(runs / "qa"), fine_tuned_at(runs / "qa")
    values = {"max_length": run.config.data.max_seq_len, "doc_stride": run.task.doc_stride}
    values["max_answer_length"] = run.task.max_answer_length
    asked = [
        (qa["question"], paragraph["context"])
        for article in squad_document(contexts=4, seed=1, facts=2, filler=12)["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    assert min(len(model.tokenizer.backend.encode(context).ids) for _, context in asked) > values["max_length"]
    for question, context in asked:
        code, out, err = predict(runs / "qa", context, "--question", question, "--json")
        assert (code, err) == (0, "")
        same([documented["answer"](question, context, **values)], json.loads(out))
        unanswerable = documented["answer"](question, context, **values, unanswerable=True)
        same([unanswerable], model.answer(question, context, handle_impossible_answer=True))
    if int(transformers.__version__.split(".")[0]) >= 5:
        from transformers.pipelines import SUPPORTED_TASKS

        assert "question-answering" not in SUPPORTED_TASKS  # as the page says: the recipe, not the pipeline
        return
    pipe = transformers.pipeline("question-answering", model=str(tmp_path / "qa"))
    for question, context in asked:
        answered = pipe(question=question, context=context, max_seq_len=values["max_length"],
                        doc_stride=values["doc_stride"], max_answer_len=values["max_answer_length"])  # fmt: skip
        same([answered], model.answer(question, context))


@pytest.mark.parametrize(
    ("run", "said"),
    [
        ("qa", "is a question-answering run: it has no masked-LM head; ask it with predict RUN TEXT --question Q "
               "(its test exact match and F1 are in its metrics.jsonl); fill masks and evaluate with"),
        ("tags", "is a fine-tuned tagger: it has no masked-LM head; fill masks and evaluate with"),
    ],
)  # fmt: skip
def test_evaluate_says_what_a_fine_tuning_run_is_and_what_asks_it(runs, run, said):
    done = mlm_studio("evaluate", runs / run)
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr.startswith(f"mlm-studio: {run} {said} the model it started from (") and done.stderr.count("\n") == 1
    )
