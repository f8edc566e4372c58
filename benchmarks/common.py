"""Side-by-side timing helpers shared by the benchmarks (their results are in docs/performance.md)."""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

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


def side_by_side(results: dict[str, list[dict]], scores: dict[str, str]) -> str:
    """Two sides' runs of one recipe as a table: their mean tokens/s and seconds, each of `scores` (key: column) as
    mean ± population spread over the seeds, and the first side's tokens/s over the second's for each seed."""
    header = "| | tokens/s | seconds | " + " | ".join(scores.values()) + " |"
    lines = [header, "|---" * (2 + len(scores)) + "|---|"]
    for name, runs in results.items():
        cells = [statistics.fmean(r[key] for r in runs) for key in ("tokens_per_s", "seconds")]
        spread = [f"{statistics.fmean(r[k] for r in runs):.1%} ± {statistics.pstdev(r[k] for r in runs):.1%}"
                  for k in scores]  # fmt: skip
        lines.append(f"| {name} | {cells[0]:,.0f} | {cells[1]:.1f} | " + " | ".join(spread) + " |")
    ratios = [o["tokens_per_s"] / t["tokens_per_s"] for o, t in zip(*results.values(), strict=True)]
    return "\n".join(lines) + f"\ntokens/s ratio per seed: {', '.join(f'{r:.2f}×' for r in ratios)}"


def timed_finetune(out: Path, model: Path, options) -> tuple[dict, object]:
    """MLM Studio fine-tuning `model` into `out` with `options`, from the start to the test: its wall seconds and
    training tokens/s (the training examples' tokens, padding excluded, times the epochs), and its test record."""
    from mlm_studio.core.finetune.setup import prepare_finetuner  # only the fine-tuning benchmarks load it
    from mlm_studio.core.runs.records import TestRecord

    tuner = prepare_finetuner(out, str(model), options)
    tokens = sum(len(ids) for ids in tuner.data.train.ids) * options.epochs
    start = time.perf_counter()
    records = list(tuner.run())
    seconds = time.perf_counter() - start
    test = next(r for r in records if isinstance(r, TestRecord))
    return {"seconds": seconds, "tokens_per_s": tokens / seconds}, test


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
