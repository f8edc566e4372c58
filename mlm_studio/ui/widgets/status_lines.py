"""What the main window's status bar says, without Qt: the corpus, the current run and its state, the memory the
process holds."""

from __future__ import annotations

import os
import sys

NO_CORPUS = "No corpus"


def corpus_line(corpus) -> str:
    """`corpus` (a Corpus, or None) in a few words."""
    if corpus is None:
        return NO_CORPUS
    return f"Corpus: {corpus.documents:,} documents, {corpus.words:,} words"


def run_line(name: str | None, activity: str = "") -> str:
    """The run the window trains or last trained (None: none yet), and what its trainer is doing (nothing: idle)."""
    return f"Current run: {name or 'none'}" + (f" ({activity})" if activity else "")


def memory_line(resident_bytes: int) -> str:
    """The process's resident memory in MiB; nothing where the platform did not tell it."""
    return f"Memory: {resident_bytes / 2**20:,.0f} MiB" if resident_bytes else ""


def resident_memory_bytes() -> int:
    """The process's resident memory, where the platform tells it cheaply; 0 otherwise."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    if sys.platform != "win32":
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    return 0
