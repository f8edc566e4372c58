"""Question-answering files: SQuAD v1.1 and v2.0 JSON and flat tables in every table format give the same
examples; an answer not where it says, outside its context, an empty question or context (or one of invisible
characters), damaged or non-SQuAD JSON, a file without questions, an is_impossible not true or false, two questions
of one id, a file of blank answers are each refused in one sentence naming the file and the question; v1.1 or v2.0
is the file's version's and is_impossible's to say, and a question v1.1 cannot read or a blank answer is left out
and said with its place; unanswerable questions alone are read; a linked file is read and never written; encodings
are read as the labelled reader reads them; any JSON value is read or refused clearly."""

import codecs
import csv
import gzip
import io
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlm_studio.core.data.labelled import TaskError
from mlm_studio.core.finetune.qa import data
from mlm_studio.core.finetune.qa.data import QAExample, read_qa_file
from tests.core.helpers import ANY_JSON

CONTEXT = "Fryderyk Chopin was born in Żelazowa Wola in 1810. He moved to Paris in 1831."
SECOND = "The café «Le Procope» opened in 1686;  it is   the oldest in Paris."
SQUAD_V2 = {
    "version": "v2.0",
    "data": [
        {
            "title": "Chopin",
            "paragraphs": [
                {
                    "context": CONTEXT,
                    "qas": [
                        {"id": "c1", "question": "  Where was Chopin born?", "is_impossible": False,
                         "answers": [{"text": "Żelazowa Wola", "answer_start": 28},
                                     {"text": "in Żelazowa Wola", "answer_start": 25}]},
                        {"id": "c2", "question": "When did he die?", "is_impossible": True, "answers": [],
                         "plausible_answers": [{"text": "1831", "answer_start": 73}]},
                    ],
                }
            ],
        },
        {
            "title": "Paris",
            "paragraphs": [
                {"context": SECOND, "qas": [{"id": "p1", "question": "When did it open?",
                                             "answers": [{"text": "1686", "answer_start": 32}]}]}
            ],
        },
    ],
}  # fmt: skip
EXPECTED = [
    QAExample("c1", "Where was Chopin born?", CONTEXT, (("Żelazowa Wola", 28), ("in Żelazowa Wola", 25)), 1, "Chopin"),
    QAExample("c2", "When did he die?", CONTEXT, (), 2, "Chopin"),
    QAExample("p1", "When did it open?", SECOND, (("1686", 32),), 3, "Paris"),
]


def flat_rows():
    return [
        {"id": e.id, "title": e.title, "question": e.question, "context": e.context,
         "answers": {"text": [t for t, _ in e.answers], "answer_start": [s for _, s in e.answers]}}
        for e in EXPECTED
    ]  # fmt: skip


def jsonl_bytes(rows):
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def csv_bytes(rows, delimiter=","):
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter)
    writer.writerow(list(rows[0]))
    for row in rows:
        writer.writerow([json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else v for v in row.values()])
    return out.getvalue().encode()


def arrow_bytes(rows, stream):
    table = pa.Table.from_pylist(rows)
    sink = pa.BufferOutputStream()
    with (pa.ipc.new_stream if stream else pa.ipc.new_file)(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=2)
    return sink.getvalue().to_pybytes()


def parquet_bytes(rows):
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows), sink, row_group_size=2)
    return sink.getvalue().to_pybytes()


WRITERS = {
    "squad.json": lambda: json.dumps(SQUAD_V2, ensure_ascii=False).encode(),
    "squad-bom.json": lambda: codecs.BOM_UTF8 + json.dumps(SQUAD_V2, ensure_ascii=False).encode(),
    "squad-utf16.json": lambda: json.dumps(SQUAD_V2, ensure_ascii=False).encode("utf-16"),
    "squad.json.gz": lambda: gzip.compress(json.dumps(SQUAD_V2).encode()),
    "qa.jsonl": lambda: jsonl_bytes(flat_rows()),
    "qa.jsonl.gz": lambda: gzip.compress(jsonl_bytes(flat_rows())),
    "qa.csv": lambda: codecs.BOM_UTF8 + csv_bytes(flat_rows()),
    "qa.tsv": lambda: csv_bytes(flat_rows(), "\t"),
    "qa.parquet": lambda: parquet_bytes(flat_rows()),
    "qa.arrow": lambda: arrow_bytes(flat_rows(), stream=False),
    "qa-stream.arrow": lambda: arrow_bytes(flat_rows(), stream=True),  # as `datasets.save_to_disk` writes
}


@pytest.mark.parametrize("name", list(WRITERS))
def test_squad_json_and_every_table_format_give_the_same_examples(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(WRITERS[name]())
    read = read_qa_file(path)
    tables = not data.is_squad_json(path)
    csv_rows = name.endswith((".csv", ".tsv"))  # a CSV row is its line: the header is line 1
    expected = [
        QAExample(e.id, e.question, e.context, e.answers, e.row + csv_rows, e.title) if tables else e for e in EXPECTED
    ]
    assert read.examples == expected
    assert read.has_impossible and read.skipped == "" and [e.impossible for e in read.examples] == [False, True, False]
    assert read.encoding == {"squad-bom.json": "utf-8-sig", "qa.csv": "utf-8-sig", "squad-utf16.json": "utf-16"}.get(
        name, "" if name.endswith((".parquet", ".arrow")) else "utf-8"
    )


def test_a_table_without_ids_names_its_rows(tmp_path):
    rows = [{k: v for k, v in row.items() if k not in ("id", "title")} for row in flat_rows()]
    (tmp_path / "qa.jsonl").write_bytes(jsonl_bytes(rows))
    read = read_qa_file(tmp_path / "qa.jsonl")
    assert [(e.id, e.row, e.title) for e in read.examples] == [("row 1", 1, ""), ("row 2", 2, ""), ("row 3", 3, "")]


def squad_with(**changes):
    """SQUAD_V2 with its first question changed."""
    document = json.loads(json.dumps(SQUAD_V2))
    document["data"][0]["paragraphs"][0]["qas"][0].update(changes)
    return document


def refusal(tmp_path, document, name="bad.json"):
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    with pytest.raises(TaskError) as refused:
        read_qa_file(path)
    return str(refused.value)


def test_an_answer_not_where_it_says_is_refused_showing_both(tmp_path):
    message = refusal(tmp_path, squad_with(answers=[{"text": "Żelazowa Wola", "answer_start": 27}]))
    assert message == (
        "bad.json, id c1: the answer 'Żelazowa Wola' is not at character 27 of its context, which reads "
        "' Żelazowa Wol' there; correct its answer_start or its text"
    )
    context = "Once upon a time, " * 8
    long = {"data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "long", "question": "Which?", "answers": [{"text": context[:100], "answer_start": 1}]}]}]}]}  # fmt: skip
    message = refusal(tmp_path, long)
    assert f"the answer '{context[:80]}…' is not at character 1" in message and f"reads '{context[1:81]}…'" in message
    assert len(message) < 300


def test_answers_outside_their_context_and_odd_answers_are_refused(tmp_path):
    assert refusal(tmp_path, squad_with(answers=[{"text": "1831.", "answer_start": 73}])) == (
        "bad.json, id c1: the answer '1831.' at character 73 lies outside its context (77 characters); "
        "correct its answer_start"
    )
    assert "lies outside its context" in refusal(tmp_path, squad_with(answers=[{"text": "F", "answer_start": -1}]))
    assert 'is not {"text": a string, "answer_start": a number}' in refusal(
        tmp_path, squad_with(answers=[{"text": "Chopin", "answer_start": "9"}])
    )
    assert "an empty answer text" in refusal(tmp_path, squad_with(answers=[{"text": "", "answer_start": 0}]))
    assert "marked is_impossible but with answers" in refusal(tmp_path, squad_with(is_impossible=True))
    rows = flat_rows()
    rows[1]["answers"] = {"text": ["x"], "answer_start": []}
    assert refusal(tmp_path, jsonl_bytes(rows).decode(), "qa.jsonl") == (
        "qa.jsonl, row 2 (id c2): 1 answer texts but 0 answer_start values; give one each"
    )
    rows[1]["answers"] = ["Chopin"]
    assert 'the answers \'["Chopin"]\' are not {"text": [...], "answer_start": [...]}' in refusal(
        tmp_path, jsonl_bytes(rows).decode(), "qa.jsonl"
    )
    (tmp_path / "qa.csv").write_text("question,context,answers\nWho?,Chopin,{not json\n", encoding="utf-8")
    with pytest.raises(TaskError, match=r"^qa.csv, row 2: the answers '\{not json' are not JSON$"):
        read_qa_file(tmp_path / "qa.csv")


def test_empty_questions_and_contexts_are_refused_naming_the_question(tmp_path):
    assert refusal(tmp_path, squad_with(question="   ")) == (
        "bad.json, id c1: an empty question; give every example a question"
    )
    assert refusal(tmp_path, squad_with(question=123)) == (
        "bad.json, id c1: the question is 123, not text; give every example its question as text"
    )
    document = json.loads(json.dumps(SQUAD_V2))
    document["data"][1]["paragraphs"][0]["context"] = " \n "
    document["data"][1]["paragraphs"][0]["qas"][0]["answers"] = []
    assert refusal(tmp_path, document) == (
        "bad.json, id p1: an empty context; give every question the text its answer is in"
    )
    rows = flat_rows()
    rows[2]["context"] = ""
    rows[2]["answers"] = {"text": [], "answer_start": []}
    assert refusal(tmp_path, jsonl_bytes(rows).decode(), "qa.jsonl").startswith("qa.jsonl, row 3 (id p1): an empty")


def test_damaged_empty_and_non_squad_files_are_refused_naming_the_file(tmp_path):
    assert refusal(tmp_path, '{"data": [{"paragraphs": [}').startswith(
        "bad.json: damaged JSON (Expecting value at line 1, column 27); a SQuAD file is one JSON document"
    )
    assert refusal(tmp_path, [{"question": "q", "context": "c"}]).startswith("bad.json: not SQuAD JSON, which is")
    assert refusal(tmp_path, {"version": "1.1"}).startswith("bad.json: not SQuAD JSON")
    assert refusal(tmp_path, {"data": [{"title": "x"}]}) == (
        'bad.json, article 1: no list of "paragraphs"; not SQuAD JSON'
    )
    assert refusal(tmp_path, {"data": [{"paragraphs": [{"qas": []}]}]}) == (
        'bad.json, article 1, paragraph 1: no "context" text; not SQuAD JSON'
    )
    assert refusal(tmp_path, {"data": []}) == "bad.json has no questions"
    (tmp_path / "empty.json").write_bytes(b"")
    with pytest.raises(
        TaskError, match=r"empty.json: the file is empty; give SQuAD .json \(also compressed\), or a table"
    ):
        read_qa_file(tmp_path / "empty.json")
    (tmp_path / "notes.txt").write_text("What? This.", encoding="utf-8")
    with pytest.raises(
        TaskError, match=r"^notes.txt: a question-answering file is SQuAD .json \(also compressed\), or a table"
    ):
        read_qa_file(tmp_path / "notes.txt")
    with pytest.raises(TaskError, match=r"a folder, not a question-answering file"):
        read_qa_file(tmp_path)
    with pytest.raises(TaskError, match=r"no such file"):
        read_qa_file(tmp_path / "missing.json")
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(json.dumps(SQUAD_V2).encode())[:-20])
    with pytest.raises(TaskError, match=r"^cut.json.gz: damaged or cut short compressed data"):
        read_qa_file(tmp_path / "cut.json.gz")
    (tmp_path / "binary.json").write_bytes(b"\x00\x01{}")
    with pytest.raises(TaskError, match=r"^binary.json: binary file"):
        read_qa_file(tmp_path / "binary.json")


def test_a_table_without_the_columns_is_refused_naming_those_it_has(tmp_path):
    (tmp_path / "qa.csv").write_text("question,passage,answer\nWho?,Chopin,Chopin\n", encoding="utf-8")
    with pytest.raises(TaskError) as refused:
        read_qa_file(tmp_path / "qa.csv")
    assert str(refused.value).startswith("qa.csv: no 'context' column (columns: question, passage, answer)")
    pq.write_table(pa.table({"question": ["Who?"], "context": ["Chopin"]}), tmp_path / "qa.parquet")
    with pytest.raises(TaskError, match=r"^qa.parquet: no 'answers' column \(columns: question, context\)"):
        read_qa_file(tmp_path / "qa.parquet")


def test_bad_lines_of_a_table_are_left_out_and_said(tmp_path):
    lines = jsonl_bytes(flat_rows()).decode().splitlines()
    (tmp_path / "qa.jsonl").write_text("\n".join([lines[0], "{not json", lines[1], "[1, 2]", lines[2]]) + "\n")
    read = read_qa_file(tmp_path / "qa.jsonl")
    assert [e.id for e in read.examples] == ["c1", "c2", "p1"]
    assert read.skipped.startswith("2 problem lines, first: line 2: invalid JSON (Expecting property name")


def test_a_file_of_unanswerable_questions_alone_is_read(tmp_path):
    document = json.loads(json.dumps(SQUAD_V2))
    for article in document["data"]:
        for qa in article["paragraphs"][0]["qas"]:
            qa.update(answers=[], is_impossible=True)
    (tmp_path / "none.json").write_text(json.dumps(document), encoding="utf-8")
    read = read_qa_file(tmp_path / "none.json")
    assert len(read.examples) == 3 and read.has_impossible and all(e.impossible for e in read.examples)


def test_squad_v1_without_is_impossible_reads_every_question_as_answerable(tmp_path):
    document = json.loads(json.dumps(SQUAD_V2))
    document["data"][0]["paragraphs"][0]["qas"].pop(1)
    for article in document["data"]:
        for qa in article["paragraphs"][0]["qas"]:
            qa.pop("is_impossible", None)
    (tmp_path / "v1.json").write_text(json.dumps(document), encoding="utf-8")
    read = read_qa_file(tmp_path / "v1.json")
    assert [e.id for e in read.examples] == ["c1", "p1"] and not read.has_impossible


def test_a_linked_file_is_read_and_never_written(tmp_path):
    target = tmp_path / "real.json"
    target.write_text(json.dumps(SQUAD_V2), encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    before = (target.read_bytes(), os.stat(target).st_mtime_ns, os.lstat(link).st_mtime_ns)
    assert read_qa_file(link).examples == EXPECTED
    assert (target.read_bytes(), os.stat(target).st_mtime_ns, os.lstat(link).st_mtime_ns) == before
    assert link.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_legacy_encoding_is_read_and_said(tmp_path):
    document = {"data": [{"title": "Café", "paragraphs": [{"context": "Un café crème.", "qas": [
        {"id": "1", "question": "Quoi?", "answers": [{"text": "café", "answer_start": 3}]}]}]}]}  # fmt: skip
    (tmp_path / "old.json").write_bytes(json.dumps(document, ensure_ascii=False).encode("cp1252"))
    read = read_qa_file(tmp_path / "old.json")
    assert read.examples[0].answers == (("café", 3),) and read.encoding == "cp1252"
    assert read.encoding_note.startswith("not valid UTF-8 (byte 0xe9 at offset")


def test_an_oversized_squad_file_is_refused_with_advice(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "MAX_JSON_BYTES", 100)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(SQUAD_V2), encoding="utf-8")
    with pytest.raises(TaskError, match=r"^big.json: longer than 0 MiB, and SQuAD JSON is read whole; write it as"):
        read_qa_file(path)


def test_escapes_of_no_character_are_refused_or_replaced(tmp_path):
    assert "holds an escape (such as \\ud800) of no character" in refusal(tmp_path, squad_with(question="Who\ud800?"))
    read_path = tmp_path / "id.json"
    read_path.write_text(json.dumps(squad_with(id="c\udc80")), encoding="utf-8")
    assert read_qa_file(read_path).examples[0].id == "c\ufffd"


def squad_shaped(values, **fields):
    """A JSON object of `fields`, or any JSON value in its place."""
    return st.fixed_dictionaries(fields) | values


ANSWER = squad_shaped(ANY_JSON, text=st.sampled_from(["Chopin", "x", ""]), answer_start=st.sampled_from([9, 0, -1]))
QA = squad_shaped(
    ANY_JSON, id=ANY_JSON, question=st.sampled_from(["Who?", " "]) | ANY_JSON, answers=st.lists(ANSWER, max_size=2)
)
PARAGRAPH = squad_shaped(ANY_JSON, context=st.sampled_from([CONTEXT, " "]) | ANY_JSON, qas=st.lists(QA, max_size=3))
SQUAD_LIKE = squad_shaped(ANY_JSON, data=st.lists(squad_shaped(ANY_JSON, paragraphs=st.lists(PARAGRAPH, max_size=2))))


@settings(max_examples=60, deadline=None)
@given(SQUAD_LIKE)
def test_any_json_document_is_read_or_refused_clearly(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("any") / "squad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    try:
        read = read_qa_file(path)
    except TaskError as exc:
        assert str(exc).startswith("squad.json") and len(str(exc)) < 400
    else:
        assert len({example.id for example in read.examples}) == len(read.examples)
        for example in read.examples:
            assert example.question.strip() and example.context.strip()
            assert all(example.context[s : s + len(t)] == t and t for t, s in example.answers)


def test_a_parquet_value_too_long_inside_the_answers_is_its_rows_problem(tmp_path, monkeypatch):
    from mlm_studio.core.data import columnar

    monkeypatch.setattr(columnar, "MAX_VALUE_CHARS", 90)  # the contexts are 77 and 68 characters long
    rows = flat_rows()
    rows[0]["answers"] = {"text": ["x" * 91], "answer_start": [0]}
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "qa.parquet")
    read = read_qa_file(tmp_path / "qa.parquet")
    assert [e.id for e in read.examples] == ["c2", "p1"]
    assert read.skipped.startswith("1 problem lines, first: row 1: the 'answers' value is longer than")


@pytest.mark.parametrize("value", ["yes", 1, 0, None, [], "true"])
def test_an_is_impossible_not_true_or_false_is_refused_naming_the_question(tmp_path, value):
    assert refusal(tmp_path, squad_with(is_impossible=value)) == (
        f"bad.json, id c1: is_impossible is {value!r}, not true or false; write true for a question with no "
        "answer, false (or nothing) for one with an answer"
    )


def test_two_questions_of_one_id_are_refused_naming_both(tmp_path):
    document = json.loads(json.dumps(SQUAD_V2))
    document["data"][1]["paragraphs"][0]["qas"][0]["id"] = "c1"
    assert refusal(tmp_path, document) == (
        "bad.json: the id c1 is given to two questions (questions 1 and 3); give each its own id, or their answers "
        "are scored as one question's"
    )
    rows = flat_rows()
    rows[2]["id"] = "c2"
    assert refusal(tmp_path, jsonl_bytes(rows).decode(), "qa.jsonl") == (
        "qa.jsonl: the id c2 is given to two questions (rows 2 and 3); give each its own id, or their answers are "
        "scored as one question's"
    )
    rows[2]["id"] = "x" * 300
    rows[1]["id"] = "x" * 300
    assert "the id " + "x" * 80 + "… is given to two questions" in refusal(
        tmp_path, jsonl_bytes(rows).decode(), "qa.jsonl"
    )


def squad_v1(**changes):
    """SQUAD_V2 as SQuAD v1.1 writes it: version 1.1, no is_impossible, every question answered; its second
    question changed."""
    document = json.loads(json.dumps(SQUAD_V2))
    document["version"] = "1.1"
    document["data"][0]["paragraphs"][0]["qas"][1] = {
        "id": "c2", "question": "When did he move?", "answers": [{"text": "1831", "answer_start": 73}]
    }  # fmt: skip
    document["data"][0]["paragraphs"][0]["qas"][0].pop("is_impossible")
    document["data"][0]["paragraphs"][0]["qas"][1].update(changes)
    return document


def read_document(tmp_path, document, name="squad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return read_qa_file(path)


def test_one_question_without_answers_leaves_a_v1_file_v1_and_is_left_out_said(tmp_path):
    """A misspelt "answers" key, or no answers, in a SQuAD v1.1 file: that question is left out and said, and the
    file stays v1.1 (no question is taken for unanswerable), with a version or without one."""
    misspelt = squad_v1(answer=[{"text": "1831", "answer_start": 73}])
    del misspelt["data"][0]["paragraphs"][0]["qas"][1]["answers"]
    read = read_document(tmp_path, misspelt)
    assert [e.id for e in read.examples] == ["c1", "p1"] and not read.has_impossible
    assert read.skipped == '1 problem lines, first: question 2: id c2 has no "answers" (its keys: id, question, answer)'
    del misspelt["version"]  # no version, no is_impossible: SQuAD v1.1 too
    assert read_document(tmp_path, misspelt).skipped == read.skipped
    read = read_document(tmp_path, squad_v1(answers=[]))
    assert [e.id for e in read.examples] == ["c1", "p1"] and not read.has_impossible
    assert read.skipped == (
        "1 problem lines, first: question 2: id c2 has no answers, and a SQuAD v1.1 file (no version 2.0, no "
        "is_impossible) asks only questions with one"
    )


@pytest.mark.parametrize("version", ["v2.0", "2.0", 2.0])
def test_a_v2_file_is_known_by_its_version_or_its_is_impossible_fields(tmp_path, version):
    """Said by its version alone, a question with empty answers is unanswerable; one without an "answers" list,
    or marked is_impossible false without answers, is left out and said; is_impossible true needs no list."""
    document = squad_v1(answers=[])
    document["version"] = version
    read = read_document(tmp_path, document)
    assert [(e.id, e.impossible) for e in read.examples] == [("c1", False), ("c2", True), ("p1", False)]
    assert read.has_impossible and read.skipped == ""
    qas = document["data"][0]["paragraphs"][0]["qas"]
    qas[1] = {"id": "c2", "question": "When did he die?", "is_impossible": True}
    qas.append({"id": "c3", "question": "Where?", "answer": [{"text": "Paris", "answer_start": 70}]})
    qas.append({"id": "c4", "question": "Who?", "answers": [], "is_impossible": False})
    read = read_document(tmp_path, document)
    assert [(e.id, e.impossible) for e in read.examples] == [("c1", False), ("c2", True), ("p1", False)]
    assert read.skipped == (
        '2 problem lines, first: question 3: id c3 has no "answers" (its keys: id, question, answer); write '
        '"answers": [] and "is_impossible": true for a question without one'
    )
    del document["version"]  # its is_impossible fields alone say v2.0
    assert [(e.id, e.impossible) for e in read_document(tmp_path, document).examples] == [
        ("c1", False), ("c2", True), ("p1", False)
    ]  # fmt: skip


@pytest.mark.parametrize("blank", [" ", "\u200b", " \u200b\u2060 "])
def test_a_blank_answer_leaves_its_question_out_said_with_its_place(tmp_path, blank):
    """An answer of a space (or of zero-width characters, each where its context has them) would be learned as
    the words around it: its question is left out and said, in a SQuAD file and in a table."""
    context = f"Chopin was born in{blank}Żelazowa Wola."
    document = {"version": "1.1", "data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "b1", "question": "Where?", "answers": [{"text": "Żelazowa Wola", "answer_start": 18 + len(blank)}]},
        {"id": "b2", "question": "What?", "answers": [{"text": "born", "answer_start": 11},
                                                      {"text": blank, "answer_start": 18}]},
    ]}]}]}  # fmt: skip
    read = read_document(tmp_path, document)
    assert [e.id for e in read.examples] == ["b1"]
    assert read.skipped == (
        f"1 problem lines, first: question 2: id b2 has the blank answer {blank!r} at character 18 (spaces or "
        "invisible characters only; the model would learn the words around it)"
    )
    rows = [{"question": "Where?", "context": context, "answers": {"text": [blank], "answer_start": [18]}},
            {"question": "Who?", "context": context, "answers": {"text": ["Chopin"], "answer_start": [0]}}]  # fmt: skip
    (tmp_path / "qa.jsonl").write_bytes(jsonl_bytes(rows))
    read = read_qa_file(tmp_path / "qa.jsonl")
    assert [e.id for e in read.examples] == ["row 2"]
    assert read.skipped.startswith(f"1 problem lines, first: row 1: has the blank answer {blank!r} at character 18")


def test_a_file_whose_every_answer_is_blank_is_refused_in_a_sentence(tmp_path):
    document = json.loads(json.dumps(SQUAD_V2))
    document["data"][0]["paragraphs"][0]["qas"][0]["answers"] = [{"text": " ", "answer_start": 27}]
    document["data"][1]["paragraphs"][0]["qas"][0]["answers"] = [{"text": "  ", "answer_start": 37}]
    assert refusal(tmp_path, document) == (
        "bad.json: every answer is blank (2 of spaces or invisible characters only, the first at question 1 (id "
        "c1)); give each answer's text as its context writes it"
    )
    rows = flat_rows()
    for row in rows:
        row["answers"] = {
            "text": [" "] * len(row["answers"]["text"]),
            "answer_start": [27] * len(row["answers"]["text"]),
        }
    rows[0]["context"] = rows[2]["context"] = CONTEXT
    assert refusal(tmp_path, jsonl_bytes(rows).decode(), "qa.jsonl") == (
        "qa.jsonl: every answer is blank (3 of spaces or invisible characters only, the first at row 1 (id c1)); "
        "give each answer's text as its context writes it"
    )


@pytest.mark.parametrize("invisible", ["\u200b", "\u200b\u200c\ufeff", " \u2060\n"])
def test_a_question_or_context_of_invisible_characters_only_is_refused_naming_it(tmp_path, invisible):
    """What `predict` refuses as holding no character the model reads is refused in a training file too."""
    assert refusal(tmp_path, squad_with(question=invisible)) == (
        f"bad.json, id c1: an empty question ({invisible!r}: invisible characters only); give every example a question"
    )
    document = json.loads(json.dumps(SQUAD_V2))
    document["data"][1]["paragraphs"][0]["context"] = invisible
    document["data"][1]["paragraphs"][0]["qas"][0].update(answers=[], is_impossible=True)
    assert refusal(tmp_path, document) == (
        f"bad.json, id p1: an empty context ({invisible!r}: invisible characters only); give every question the "
        "text its answer is in"
    )
    rows = flat_rows()
    rows[1]["question"] = invisible
    assert refusal(tmp_path, jsonl_bytes(rows).decode(), "qa.jsonl").startswith(
        f"qa.jsonl, row 2 (id c2): an empty question ({invisible!r}"
    )
