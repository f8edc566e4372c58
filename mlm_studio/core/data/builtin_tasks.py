"""The built-in example tasks: one labelled task of each kind, made like the built-in corpus from the docstrings of
the standard library that ships with Python (read with `ast`, nothing imported or downloaded), so that fine-tuning,
the Evaluation panel's task probe and Try it work before anyone brings a file of their own.

- `classification`: which standard-library package a docstring sentence comes from (`PACKAGES`, at most
  `PER_PACKAGE` sentences each): each package has its own words (headers and MIME parts, coroutines and event
  loops, loggers and handlers…), so the label can be learned from the text.
- `pairs`: whether two such sentences come from the same package ("same") or from two ("different"), half each:
  classification of text pairs, the second text in the `text_pair` column.
- `tokens`: a tag per word of a docstring sentence: `B-NAME` for a Python name written as code (a dotted name,
  a name with an underscore, `name()`), `B-NUMBER` for a number, `B-CONSTANT` for True, False and None, `O` for
  the rest; at most `TAGGED` sentences, each with one tag besides `O` at least.
- `qa`: "What does NAME() in MODULE return?", answered by the span after "Return" in the first paragraph of the
  function's docstring (the context), up to the end of its clause.

Each is three JSON Lines files given apart (training, validation, test: `SPLIT_SHARES`, each text's part by its
hash, so the split is the same on every machine with the same Python); a text appears once in a task (copies as an
uncased tokenizer reads them removed), so no validation or test text is a training text — and a pair's two texts,
and a question's context, are never in two parts. The files are written once per Python version into the cache
folder, byte for byte the same each time they are written."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sysconfig
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mlm_studio.core.data.builtin_corpus import docstrings, prose_paragraphs, stdlib_files
from mlm_studio.core.data.copies import SPLIT_SHARES
from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.files import atomic_write_folder
from mlm_studio.core.storage.user_folders import cache_dir

FORMAT_VERSION = 1
# the examples, by name, and the kind of fine-tuning each is (pairs: a classification of two texts)
EXAMPLE_KINDS = {"classification": "classification", "pairs": "classification", "tokens": "tokens", "qa": "qa"}
PARTS = ("train", "validation", "test")  # each example's files, as a fine-tuning task names them
PACKAGES = ("asyncio", "email", "http", "importlib", "logging", "unittest", "xml")  # in every Python since 3.8
PER_PACKAGE, TAGGED = 300, 2500
MIN_WORDS, MAX_WORDS = 6, 40  # of a sentence kept
MAX_ANSWER_WORDS = 12
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(])")
_WORD = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\(\))?|\d+(?:\.\d+)?|\S")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_RETURN = re.compile(r"(?:^|(?<=[.!?] ))Returns? ")
_CLAUSE_END = re.compile(r"\.(?=\s|$)|[;:]|,\s|\s(?:if|when|unless|or raise|otherwise)\s")


@dataclass(frozen=True)
class BuiltinTask:
    """A built-in example task: its name, the kind of fine-tuning it is, a title, and its three files."""

    name: str
    kind: str  # "classification" | "tokens" | "qa" (pairs are a classification with a second text)
    title: str
    folder: Path

    @property
    def files(self) -> tuple[Path, Path, Path]:
        """Its training, validation and test files."""
        return tuple(self.folder / f"{self.name}-{part}.jsonl" for part in PARTS)

    @property
    def train(self) -> Path:
        return self.files[0]


TITLES = {
    "classification": "which standard-library package a docstring sentence comes from",
    "pairs": "whether two docstring sentences come from the same package (text pairs)",
    "tokens": "Python names, numbers and constants among a docstring sentence's words",
    "qa": "what a standard-library function returns, answered from its docstring",
}
BUILTIN_TASKS = tuple(EXAMPLE_KINDS)  # the examples, by name


def builtin_tasks_location() -> Path:
    """The folder that holds this Python version's built-in example tasks (it may not exist yet)."""
    return cache_dir() / f"builtin-tasks-py{sysconfig.get_python_version()}-v{FORMAT_VERSION}"


def builtin_task(name: str, progress: Progress | None = None) -> BuiltinTask:
    """The built-in example task `name` (one of `BUILTIN_TASKS`), its files written first if they are not there."""
    task = _task(name, builtin_tasks_location())
    if not all(path.is_file() for path in task.files):
        atomic_write_folder(task.folder, lambda tmp: _write_all(tmp, progress))
    return task


def builtin_task_of(path: Path) -> BuiltinTask | None:
    """The built-in example task whose training file `path` is (its validation and test files then come with it),
    or None; the files are written again if the cache was cleared."""
    for name in BUILTIN_TASKS:
        if Path(path).resolve() == _task(name, builtin_tasks_location()).train.resolve():
            return builtin_task(name)
    return None


def _task(name: str, folder: Path) -> BuiltinTask:
    return BuiltinTask(name, EXAMPLE_KINDS[name], TITLES[name], folder)


def _write_all(folder: Path, progress: Progress | None) -> None:
    sources = _Sources.read(progress)
    parts = {
        "classification": _split(sources.labelled, lambda row: (row["text"],), stratify="label"),
        "tokens": _split(sources.tagged, lambda row: (" ".join(row["tokens"]),)),
        "qa": _split(sources.questions, lambda row: (row["context"],)),
    }
    parts["pairs"] = tuple(_pairs(part) for part in parts["classification"])
    for name, split in parts.items():
        for path, rows in zip(_task(name, folder).files, split, strict=True):
            path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


@dataclass
class _Sources:
    """The rows of the three kinds of task, each text once, read from the standard library's docstrings."""

    labelled: list[dict]
    tagged: list[dict]
    questions: list[dict]

    @classmethod
    def read(cls, progress: Progress | None = None) -> _Sources:
        progress = progress or Progress()
        root = Path(sysconfig.get_paths()["stdlib"])
        by_package: dict[str, list[str]] = {package: [] for package in PACKAGES}
        tagged, questions = [], []
        files = stdlib_files()
        for done, path in enumerate(files):
            progress.check()
            if done % 50 == 0:
                progress.report(done, len(files), f"Making the built-in example tasks ({path.name})")
            parts = path.relative_to(root).parts
            for node, doc in docstrings(path):
                sentences = [s for paragraph in prose_paragraphs(doc) for s in _sentences(paragraph)]
                if parts[0] in by_package:
                    by_package[parts[0]].extend(sentences)
                tagged.extend(sentences)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                    module = ".".join(parts).removesuffix(".py").removesuffix(".__init__")
                    question = _question(node.name, module, doc)
                    if question is not None:
                        questions.append(question)
        progress.report(len(files), len(files), "Built-in example tasks ready")
        labelled = [
            {"text": text, "label": package}
            for package, texts in by_package.items()
            for text in _first_by_hash(_distinct(texts), PER_PACKAGE, exclude=_shared(by_package))
        ]
        rows = _distinct_rows(map(_tags, _first_by_hash(tagged, len(tagged))), lambda row: " ".join(row["tokens"]))
        questions = _distinct_rows(_distinct_rows(questions, lambda row: row["context"]), lambda row: row["id"])
        return cls(labelled, [row for row in rows if set(row["tags"]) != {"O"}][:TAGGED], list(questions))


def _sentences(paragraph: str) -> Iterator[str]:
    for sentence in _SENTENCE_END.split(paragraph):
        if MIN_WORDS <= len(sentence.split()) <= MAX_WORDS:
            yield sentence


def _key(text: str) -> str:
    """A text as an uncased tokenizer reads it, spacing aside: two texts of one key are copies."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def _rank(text: str) -> bytes:
    return hashlib.blake2b(_key(text).encode("utf-8", "surrogatepass"), digest_size=8).digest()


def _distinct(texts: Iterable[str]) -> list[str]:
    return list(_distinct_rows(texts, lambda text: text))


def _distinct_rows(rows: Iterable, text_of) -> Iterator:
    seen: set[str] = set()
    for row in rows:
        key = _key(text_of(row))
        if key not in seen:
            seen.add(key)
            yield row


def _shared(by_package: dict[str, list[str]]) -> set[str]:
    """The texts (as keys) that more than one package holds: no label is true of them alone."""
    counts: dict[str, int] = {}
    for texts in by_package.values():
        for key in {_key(text) for text in texts}:
            counts[key] = counts.get(key, 0) + 1
    return {key for key, count in counts.items() if count > 1}


def _first_by_hash(texts: list[str], count: int, exclude: set[str] = frozenset()) -> list[str]:
    """The `count` texts whose hash ranks lowest: a sample that is the same whatever order the texts came in."""
    return sorted((text for text in texts if _key(text) not in exclude), key=_rank)[:count]


def _split(rows: list[dict], texts_of, stratify: str = "") -> tuple[list[dict], list[dict], list[dict]]:
    """Training, validation and test rows in `SPLIT_SHARES`, each row's part by the hash of its texts (within each
    value of `stratify`, when given), each part in that order."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row[stratify] if stratify else "", []).append(row)
    parts: tuple[list[dict], list[dict], list[dict]] = ([], [], [])
    for group in groups.values():
        ranked = sorted(group, key=lambda row: _rank("\0".join(texts_of(row))))
        held = max(1, round(len(ranked) * SPLIT_SHARES[1]))
        parts[1].extend(ranked[:held])
        parts[2].extend(ranked[held : 2 * held])
        parts[0].extend(ranked[2 * held :])
    return parts


def _pairs(rows: list[dict]) -> list[dict]:
    """Each sentence of a part paired with another of the same part: of its own package for every other one
    ("same"), else of the next package ("different"), so half are each."""
    by_package: dict[str, list[str]] = {}
    for row in rows:
        by_package.setdefault(row["label"], []).append(row["text"])
    packages = sorted(by_package)
    pairs = []
    for number, package in enumerate(packages):
        own, other = by_package[package], by_package[packages[(number + 1) % len(packages)]]
        for index, text in enumerate(own):
            same = index % 2 == 0
            second = own[(index + 1) % len(own)] if same else other[index % len(other)]
            pairs.append({"text": text, "text_pair": second, "label": "same" if same else "different"})
    return pairs


def _tags(sentence: str) -> dict:
    words = _WORD.findall(sentence)
    return {"tokens": words, "tags": [_tag(word) for word in words]}


def _tag(word: str) -> str:
    if word in ("True", "False", "None"):
        return "B-CONSTANT"
    if _NUMBER.fullmatch(word):
        return "B-NUMBER"
    dotted = "." in word.removesuffix("()") and all(len(part) > 1 for part in word.removesuffix("()").split("."))
    if word.endswith("()") or dotted or ("_" in word and any(c.isalpha() for c in word)):
        return "B-NAME"
    return "O"


def _question(name: str, module: str, doc: str) -> dict | None:
    """What the function `name` returns, asked of the first paragraph of its docstring, answered by the clause
    after its first "Return"; None where it says none in a clause of at most `MAX_ANSWER_WORDS` words."""
    context = next(prose_paragraphs(doc.split("\n\n")[0]), "")
    found = _RETURN.search(context)
    if found is None:
        return None
    start = found.end()
    end = _CLAUSE_END.search(context, start)
    answer = context[start : end.start() if end else len(context)].rstrip(" .")
    if not 1 <= len(answer.split()) <= MAX_ANSWER_WORDS or answer.count("(") != answer.count(")"):
        return None
    return {
        "id": f"{module}.{name}",
        "question": f"What does {name}() in {module} return?",
        "context": context,
        "answers": {"text": [answer], "answer_start": [start]},
    }
