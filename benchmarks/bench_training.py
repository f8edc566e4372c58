"""Training throughput against transformers, side by side in one process, and model FLOPs utilisation.

Seed configuration: vocabulary 30,000, hidden 256, 4 layers, 8 heads, feed-forward 512, sequence 128,
batch 32, fp32. The peer is `transformers.BertForMaskedLM` fed by `DataCollatorForLanguageModeling`
with `torch.optim.AdamW`, the loop a user writes; ours is `mlm_studio.core.training.trainer.Trainer`, the loop
the app and the CLI run. Both use the same blocks of the built-in corpus and the same threads.

With `--objective electra` both sides train ELECTRA's replaced-token detection on the seed shape as the
discriminator, with a generator a quarter as wide: the peer is `transformers`' `ElectraForMaskedLM` and
`ElectraForPreTraining` sharing their embeddings, the replacements sampled from the generator and the loss
weighted as the paper does, in the loop a user writes.

Run: python benchmarks/bench_training.py [--device cuda --precision bf16 --preset base] [--objective electra]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, peer_model, peer_tokenizer

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.presets import preset
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import DataConfig, ModelConfig, TokenizerConfig, TrainConfig, generator_config
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer, train_tokenizer
from mlm_studio.core.models.electra import DISCRIMINATOR, GENERATOR
from mlm_studio.core.runs.records import StepRecord
from mlm_studio.core.training.runs import NewRun, prepare_trainer

SEED_MODEL = ModelConfig(
    vocab_size=30000, hidden_size=256, num_hidden_layers=4, num_attention_heads=8, intermediate_size=512
)


def matmul_flops(device: torch.device, dtype: torch.dtype, size: int = 2048, repeats: int = 10) -> float:
    """Dense matrix-multiply FLOP/s of this device: the physical ceiling for MFU."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(2):
        a @ b
    _sync(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    _sync(device)
    return 2 * size**3 * repeats / (time.perf_counter() - start)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def model_flops_per_token(config: ModelConfig, seq: int, masked: float) -> float:
    """Useful training FLOPs per token: 6·N (non-embedding) + attention + the vocabulary projection at masks."""
    attention = 6 * 2 * seq * config.hidden_size * config.num_hidden_layers
    head = 6 * config.vocab_size * config.hidden_size * masked
    return 6 * config.non_embedding_parameter_count() + attention + head


def _with_vocab_size(tokenizer: MLMTokenizer, size: int) -> MLMTokenizer:
    """The built-in corpus yields fewer pieces than the seed vocabulary: pad with BERT-style [unusedN] pieces."""
    if tokenizer.vocab_size >= size:
        return tokenizer
    with tempfile.TemporaryDirectory() as tmp:
        path = tokenizer.save(Path(tmp) / "vocab.txt")
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(f"[unused{i}]\n" for i in range(size - tokenizer.vocab_size))
        return MLMTokenizer.load(path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--preset", help="a preset's model instead of the seed configuration (e.g. base)")
    parser.add_argument("--family", choices=FAMILIES, help="the seed configuration's shape in another family")
    parser.add_argument("--objective", choices=("mlm", "electra"), default="mlm")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5, help="steps per timed turn")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from transformers import DataCollatorForLanguageModeling

    device = torch.device(args.device)
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    model_config = _model_config(args)
    corpus = load_corpus([ensure_builtin_corpus()])
    tokenizer = _with_vocab_size(
        train_tokenizer(corpus.iter_documents(), TokenizerConfig(vocab_size=30000), corpus.documents),
        model_config.vocab_size,
    )
    model_config = replace(model_config, vocab_size=tokenizer.vocab_size)
    config = RunConfig(
        model=model_config,
        data=DataConfig(max_seq_len=128),
        training=TrainConfig(
            batch_size=args.batch,
            max_steps=10**6,
            log_interval=args.steps,
            eval_interval=10**6,
            checkpoint_interval=10**6,
            device=args.device,
            precision=args.precision,
            warmup_steps=10,
            objective=args.objective,
        ),
    )
    with tempfile.TemporaryDirectory() as tmp:
        trainer = prepare_trainer(Path(tmp) / "run", begin=lambda: NewRun(config, corpus, tokenizer))
        train, ours = trainer.train_blocks, trainer.run()

        hf_tokenizer = peer_tokenizer(tokenizer)
        collator = DataCollatorForLanguageModeling(hf_tokenizer, mlm_probability=0.15, return_tensors="pt")
        peer, peer_name = _peer(config)
        peer = peer.to(device).train()
        optimizer = torch.optim.AdamW(peer.parameters(), lr=5e-4, weight_decay=0.01)
        rng = np.random.default_rng(0)

        def peer_steps() -> None:
            for _ in range(args.steps):
                blocks = train.batch(rng.integers(0, len(train), args.batch))
                batch = collator([{"input_ids": row} for row in blocks.input_ids.tolist()])
                batch = {k: v.to(device) for k, v in batch.items()}
                with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
                    loss = peer(**batch).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            _sync(device)

        def our_steps() -> None:
            while not isinstance(next(ours), StepRecord):
                pass
            _sync(device)

        for fn in (our_steps, peer_steps):  # warm-up
            fn()
        times: dict[str, list[float]] = {"MLM Studio Trainer": [], peer_name: []}
        for _ in range(args.repeats):
            for name, fn in zip(times, (our_steps, peer_steps)):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
        peak = matmul_flops(device, dtype)

    tokens = args.steps * args.batch * 128
    flops_per_token = _flops_per_token(config)
    ours_median = statistics.median(times["MLM Studio Trainer"])
    print(
        f"Training {FAMILIES[model_config.family].title} ({args.objective}), "
        f"{model_config.num_hidden_layers}×{model_config.hidden_size}, "
        f"vocab {model_config.vocab_size}, "
        f"seq 128, batch {args.batch}, {args.precision} on {device}; {args.steps} steps per turn, "
        f"{args.repeats} turns alternated; {machine()}"
    )
    print(f"Dense matmul: {peak / 1e9:,.1f} GFLOP/s; useful model FLOPs per token: {flops_per_token / 1e6:,.1f} M")
    print("| trainer | tokens/s, median (spread) | MFU | MLM Studio speed-up |")
    print("|---|---|---|---|")
    for name, seconds in times.items():
        rates = sorted(tokens / s for s in seconds)
        median = statistics.median(rates)
        mfu = median * flops_per_token / peak
        print(
            f"| {name} | {median:,.0f} ({rates[0]:,.0f}–{rates[-1]:,.0f}) | {mfu:.0%} | "
            f"{statistics.median(seconds) / ours_median:.2f}× |"
        )


def _model_config(args) -> ModelConfig:
    """The seed configuration or a preset's model, in the family asked for (ELECTRA's for its objective)."""
    model_config = preset(args.preset).model if args.preset else SEED_MODEL
    family = "electra" if args.objective == "electra" else args.family
    return model_config.as_family(family) if family else model_config


def _peer(config: RunConfig) -> tuple[torch.nn.Module, str]:
    """The `transformers` side and its name in the table."""
    if config.training.objective == "electra":
        peer = ElectraPeer(config.model, config.training.generator_size)
        return peer, "transformers ElectraForMaskedLM + ElectraForPreTraining + collator"
    peer = peer_model(config.model)
    return peer, f"transformers {type(peer).__name__} + collator"


def _flops_per_token(config: RunConfig) -> float:
    """For ELECTRA, the discriminator's (every token, no vocabulary) and the generator's."""
    if config.training.objective != "electra":
        return model_flops_per_token(config.model, 128, 0.15)
    generator = generator_config(config.model, config.training.generator_size)
    return model_flops_per_token(config.model, 128, 0.0) + model_flops_per_token(generator, 128, 0.15)


class ElectraPeer(torch.nn.Module):
    """ELECTRA as a `transformers` user trains it: a generator and a discriminator sharing their embeddings, the
    masks filled with samples from the generator, one loss: the generator's plus 50 times the discriminator's."""

    def __init__(self, model_config: ModelConfig, generator_size: float) -> None:
        super().__init__()
        from transformers import AutoConfig, ElectraForMaskedLM, ElectraForPreTraining

        def hf(config: ModelConfig, architecture: str):
            values = FAMILIES["electra"].to_hf(config, architecture)
            return AutoConfig.for_model(values.pop("model_type"), **values)

        self.discriminator = ElectraForPreTraining(hf(model_config, DISCRIMINATOR))
        self.generator = ElectraForMaskedLM(hf(generator_config(model_config, generator_size), GENERATOR))
        self.generator.electra.embeddings = self.discriminator.electra.embeddings
        self.generator.generator_lm_head.weight = self.discriminator.electra.embeddings.word_embeddings.weight

    def forward(self, input_ids, labels, **_):
        generated = self.generator(input_ids=input_ids, labels=labels)
        masked = labels != -100
        with torch.no_grad():
            sampled = torch.multinomial(generated.logits[masked].float().softmax(-1), 1).squeeze(-1)
        corrupted = input_ids.clone()
        corrupted[masked] = sampled
        original = torch.where(masked, labels, input_ids)
        detected = self.discriminator(input_ids=corrupted, labels=(corrupted != original).long())
        return SimpleNamespace(loss=generated.loss + 50.0 * detected.loss)


if __name__ == "__main__":
    main()
