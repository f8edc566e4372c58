"""Masking throughput, batch 32×128, 80/10/10: MLM Studio's Masker against transformers'
`DataCollatorForLanguageModeling.torch_mask_tokens`, side by side in one process, same threads.

Run: python benchmarks/bench_masking.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import alternate, machine, peer_tokenizer, summary

from mlm_studio.core.config.sections import DataConfig, MaskingConfig, TokenizerConfig
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.dataset import split_blocks, tokenize_corpus
from mlm_studio.core.data.masking import Masker
from mlm_studio.core.data.tokenizer import train_tokenizer

BATCH, LENGTH, CALLS = 32, 128, 200


def main() -> None:
    from transformers import DataCollatorForLanguageModeling

    corpus = load_corpus([ensure_builtin_corpus()])
    tokenizer = train_tokenizer(corpus.iter_documents(), TokenizerConfig(vocab_size=30000), corpus.documents)
    blocks = split_blocks(tokenize_corpus(corpus, tokenizer), DataConfig(max_seq_len=LENGTH), tokenizer)[0]
    batch = blocks.batch(np.arange(BATCH))
    ids = torch.from_numpy(batch.input_ids)
    words = torch.from_numpy(batch.word_ids)
    special_mask = torch.from_numpy(tokenizer.special_mask())[ids]

    hf_tokenizer = peer_tokenizer(tokenizer)
    collator = DataCollatorForLanguageModeling(hf_tokenizer, mlm_probability=0.15, return_tensors="pt")
    generator = torch.Generator().manual_seed(0)
    maskers = {s: Masker.for_tokenizer(MaskingConfig(strategy=s), tokenizer) for s in ("token", "whole_word", "span")}

    def repeat(fn):
        return lambda: [fn() for _ in range(CALLS)]

    candidates = {
        "MLM Studio Masker (token)": repeat(lambda: maskers["token"](ids, words, generator)),
        "transformers torch_mask_tokens": repeat(lambda: collator.torch_mask_tokens(ids.clone())),
        "transformers torch_mask_tokens + special_tokens_mask": repeat(
            lambda: collator.torch_mask_tokens(ids.clone(), special_tokens_mask=special_mask)
        ),
        "MLM Studio Masker (whole_word)": repeat(lambda: maskers["whole_word"](ids, words, generator)),
        "MLM Studio Masker (span)": repeat(lambda: maskers["span"](ids, words, generator)),
    }
    times = alternate(candidates, repeats=5)
    tokens = BATCH * LENGTH * CALLS
    ours = statistics.median(times["MLM Studio Masker (token)"])
    print(f"Masking {BATCH}×{LENGTH}, {CALLS} calls per repeat, 5 repeats alternated; {machine()}")
    print("| masker | time per call, median (spread) | tokens/s | time ÷ MLM Studio (token) |")
    print("|---|---|---|---|")
    for name, seconds in times.items():
        median = statistics.median(seconds)
        per_call = [s / CALLS for s in seconds]
        print(f"| {name} | {summary(per_call)} | {tokens / median:,.0f} | {median / ours:.1f}× |")


if __name__ == "__main__":
    main()
