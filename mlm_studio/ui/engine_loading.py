"""What the panels need that takes seconds to import (PyTorch, tokenizers, pyqtgraph, the engine), imported off the
GUI thread so that the window keeps repainting while it loads."""

from __future__ import annotations

import ctypes
import gc
import importlib
import importlib.util
import os
import sys
from pathlib import Path

# PyTorch's own libraries in the order they depend on one another; the largest takes a second to load
TORCH_LIBRARIES = ("libc10", "libtorch_cpu", "libtorch", "libtorch_python")
PANELS = ("corpus", "masking", "config", "training", "playground", "evaluation.panel")  # modules in ui/panels/
ENGINE_MODULES = (
    "mlm_studio.core.training.runs",
    "mlm_studio.core.evaluation.predict",
    "mlm_studio.core.data.masking_preview",
    "pyqtgraph",
    *(f"mlm_studio.ui.panels.{name}" for name in PANELS),
)


def import_engine() -> None:
    """Import the engine and the panels' modules (no widget is made); the TensorBoard writer too, so the first
    training does not import it while the window waits.

    The collector is off while they import and what they made is frozen after (never scanned again): a full
    collection among their 320,000 objects holds Python's lock, and with it the window, for 0.1-0.2 s each time.
    The collector is left as it was found (the application collects on its GUI thread's timer)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        preload_torch_libraries()
        for name in ENGINE_MODULES:
            importlib.import_module(name)
        from mlm_studio.core.runs import tensorboard

        if tensorboard.available():
            for name in tensorboard.WRITER_MODULES:
                importlib.import_module(name)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def preload_torch_libraries() -> None:
    """Load PyTorch's shared libraries through the C library's dlopen, which ctypes calls without holding Python's
    global lock; `import torch` then finds them loaded. Imported the usual way, a library loads with the lock held
    and the GUI thread, which needs it for every event, stalls for as long (1.1 s for libtorch_cpu here). Where
    this cannot be done (Windows, an unusual layout) the import loads them as usual."""
    if "torch" in sys.modules or os.name != "posix":
        return
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return
    folder = Path(spec.origin).parent / "lib"
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    try:
        libc = ctypes.CDLL(None)
        dlopen = libc.dlopen
    except (OSError, AttributeError):
        return
    dlopen.argtypes, dlopen.restype = (ctypes.c_char_p, ctypes.c_int), ctypes.c_void_p
    for name in TORCH_LIBRARIES:
        path = folder / f"{name}{suffix}"
        if path.is_file() and not dlopen(os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL):
            return  # the import reports what is wrong
