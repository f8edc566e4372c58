"""What README and docs/ say that the code can check is what the code does: the commands and their options, the
corpus formats, the model families, the files and links they name; and README stays a front page."""

import argparse
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from mlm_studio.commands.parser import build_parser
from mlm_studio.core.config.families import FAMILIES, family_titles
from mlm_studio.core.data.compressed import COMPRESSIONS
from mlm_studio.core.data.formats import COLUMNAR_KINDS, TABLE_KINDS, TEXT_KINDS, kind_of
from mlm_studio.core.storage.hub_cache import PREFIX
from tests.documents import PAGES, README, ROOT, code_spans, fenced_lines, page, table, text

README_LINES = 250
# the pages that describe the command line and the window (performance.md and reliability.md also quote the
# benchmarks' options and earlier versions' behaviour)
DESCRIBING = [README, *(ROOT / "docs" / name for name in ("command-line.md", "finetuning.md", "formats.md",
                                                          "families.md", "run-folder.md", "window.md"))]  # fmt: skip
OTHER_PROGRAMS_OPTIONS = {"--index-url", "--nproc_per_node", "--check"}  # pip's, torchrun's and ruff format's
SCRIPT = re.compile(r"^python ((?:benchmarks|docs)/\S+\.py)(.*)$")  # a benchmark or docs/screenshots.py, run
OPTION = re.compile(r"(?<![\w-])--[a-z][\w-]*")
PROJECT_FOLDERS = ("mlm_studio", "tests", "benchmarks", "docs")
TRANSFORMERS_SCRIPTS = {"run_mlm.py", "run_qa.py"}  # the recipes of `transformers` the pages compare with
FORMAT_KINDS = {"plain text": "text", "Markdown": "text", "JSON Lines": "jsonl", "CSV": "csv", "TSV": "tsv",
                "Parquet": "parquet", "Arrow": "arrow"}  # fmt: skip


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    chooser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **chooser.choices}


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {name for action in parser._actions for name in action.option_strings}


def test_readme_is_a_front_page():
    lines = len(text(README).splitlines())
    assert lines <= README_LINES, f"README has {lines} lines; move reference text to a page of docs/"


def test_readmes_test_commands_are_cis_and_the_quick_loop_leaves_out_a_declared_marker():
    commands = fenced_lines(text(README).split("## Test it", 1)[1].split("\n## ", 1)[0])
    ci = text(ROOT / ".ci" / "run").splitlines()
    assert [line for line in commands if line in ci] == commands[:2], "README's test commands are not what CI runs"
    quick = re.fullmatch(r'python -m pytest -m "not (\w+)"( -n auto)?', commands[-1])
    assert re.search(rf'^markers = \[[^]]*"{quick.group(1)}: ', text(ROOT / "pyproject.toml"), flags=re.M)


def test_the_command_table_lists_every_command_and_each_its_own_options():
    parsers = commands()
    listed = set()
    for first, does in table(text(README), "| command |"):
        named = re.findall(r"`mlm-studio(?: ([a-z][a-z-]*))?", first)
        command = named[-1]  # `mlm-studio` (or `mlm-studio gui`): the window
        listed.add(command)
        unknown = set(OPTION.findall(first + does)) - options(parsers[command])
        assert not unknown, f"README's row of `mlm-studio {command}` names options it does not take: {unknown}"
    assert listed == set(parsers), "README's command table and the parser's commands differ"


def test_every_example_command_is_accepted_by_the_parser():
    examples = [line for p in (README, ROOT / "docs" / "command-line.md") for line in fenced_lines(text(p))]
    runs = [line for line in examples if line.startswith(("mlm-studio", "torchrun"))]
    assert len(runs) >= 15
    for line in runs:
        words = shlex.split(line, comments=True)
        words = words[words.index("mlm_studio") + 1 :] if words[0] == "torchrun" else words[1:]
        try:
            build_parser().parse_args(words)
        except SystemExit as refused:
            pytest.fail(f"the parser refuses this example (exit {refused.code}): {line}")


def test_every_option_the_pages_name_is_an_option_of_a_command():
    known = set().union(*map(options, commands().values())) | OTHER_PROGRAMS_OPTIONS
    for path in DESCRIBING:
        rest = re.sub(r"`python (?:benchmarks|docs)/[^`]+`", "", text(path))  # a script's own options
        unknown = set(OPTION.findall(rest)) - known
        assert not unknown, f"{path.name} names options no command takes: {sorted(unknown)}"


def test_every_script_the_pages_quote_takes_the_options_it_is_quoted_with():
    """A figure's command (`python benchmarks/bench_….py --option …`) runs as written, up to a `--` after which
    the options are those of the command it measures."""
    quoted = [SCRIPT.match(span) for p in (README, *PAGES) for span in code_spans(text(p))]
    quoted = [match for match in quoted if match]
    assert len(quoted) >= 30
    for match in quoted:
        script = ROOT / match.group(1)
        assert script.is_file(), f"{match.group(0)}: no such script"
        for option in OPTION.findall(match.group(2).split(" -- ")[0]):
            assert f'"{option}"' in text(script), f"{match.group(1)} takes no {option}"


def test_the_format_table_is_what_the_readers_read():
    rows = table(page("formats.md"), "| format |")
    plain = [row for row in rows if "compressed" not in row[0] and "Hub" not in row[0]]
    suffixes = {row[0]: re.findall(r"`(\.\w+)`", row[1]) for row in plain}
    for name, theirs in suffixes.items():
        kinds = {FORMAT_KINDS[word] for word in name.split(", ")}
        assert {kind_of(Path(f"corpus{s}")) for s in theirs} == kinds, name
    assert sorted(s for theirs in suffixes.values() for s in theirs) == sorted({*TEXT_KINDS, *COLUMNAR_KINDS})
    compressed = next(row for row in rows if "compressed" in row[0])
    assert tuple(re.findall(r"`(\.\w+)`", compressed[1])) == COMPRESSIONS
    for suffix, compression in ((s, c) for s in TEXT_KINDS for c in COMPRESSIONS):
        assert kind_of(Path(f"corpus{suffix}{compression}")) == TEXT_KINDS[suffix]
    hub = next(row for row in rows if "Hub" in row[0])
    assert hub[1].startswith(f"`{PREFIX}")
    said = re.search(r"named columns — ([\w ]+), ([\w ]+), (\w+) \(compressed or\s+not\), (\w+) or (\w+);",
                     page("formats.md"))  # fmt: skip
    assert tuple(FORMAT_KINDS[name] for name in said.groups()) == TABLE_KINDS


def test_the_family_table_is_the_registry():
    rows = table(page("families.md"), "| family |")
    assert [row[0] for row in rows] == family_titles()
    for (title, read, exported), family in zip(rows, FAMILIES.values()):
        assert re.findall(r"`([\w-]+)`", read) == [family.model_type, *family.aliases], title
        classes = re.findall(r"`(\w+For\w+)`", exported)
        assert classes[0] == family.architecture, title
        source = text(Path(importlib.util.find_spec(family.module).origin))  # read, not imported: no PyTorch here
        assert all(re.search(rf"^class {name}\(", source, flags=re.M) for name in classes), title


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a page's headings (a repeated heading's with -1, -2, … after it)."""
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        repeats = sum(1 for anchor in found if re.fullmatch(rf"{re.escape(slug)}(-\d+)?", anchor))
        found.add(f"{slug}-{repeats}" if repeats else slug)
    return found


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_every_relative_link_reaches_a_file_and_its_heading(path):
    for target in re.findall(r"\]\(([^)\s]+)\)", text(path)):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        assert linked.exists(), f"{path.name} links {target}: no such file"
        if anchor:
            assert anchor in anchors(text(linked)), f"{path.name} links {target}: no such heading"


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_every_file_of_the_project_a_page_names_is_there(path):
    """A path (`mlm_studio/…`, `tests/…::test_…`, or `core/…` inside the package) is there, and a module named
    alone (`trainer.py`) is one of the project's: a page never names where code was before it moved."""
    modules = {file.name for folder in PROJECT_FOLDERS for file in (ROOT / folder).rglob("*.py")}
    for span in code_spans(text(path)):
        if re.fullmatch(r"\w+\.py", span):
            assert span in modules | TRANSFORMERS_SCRIPTS, f"{path.name} names {span}: no such module"
        named = re.fullmatch(r"((mlm_studio|tests|benchmarks|docs|assets|core|ui|commands)/[\w./-]+)(?:::(\w+))?", span)
        if not named:
            continue
        inside = "mlm_studio" if named.group(2) in ("core", "ui", "commands") else ""  # a module named by its package
        file = ROOT / inside / named.group(1)
        assert file.exists(), f"{path.name} names {span}: no such file"
        if named.group(3):
            assert re.search(rf"def {named.group(3)}\(", text(file)), f"{path.name} names {span}: no such test"
