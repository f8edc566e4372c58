"""What the Corpus panel says of a corpus, without Qt: a source's row and details, the warning a load ends with,
and the histogram of document lengths."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlm_studio.core.data.builtin_corpus import builtin_corpus_location
from mlm_studio.core.data.corpus import Corpus, SourceReport

BUILTIN_LABEL = "Python documentation (built-in)"
COLUMNS = ("Source", "Type", "Status", "Documents", "Words", "Encoding", "Problems")
NUMBER_COLUMNS = (3, 4, 6)
ISSUES_SHOWN = 20
SKIPPED_NAMED = 3
MOST_BINS = 40


def display_name(path: Path) -> str:
    return BUILTIN_LABEL if path == builtin_corpus_location() else path.name


def source_row(report: SourceReport) -> tuple[str, ...]:
    """The sources table's cells for `report`, one per column of COLUMNS."""
    encoding = report.encoding + (" (fallback)" if report.encoding_note else "")
    return (
        display_name(report.path),
        report.kind,
        report.status,
        f"{report.documents:,}",
        f"{report.words:,}",
        encoding,
        f"{report.issue_count:,}" if report.issue_count else "",
    )


def source_details(report: SourceReport) -> str:
    """What happened to one source, its problem lines among it (the first ISSUES_SHOWN)."""
    return "\n".join(report.describe(ISSUES_SHOWN))


def loading_warning(corpus: Corpus) -> str:
    """The sources a load skipped and the problem lines it left out, in a sentence or two; empty when none."""
    skipped = [s for s in corpus.sources if not s.loaded]
    problems = sum(s.issue_count for s in corpus.sources)
    parts = []
    if skipped:
        named = "; ".join(f"{s.name} ({s.reason})" for s in skipped[:SKIPPED_NAMED])
        parts.append(f"{len(skipped)} source(s) skipped: {named}")
    if problems:
        parts.append(f"{problems} problem line(s) were not used — select a source to see which")
    return ". ".join(parts) + "." if parts else ""


@dataclass(frozen=True)
class LengthHistogram:
    """Documents counted by their length in words: `counts[i]` between `edges[i]` and `edges[i + 1]`; the last bar
    holds every document of `upper` words or more (the longest 1%) when `clipped`."""

    edges: np.ndarray
    counts: np.ndarray
    upper: int
    clipped: bool


def length_histogram(lengths: np.ndarray) -> LengthHistogram:
    upper = max(1, int(np.percentile(lengths, 99))) if len(lengths) else 1
    counts, edges = np.histogram(np.minimum(lengths, upper), bins=min(MOST_BINS, upper))
    return LengthHistogram(edges, counts, upper, bool(len(lengths) > 0 and lengths.max() > upper))
