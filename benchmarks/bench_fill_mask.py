"""Fill-mask latency for one sentence: MLM Studio's predictor (exact weights, and the playground's int8 weights)
against `transformers.pipeline("fill-mask")`, all loading the same exported Hugging Face folder, alternated, same
threads. The mini preset by default.

Run: python benchmarks/bench_fill_mask.py [--preset mini]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine

from mlm_studio.core.config.presets import preset
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.models.bert import BertForMaskedLM
from mlm_studio.core.training.runs import start_run

SENTENCE = "Return a new [MASK] containing the items of the list in reverse order."


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="mini")
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    from transformers import pipeline

    corpus = load_corpus([ensure_builtin_corpus()])
    config = preset(args.preset)
    tokenizer = train_tokenizer(corpus.iter_documents(), config.tokenizer, corpus.documents)
    with tempfile.TemporaryDirectory() as tmp:
        run = start_run(Path(tmp) / "run", config, corpus, tokenizer)
        model_config = run.config.model
        model = BertForMaskedLM(model_config)
        run.save_checkpoint(0, model, torch.optim.AdamW(model.parameters()), {"tokens_seen": 0, "elapsed": 0.0}, 1)
        folder = export_model(run.path, Path(tmp) / "exported")
        ours = FillMask.from_path(folder)
        fast = FillMask.from_path(folder, int8=True)
        peer = pipeline("fill-mask", model=str(folder), device="cpu")

        ours_top = [c.token for c in ours.predict(SENTENCE, 5)[0]]
        fast_top = [c.token for c in fast.predict(SENTENCE, 5)[0]]
        peer_top = [r["token_str"].replace(" ", "") for r in peer(SENTENCE, top_k=5)]
        candidates = {
            "MLM Studio FillMask.predict": lambda: ours.predict(SENTENCE, 5),
            "MLM Studio FillMask.predict, int8 weights (playground)": lambda: fast.predict(SENTENCE, 5),
            'transformers pipeline("fill-mask")': lambda: peer(SENTENCE, top_k=5),
        }
        for fn in candidates.values():
            for _ in range(10):
                fn()
        times: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(args.calls):
            for name, fn in candidates.items():
                start = time.perf_counter()
                fn()
                times[name].append((time.perf_counter() - start) * 1000)

    print(
        f"Fill-mask, one sentence, {args.preset} preset ({model_config.num_hidden_layers}×{model_config.hidden_size}, "
        f"vocab {model_config.vocab_size}), {args.calls} calls each, alternated; {machine()}"
    )
    print(f"Same top-5 from MLM Studio and the pipeline: {ours_top == peer_top}")
    print(f"Same top-5, in order, from int8 and exact weights: {fast_top == ours_top}" + ("" if fast.int8 else
          " (int8 not available here: exact weights both times)"))  # fmt: skip
    print("| predictor | p50 | p90 | p50 ÷ MLM Studio | p50 ÷ pipeline |")
    print("|---|---|---|---|---|")
    ours_p50 = statistics.median(times["MLM Studio FillMask.predict"])
    peer_p50 = statistics.median(times['transformers pipeline("fill-mask")'])
    for name, values in times.items():
        p50 = statistics.median(values)
        print(
            f"| {name} | {p50:.2f} ms | {percentile(values, 0.9):.2f} ms | {p50 / ours_p50:.2f}× | "
            f"{p50 / peer_p50:.2f}× |"
        )


if __name__ == "__main__":
    main()
