"""Extractive question-answering files: SQuAD v1.1 and v2.0 JSON (`data → paragraphs → context, qas`), and flat
tables (JSON Lines, CSV, TSV, Parquet, Arrow) with `question`, `context` and `answers` in the `datasets` layout
(`{"text": [...], "answer_start": [...]}`, a JSON string in CSV), `id` and `title` if they are there. A SQuAD file
is v2.0, where a question may have no answer, when its `version` says 2 or a question carries `is_impossible`;
else v1.1, where every question has an answer, whatever one question holds. Every answer is checked against its
context (`context[start:start + len(text)] == text`). A question that cannot be learned as written (none of the
answers v1.1 needs, an answer of spaces or invisible characters only) is left out and said with its place, as the
other readers leave out a row; a file whose answer is not where it says, whose question or context is empty (or
invisible characters only), whose `is_impossible` is not true or false, where two questions share an id (their
answers would be scored as one) or where every answer is blank is refused, naming the question, never mended
silently. Tables are read by the corpus reader (streaming, every value bounded); a SQuAD JSON file is one
document, read whole up to `MAX_JSON_BYTES`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from mlm_studio.core.data.compressed import COMPRESSIONS, damage_errors, opened
from mlm_studio.core.data.formats import TABLE_FORMATS, TABLE_KINDS, kind_of, read_decoded, records, sniff_encoding
from mlm_studio.core.data.labelled import ROW, TaskError, column_names
from mlm_studio.core.data.rows import LONE_SURROGATE, IssueLog, SourceSkipped, clipped, is_blank
from mlm_studio.core.shown import shown
from mlm_studio.core.storage.json_text import read_json

MAX_JSON_BYTES = 256 << 20  # a SQuAD JSON file is read whole: SQuAD v2.0's training file is 42 MB
QA_FORMATS = f"SQuAD .json (also compressed), or a table with question, context and answers columns ({TABLE_FORMATS})"
OPTIONAL_COLUMNS = ("id", "title")


@dataclass(frozen=True)
class QAExample:
    """A question about a context and its answers, each (text, its first character in the context)."""

    id: str  # the SQuAD id, else "row N"
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]  # checked: context[start:start + len(text)] == text
    row: int  # its question's ordinal in a SQuAD file, its line or row in a table
    title: str = ""  # the article's title ("" where none): the contexts of one article share it

    @property
    def impossible(self) -> bool:
        """Whether the question has no answer in its context (SQuAD v2.0's `is_impossible`)."""
        return not self.answers


@dataclass(frozen=True)
class QAFile:
    path: Path
    examples: list[QAExample]
    has_impossible: bool  # some question has no answer (SQuAD v2.0)
    skipped: str  # the rows left out, in words ("" for none)
    encoding: str = ""
    encoding_note: str = ""  # why it was read in a fallback encoding ("" when it was not)


def is_squad_json(path: Path) -> bool:
    """Whether a file's name says SQuAD JSON (`.json`, also compressed)."""
    suffixes = [s.lower() for s in path.suffixes[-2:]]
    if suffixes and suffixes[-1] in COMPRESSIONS:
        suffixes = suffixes[:-1]
    return bool(suffixes) and suffixes[-1] == ".json"


def read_qa_file(path: str | Path) -> QAFile:
    """The questions of a SQuAD JSON file or a flat table, every answer checked. TaskError says why a file cannot
    serve, naming it and the question (its id or row)."""
    path = Path(path)
    if path.is_dir():
        raise TaskError(f"{path}: a folder, not a question-answering file; give the file itself")
    if not path.exists():
        raise TaskError(f"{path}: no such file")
    if not path.is_file():
        raise TaskError(f"{path}: not a regular file (a device or a pipe); give a question-answering file")
    if path.stat().st_size == 0:
        raise TaskError(f"{path}: the file is empty; give {QA_FORMATS}")
    try:
        if is_squad_json(path):
            (examples, reading), encoding, note = _squad(path)
        elif kind_of(path) in TABLE_KINDS:
            (examples, reading), encoding, note = _table(path)
        else:
            raise TaskError(f"{path.name}: a question-answering file is {QA_FORMATS}")
    except SourceSkipped as exc:
        raise TaskError(f"{path.name}: {exc}") from None
    except OSError as exc:
        raise TaskError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    reading.check_some_answer(path)
    issues = reading.issues
    if not examples:
        raise TaskError(f"{path.name} has no questions" + (f" ({issues.summary()})" if issues.count else ""))
    _check_ids_unique(path, examples, "question" if is_squad_json(path) else "row")
    has_impossible = any(example.impossible for example in examples)
    return QAFile(path, examples, has_impossible, issues.summary(), encoding, note)


@dataclass
class _Reading:
    """What reading a file found beside its questions: those left out (`issues`), and its answers, blank or not."""

    unit: str  # how the file counts its questions: "question" (SQuAD) or "row" (a table)
    issues: IssueLog = field(default_factory=IssueLog)
    answers: int = 0
    blank: int = 0
    first_blank: str = ""  # where the first blank answer is

    def usable(self, place: str, row: int, identifier: str | None, answers: tuple[tuple[str, int], ...]) -> bool:
        """Whether no answer of a question is blank; a question with one is left out, said with its place."""
        self.answers += len(answers)
        blank = [(text, start) for text, start in answers if is_blank(text)]
        if not blank:
            return True
        self.blank += len(blank)
        self.first_blank = self.first_blank or place
        text, start = blank[0]
        self.leave_out(row, identifier, f"has the blank answer {shown(text)} at character {start} (spaces or "
                       "invisible characters only; the model would learn the words around it)")  # fmt: skip
        return False

    def leave_out(self, row: int, identifier: str | None, problem: str) -> None:
        self.issues.add(row, f"id {clipped(identifier)} {problem}" if identifier is not None else problem, self.unit)

    def check_some_answer(self, path: Path) -> None:
        """TaskError when every answer of the file is blank: nothing is left to learn answers from."""
        if self.answers and self.blank == self.answers:
            raise TaskError(
                f"{path.name}: every answer is blank ({self.answers:,} of spaces or invisible characters only, the "
                f"first at {self.first_blank}); give each answer's text as its context writes it"
            )


def _check_ids_unique(path: Path, examples: list[QAExample], counted: str) -> None:
    """TaskError naming the first id two questions share: their predictions would be scored as one question's."""
    first_with: dict[str, QAExample] = {}
    for example in examples:
        earlier = first_with.setdefault(example.id, example)
        if earlier is not example:
            raise TaskError(
                f"{path.name}: the id {clipped(example.id)} is given to two questions ({counted}s {earlier.row} and "
                f"{example.row}); give each its own id, or their answers are scored as one question's"
            )


def _squad(path: Path) -> tuple[tuple[list[QAExample], _Reading], str, str]:
    """The questions of a SQuAD JSON file, in order, and what its reading found; the encoding read, why it fell
    back or ""."""
    encoding = sniff_encoding(path)
    try:
        with opened(path) as (raw, _):
            data = raw.read(MAX_JSON_BYTES + 1)
    except damage_errors() as exc:
        raise SourceSkipped(f"damaged or cut short compressed data ({clipped(str(exc), 200)})") from None
    if len(data) > MAX_JSON_BYTES:
        raise TaskError(
            f"{path.name}: longer than {MAX_JSON_BYTES >> 20} MiB, and SQuAD JSON is read whole; write it as "
            "JSON Lines of {question, context, answers}, which are read a line at a time"
        )
    try:
        text, note = data.decode(encoding), ""
    except UnicodeDecodeError as exc:
        if encoding != "utf-8":
            raise TaskError(f"{path.name}: not valid {encoding} ({exc.reason} at byte {exc.start})") from None
        text, encoding = data.decode("cp1252", errors="replace"), "cp1252"
        note = f"not valid UTF-8 (byte {exc.object[exc.start]:#04x} at offset {exc.start}): read as cp1252"
    del data
    try:
        document = read_json(text)
    except json.JSONDecodeError as exc:
        raise TaskError(
            f"{path.name}: damaged JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "a SQuAD file is one JSON document"
        ) from None
    except ValueError as exc:
        raise TaskError(f"{path.name}: unreadable JSON ({exc})") from None
    return _squad_examples(path, document), encoding, note


def _squad_examples(path: Path, document) -> tuple[list[QAExample], _Reading]:
    """The questions of a parsed SQuAD document, each checked, and those left out; TaskError names the first that
    is not SQuAD's."""
    articles = document.get("data") if isinstance(document, dict) else None
    if not isinstance(articles, list):
        raise TaskError(
            f'{path.name}: not SQuAD JSON, which is {{"data": [{{"title", "paragraphs": [{{"context", '
            '"qas"}]}]}; give a SQuAD file, or a table (JSON Lines) of question, context and answers'
        )
    version_two = _is_version_two(document, articles)
    examples: list[QAExample] = []
    reading, row = _Reading("question"), 0
    for a, article in enumerate(articles, start=1):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise TaskError(f'{path.name}, article {a}: no list of "paragraphs"; not SQuAD JSON')
        title = _text(article.get("title", ""))
        for p, paragraph in enumerate(paragraphs, start=1):
            where = f"article {a}, paragraph {p}"
            if not isinstance(paragraph, dict) or not isinstance(paragraph.get("qas"), list):
                raise TaskError(f'{path.name}, {where}: no list of "qas" (questions); not SQuAD JSON')
            context = paragraph.get("context")
            if not isinstance(context, str):
                raise TaskError(f'{path.name}, {where}: no "context" text; not SQuAD JSON')
            for qa in paragraph["qas"]:
                row += 1
                if not isinstance(qa, dict):
                    raise TaskError(f"{path.name}, {where}: question {row} is not an object; not SQuAD JSON")
                example = _squad_question(path, qa, row, context, title, version_two, reading)
                if example is not None:
                    examples.append(example)
    return examples, reading


def _squad_question(
    path: Path, qa: dict, row: int, context: str, title: str, version_two: bool, reading: _Reading
) -> QAExample | None:
    """A SQuAD question checked (TaskError names it), or None when it is left out (said in `reading`)."""
    identifier = _text(qa.get("id", f"row {row}"))
    name = f"{path.name}, id {clipped(identifier)}"
    answers = _answers(name, qa.get("answers", []))
    _check_impossible(name, qa.get("is_impossible", False), answers)
    example = _checked(name, QAExample(identifier, _question(name, qa.get("question")), context, answers, row, title))
    missing = "" if answers else _why_unanswered(qa, version_two)
    if missing:
        reading.leave_out(row, identifier, missing)
        return None
    return example if reading.usable(f"question {row} (id {clipped(identifier)})", row, identifier, answers) else None


def _is_version_two(document: dict, articles: list) -> bool:
    """Whether a SQuAD file is v2.0, where a question may have no answer: its `version` says 2, or a question has
    v2.0's `is_impossible`. One question's answers never decide it."""
    said = re.match(r"v?(\d+)", str(document.get("version", "")).strip().lower())
    if said is not None and said.group(1) == "2":
        return True
    return any(
        isinstance(qa, dict) and "is_impossible" in qa
        for article in articles
        if isinstance(article, dict) and isinstance(article.get("paragraphs"), list)
        for paragraph in article["paragraphs"]
        if isinstance(paragraph, dict) and isinstance(paragraph.get("qas"), list)
        for qa in paragraph["qas"]
    )


def _why_unanswered(qa: dict, version_two: bool) -> str:
    """Why a question without answers cannot be read as unanswerable ("" when it is one, as SQuAD v2.0 writes
    it: no answers, and `is_impossible` true or left out)."""
    if "answers" not in qa and qa.get("is_impossible") is not True:
        keys = clipped(", ".join(clipped(_text(key), 40) for key in qa))
        return f'has no "answers" (its keys: {keys})' + (
            '; write "answers": [] and "is_impossible": true for a question without one' if version_two else ""
        )
    if not version_two:
        return "has no answers, and a SQuAD v1.1 file (no version 2.0, no is_impossible) asks only questions with one"
    if qa.get("is_impossible") is False:
        return "has no answers but is marked is_impossible false; give its answers, or mark it true"
    return ""


def _check_impossible(name: str, impossible, answers: tuple) -> None:
    """TaskError unless a question's `is_impossible` is true or false, and true only for one without answers."""
    if not isinstance(impossible, bool):
        raise TaskError(
            f"{name}: is_impossible is {shown(impossible)}, not true or false; write true for a question with no "
            "answer, false (or nothing) for one with an answer"
        )
    if impossible and answers:
        raise TaskError(f"{name}: marked is_impossible but with answers; leave its answers empty, or unmark it")


def _table(path: Path) -> tuple[tuple[list[QAExample], _Reading], str, str]:
    """The questions of a flat table (an empty list of answers: a question without one, as `datasets`' SQuAD v2.0
    writes it) and what its reading found; the encoding read, why it fell back or ""."""
    kind = kind_of(path)
    names = column_names(path, kind)
    missing = [name for name in ("question", "context", "answers") if name not in names]
    if missing:
        found = clipped(", ".join(clipped(name, 40) for name in names) or "none")
        raise TaskError(
            f"{path.name}: no '{missing[0]}' column (columns: {found}); a question-answering table has question, "
            'context and answers ({"text": [...], "answer_start": [...]})'
        )
    types: dict[str, tuple[type, ...]] = {"question": (str,), "context": (str,), "answers": (object,)}
    types |= {name: (str, int) for name in OPTIONAL_COLUMNS if name in names}

    def read(encoding: str, strict: bool) -> tuple[list[QAExample], _Reading]:
        reading, examples = _Reading("row"), []
        for record in records(path, kind, encoding, types, reading.issues, strict, number_as=ROW):
            row = record[ROW]
            identifier = _text(record.get("id", f"row {row}"))
            place = f"row {row}" + (f" (id {clipped(identifier)})" if "id" in record else "")
            name = f"{path.name}, {place}"
            answers = _answers(name, _datasets_answers(name, record["answers"]))
            question = _question(name, record["question"])
            example = QAExample(identifier, question, record["context"], answers, row, _text(record.get("title", "")))
            example = _checked(name, example)
            if reading.usable(place, row, identifier if "id" in record else None, answers):
                examples.append(example)
        return examples, reading

    return read_decoded(path, read)


def _datasets_answers(name: str, value) -> list:
    """`datasets`' answers ({"text": [...], "answer_start": [...]}, or that as a JSON string) as SQuAD's list of
    {text, answer_start}."""
    if isinstance(value, str):
        try:
            value = read_json(value)
        except ValueError:
            raise TaskError(f"{name}: the answers '{clipped(value)}' are not JSON") from None
    texts = value.get("text") if isinstance(value, dict) else None
    starts = value.get("answer_start") if isinstance(value, dict) else None
    if not isinstance(texts, list) or not isinstance(starts, list):
        raise TaskError(
            f"{name}: the answers '{clipped(json.dumps(value, default=str))}' are not "
            '{"text": [...], "answer_start": [...]}'
        )
    if len(texts) != len(starts):
        raise TaskError(f"{name}: {len(texts)} answer texts but {len(starts)} answer_start values; give one each")
    return [{"text": text, "answer_start": start} for text, start in zip(texts, starts)]


def _answers(name: str, answers) -> tuple[tuple[str, int], ...]:
    """SQuAD's answers ([{text, answer_start}]) as (text, start) pairs, their types checked."""
    if not isinstance(answers, list):
        raise TaskError(f'{name}: "answers" is not a list of {{text, answer_start}}')
    found = []
    for answer in answers:
        text = answer.get("text") if isinstance(answer, dict) else None
        start = answer.get("answer_start") if isinstance(answer, dict) else None
        if not isinstance(text, str) or not isinstance(start, int) or isinstance(start, bool):
            shown = clipped(json.dumps(answer, default=str))
            raise TaskError(f'{name}: the answer {shown} is not {{"text": a string, "answer_start": a number}}')
        if not text:
            raise TaskError(f"{name}: an empty answer text; leave an unanswerable question's answers empty")
        found.append((text, start))
    return tuple(found)


def _question(name: str, question) -> str:
    if not isinstance(question, str):
        raise TaskError(f"{name}: the question is {shown(question)}, not text; give every example its question as text")
    if is_blank(question):
        raise TaskError(f"{name}: an empty question{_invisible(question)}; give every example a question")
    return question.strip()


def _invisible(text: str) -> str:
    """What a blank text holds, in words, when it is more than spaces ("" when it is not)."""
    return f" ({shown(text)}: invisible characters only)" if text.strip() else ""


def _text(value) -> str:
    """An id or a title as text, an escape of no character (such as \\ud800) written as U+FFFD."""
    return LONE_SURROGATE.sub("\ufffd", value if isinstance(value, str) else str(value))


def _checked(name: str, example: QAExample) -> QAExample:
    """The example, if its context is not blank and each answer is where it says in its context."""
    context = example.context
    if is_blank(context):
        raise TaskError(f"{name}: an empty context{_invisible(context)}; give every question the text its answer is in")
    if LONE_SURROGATE.search(example.question) or LONE_SURROGATE.search(context):
        raise TaskError(f"{name}: its question or context holds an escape (such as \\ud800) of no character")
    for text, start in example.answers:
        if start < 0 or start + len(text) > len(context):
            raise TaskError(
                f"{name}: the answer '{clipped(text)}' at character {start} lies outside its context "
                f"({len(context):,} characters); correct its answer_start"
            )
        found = context[start : start + len(text)]
        if found != text:
            raise TaskError(
                f"{name}: the answer '{clipped(text)}' is not at character {start} of its context, which reads "
                f"'{clipped(found)}' there; correct its answer_start or its text"
            )
    return example
