"""Time to accuracy on the built-in corpus: the `transformers` `Trainer` with its default recipe on the mini
model for a fixed wall-clock budget, then an MLM Studio preset (the default, `modern`, unless `--preset` says
otherwise) with the same budget as a time budget. Both are scored by the same held-out evaluation (the same
validation blocks, the same fixed masking).

Reports the peer's accuracy, ours, and how long ours took to reach the peer's final accuracy (goal: half the
peer's time or less).

Run: python benchmarks/bench_time_to_accuracy.py [--minutes 6] [--preset quickstart]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, peer_model, peer_tokenizer

from mlm_studio.core.config.presets import DEFAULT_PRESET, preset
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer
from mlm_studio.core.models.hf_folder import import_model
from mlm_studio.core.runs.records import EvalRecord
from mlm_studio.core.training.runs import NewRun, prepare_trainer


def peer_run(folder: Path, train, tokenizer, model_config, seconds: float) -> float:
    """Train the peer with `Trainer`'s defaults until `seconds` have passed; returns the wall time taken."""
    from transformers import DataCollatorForLanguageModeling, TrainerCallback, TrainingArguments
    from transformers import Trainer as HFTrainer

    class Deadline(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = time.perf_counter() - started >= seconds

    rows = [{"input_ids": train.batch([i]).input_ids[0].tolist()} for i in range(len(train))]
    hf_tokenizer = peer_tokenizer(tokenizer)
    model = peer_model(model_config)
    arguments = TrainingArguments(
        output_dir=str(folder / "peer-output"),
        max_steps=100_000,  # the deadline ends it; the default schedule decays over these steps
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
        seed=0,
    )
    collator = DataCollatorForLanguageModeling(hf_tokenizer, mlm_probability=0.15)
    started = time.perf_counter()
    HFTrainer(model=model, args=arguments, train_dataset=rows, data_collator=collator, callbacks=[Deadline()]).train()
    took = time.perf_counter() - started
    model.save_pretrained(folder / "peer")
    hf_tokenizer.save_pretrained(folder / "peer")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=6.0)
    parser.add_argument("--preset", default=DEFAULT_PRESET)
    args = parser.parse_args()
    seconds = args.minutes * 60
    corpus = load_corpus([ensure_builtin_corpus()])
    chosen = preset(args.preset)
    tokenizer = train_tokenizer(corpus.iter_documents(), chosen.tokenizer, corpus.documents)
    ours_config = replace(chosen, training=replace(chosen.training, time_budget=seconds, eval_interval=100))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ours = prepare_trainer(folder / "ours", begin=lambda: NewRun(ours_config, corpus, tokenizer))
        train = ours.train_blocks
        mini = preset("mini").model
        peer_seconds = peer_run(folder, train, tokenizer, replace(mini, vocab_size=tokenizer.vocab_size), seconds)

        # The peer's weights, scored by our evaluation: a run that starts from them, evaluated before any step.
        peer = NewRun(preset("mini"), corpus, tokenizer, initial=import_model(folder / "peer"))
        peer_eval = prepare_trainer(folder / "scoring", begin=lambda: peer).evaluate()

        evals = [r for r in ours.run() if isinstance(r, EvalRecord)]
    reached = next((r for r in evals if r.accuracy >= peer_eval.accuracy), None)
    print(f"Time to accuracy, built-in corpus, {args.minutes:g} minutes each; {machine()}")
    print("| trainer | wall time | held-out masked-token accuracy | top-5 |")
    print("|---|---|---|---|")
    print(
        f"| transformers Trainer, mini (4×256), default recipe | {peer_seconds:.0f} s | {peer_eval.accuracy:.1%} | "
        f"{peer_eval.top5_accuracy:.1%} |"
    )
    final = evals[-1]
    print(
        f"| MLM Studio, {args.preset}, --time-budget {args.minutes:g}m | {final.elapsed:.0f} s | "
        f"{final.accuracy:.1%} | {final.top5_accuracy:.1%} |"
    )
    if reached is None:
        print("MLM Studio did not reach the peer's accuracy in the budget.")
    else:
        print(
            f"MLM Studio reached the peer's {peer_eval.accuracy:.1%} after {reached.elapsed:.0f} s "
            f"(step {reached.step}): {reached.elapsed / peer_seconds:.2f}× the peer's time; "
            f"final accuracy {final.accuracy / peer_eval.accuracy:.1f}× the peer's."
        )


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
