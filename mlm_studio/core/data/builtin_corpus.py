"""The built-in corpus: English prose taken from the documentation that ships inside CPython itself.

Documents are the paragraphs of `pydoc_data.topics` (the language reference behind `help()`) and of the
standard library's docstrings, read with `ast` so that no module is imported. The text is built once per
Python version, deterministically, and cached as a `.txt` file with one document per line and a blank line
between documents, so it reads the same whether documents are paragraphs or lines.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import re
import sysconfig
import warnings
from collections.abc import Iterator
from pathlib import Path

from mlm_studio.core.progress import Progress
from mlm_studio.core.storage.files import atomic_write_text
from mlm_studio.core.storage.user_folders import cache_dir

FORMAT_VERSION = 1
MIN_WORDS = 8
SKIPPED_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__", "lib2to3"}
_CODE_LINE = re.compile(r"^\s*(>>>|\.\.\.|\$ |[{}\[\]()]|[A-Za-z_][\w.]*\s*=|def |class |import |from )")
_INDENTED = re.compile(r"^\s{2,}\S")


def builtin_corpus_location() -> Path:
    """Where the built-in corpus file of this Python version is cached (it may not exist yet)."""
    return cache_dir() / f"builtin-corpus-py{sysconfig.get_python_version()}-v{FORMAT_VERSION}.txt"


def ensure_builtin_corpus(progress: Progress | None = None) -> Path:
    """The cached built-in corpus file, building it first if needed."""
    path = builtin_corpus_location()
    if not path.exists():
        atomic_write_text(path, (document + "\n\n" for document in iter_builtin_documents(progress)))
    return path


def restore_builtin_corpus(path: Path, progress: Progress | None = None) -> None:
    """Rebuild the built-in corpus if `path` is its cached file and the cache was cleared (it is rebuilt exactly,
    byte for byte, as its fingerprint shows)."""
    if not path.exists() and path.resolve() == builtin_corpus_location().resolve():
        ensure_builtin_corpus(progress)


def fingerprint(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def iter_builtin_documents(progress: Progress | None = None) -> Iterator[str]:
    """Every document of the built-in corpus, in a fixed order."""
    progress = progress or Progress()
    files = stdlib_files()
    total = len(files) + 1
    progress.report(0, total, "Reading the Python language reference")
    yield from _topic_documents()
    for done, path in enumerate(files, start=1):
        progress.check()
        if done % 50 == 0:
            progress.report(done, total, f"Reading docstrings ({path.name})")
        yield from _docstring_documents(path)
    progress.report(total, total, "Built-in corpus ready")


def _topic_documents() -> Iterator[str]:
    try:
        from pydoc_data.topics import topics
    except ImportError:  # some distributions strip pydoc_data
        return
    for name in sorted(topics):
        yield from prose_paragraphs(topics[name])


def stdlib_files() -> list[Path]:
    """The standard library's source files (tests and installed packages aside), in a fixed order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        files.extend(Path(folder) / n for n in sorted(names) if n.endswith(".py") and not n.startswith("test_"))
    return files


def _docstring_documents(path: Path) -> Iterator[str]:
    for _, doc in docstrings(path):
        yield from prose_paragraphs(doc)


def docstrings(path: Path) -> Iterator[tuple[ast.AST, str]]:
    """Each module, class and function of a source file that has a docstring, with the docstring (cleaned), read
    with `ast` (nothing imported); nothing for a file that does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError, UnicodeDecodeError):
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield node, inspect.cleandoc(doc)


def prose_paragraphs(text: str) -> Iterator[str]:
    """Paragraphs that read as prose: no code, no tables, at least MIN_WORDS words, one line each."""
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip("\n").splitlines()
        if not lines or any(_CODE_LINE.match(line) or _INDENTED.match(line) for line in lines):
            continue
        if any(set(line.strip()) <= set("=-*~^+|") for line in lines):
            continue
        paragraph = " ".join(" ".join(line.split()) for line in lines)
        if len(paragraph.split()) >= MIN_WORDS:
            yield paragraph
