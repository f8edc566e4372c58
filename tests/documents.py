"""README and the pages of docs/ as the tests that hold them to the code read them: their text and their tables."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def page(name: str) -> str:
    """A page of docs/ by its file name."""
    return text(ROOT / "docs" / name)


def table(markdown: str, header: str) -> list[list[str]]:
    """The rows of the table whose header row starts with `header` (`| format | suffixes |…`), each a list of cells."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:  # past the header and its |---| line
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def code_spans(markdown: str) -> list[str]:
    """The inline code of a text (`…`, possibly across a line break), its fenced blocks left out."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]


def fenced_lines(markdown: str) -> list[str]:
    """Every line of the fenced code blocks of a text."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
    return [line for block in blocks for line in block.splitlines()]


def fenced_blocks(markdown: str, language: str) -> list[str]:
    """The fenced code blocks of a text in `language` (```python), each as written."""
    return re.findall(rf"^```{language}\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
