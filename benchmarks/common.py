"""Side-by-side timing helpers shared by the benchmarks (their results are in docs/performance.md)."""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable

import torch


def alternate(candidates: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1) -> dict[str, list[float]]:
    """Seconds per call of each candidate, measured in turns (A, B, A, B, …) after warm-up calls."""
    for fn in candidates.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def summary(seconds: list[float]) -> str:
    """Median and spread (min–max) of some timings, in milliseconds."""
    ms = [s * 1000 for s in seconds]
    return f"{statistics.median(ms):.2f} ms ({min(ms):.2f}–{max(ms):.2f})"


def machine() -> str:
    threads = torch.get_num_threads()
    return f"{platform.machine()}, {threads} threads, torch {torch.__version__}, Python {platform.python_version()}"


def peer_tokenizer(tokenizer):
    """Our tokenizer as the `transformers` peer uses it."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer.backend,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def peer_model(config):
    """The `transformers` masked-LM of our ModelConfig's family and shape (`BertForMaskedLM`, …), read from the
    config.json an export would write."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    from mlm_studio.core.config.families import FAMILIES

    values = FAMILIES[config.family].to_hf(config)
    return AutoModelForMaskedLM.from_config(AutoConfig.for_model(values.pop("model_type"), **values))
