"""Question answering, MLM Studio against `transformers`' Trainer side by side, on real text none of us wrote:
Disfl-QA (disfl_qa.py says where it comes from and how it is split) and the published all-MiniLM-L6-v2, a fresh
`qa_outputs` head on both sides.

The Trainer's side is prepared as `transformers`' `run_qa.py` example prepares SQuAD: its fast tokenizer lays out
each question and context, "only_second" truncation with overflowing windows that share `DOC_STRIDE` tokens, the
answer's first and last tokens found from the offsets (the first token where a window does not hold the whole
answer, as for a question without one); its test answers are decoded by the question-answering pipeline's own span
selection (`select_starts_ends`), widened to whole words, the lowest "no answer" score of a question's windows
competing with its best span (SQuAD v2.0). One recipe on both sides (epochs, batch 16, learning rate, 6% warm-up,
weight decay 0.01, 384 tokens, stride 128, answers of at most 30 tokens, fp32), both scored by one function
(SQuAD v2.0's official normalisation) on the same test questions. Our time includes the validation after each epoch
and the checkpoints early stopping keeps the best weights by; the Trainer's has neither.

Reported per seed, sides alternating: training tokens/s (the windows' tokens, padding excluded), wall seconds, test
exact match and F1; then, for the last seed, how many test questions get the same answer from MLM Studio's
`predict` and from the exported folder as `transformers` reads it, decoded as its pipeline decodes.

Run: python benchmarks/bench_qa.py TASK_JSON [--questions 600] [--answered] [--seeds 3] [--lr 1e-4] [--epochs 3]
     [--keep DIR]
"""

from __future__ import annotations

import os

# One fixed thread count for both sides (our tuner would otherwise size its threads to the load; see threads.py).
os.environ.setdefault("OMP_NUM_THREADS", str(getattr(os, "process_cpu_count", os.cpu_count)()))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_recipe_search import published_minilm
from common import machine, side_by_side, timed_finetune
from disfl_qa import disfl_qa_split

from mlm_studio.core.finetune.options import FinetuneOptions
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.finetune.qa.data import QAExample, read_qa_file
from mlm_studio.core.finetune.qa.metric import squad_scores
from mlm_studio.core.interop.export import export_model
from mlm_studio.core.runs.run_folder import RunDir

MAX_LENGTH, DOC_STRIDE, MAX_ANSWER_LENGTH = 384, 128, 30
RECIPE = dict(epochs=3.0, batch_size=16, learning_rate=1e-4, warmup_share=0.06, weight_decay=0.01)


def ours(model: Path, files: tuple[Path, Path, Path], out: Path, seed: int) -> dict:
    train, validation, test = files
    options = FinetuneOptions(
        "qa", train, validation, test, seed=seed, device="cpu", max_length=MAX_LENGTH, doc_stride=DOC_STRIDE,
        max_answer_length=MAX_ANSWER_LENGTH, patience=int(RECIPE["epochs"]) + 1, **RECIPE,
    )  # fmt: skip
    timed, test = timed_finetune(out, model, options)
    return timed | {"exact": test.exact_match, "f1": test.f1}


def windows(tokenizer, examples: list[QAExample]):
    """`run_qa.py`'s layout of the questions and contexts: every window of every example, with its offsets."""
    return tokenizer(
        [e.question for e in examples], [e.context for e in examples], truncation="only_second",
        max_length=MAX_LENGTH, stride=DOC_STRIDE, return_overflowing_tokens=True, return_offsets_mapping=True,
    )  # fmt: skip


def training_rows(tokenizer, examples: list[QAExample]) -> list[dict]:
    """Each training window with the answer's first and last tokens, as `run_qa.py` finds them (0, 0 where the
    window does not hold the whole answer or the question has none)."""
    encoded, rows = windows(tokenizer, examples), []
    for w, ids in enumerate(encoded["input_ids"]):
        example = examples[encoded["overflow_to_sample_mapping"][w]]
        offsets, context = encoded["offset_mapping"][w], [i for i, s in enumerate(encoded.sequence_ids(w)) if s == 1]
        start = end = 0
        if example.answers:
            text, first = example.answers[0]
            last = first + len(text)
            if offsets[context[0]][0] <= first and offsets[context[-1]][1] >= last:
                start = max(i for i in context if offsets[i][0] <= first)
                end = min(i for i in context if offsets[i][1] >= last)
        row = {name: encoded[name][w] for name in encoded if name in ("attention_mask", "token_type_ids")}
        rows.append(row | {"input_ids": ids, "start_positions": start, "end_positions": end})
    return rows


@torch.no_grad()
def pipeline_answers(model, tokenizer, examples: list[QAExample], impossible: bool) -> list[str]:
    """Each example's answer as `transformers`' question-answering pipeline decodes a model's logits: in each
    window the best span of the context (`select_starts_ends`), widened to whole words, the best over the windows;
    "" where the lowest "no answer" score of the windows is higher (with `impossible`)."""
    from transformers.pipelines.document_question_answering import select_starts_ends

    encoded = windows(tokenizer, examples)
    reads_types = "token_type_ids" in tokenizer.model_input_names
    best: list[tuple[float, str]] = [(-1.0, "")] * len(examples)
    null = [1e6] * len(examples)
    for w, encoding in enumerate(encoded.encodings):
        e = encoded["overflow_to_sample_mapping"][w]
        inputs = {"input_ids": torch.tensor([encoding.ids]), "attention_mask": torch.tensor([encoding.attention_mask])}
        if reads_types:
            inputs["token_type_ids"] = torch.tensor([encoding.type_ids])
        output = model(**inputs)
        p_mask = np.asarray([0 if s == 1 else 1 for s in encoded.sequence_ids(w)])
        p_mask[0] = 0
        starts, ends, scores, null[e] = select_starts_ends(
            output.start_logits.numpy(), output.end_logits.numpy(), p_mask, np.asarray(encoding.attention_mask)[None],
            min_null_score=null[e], handle_impossible_answer=impossible, max_answer_len=MAX_ANSWER_LENGTH,
        )  # fmt: skip
        if len(scores) and scores[0] > best[e][0]:
            first = encoding.word_to_chars(encoding.token_to_word(int(starts[0])), sequence_index=1)[0]
            last = encoding.word_to_chars(encoding.token_to_word(int(ends[0])), sequence_index=1)[1]
            best[e] = (float(scores[0]), examples[e].context[first:last])
    return ["" if impossible and null[e] > best[e][0] else best[e][1] for e in range(len(examples))]


def theirs(start: Path, files: tuple[Path, Path, Path], seed: int) -> dict:
    """The Trainer fine-tuning the published model on `run_qa.py`'s windows of the same training questions."""
    import transformers

    train, test = read_qa_file(files[0]).examples, read_qa_file(files[2]).examples
    transformers.set_seed(seed)
    tokenizer = transformers.AutoTokenizer.from_pretrained(start)
    model = transformers.AutoModelForQuestionAnswering.from_pretrained(start)
    rows = training_rows(tokenizer, train)
    steps = math.ceil(RECIPE["epochs"] * len(rows) / RECIPE["batch_size"])
    with tempfile.TemporaryDirectory() as folder:
        args = transformers.TrainingArguments(
            output_dir=folder, num_train_epochs=RECIPE["epochs"], per_device_train_batch_size=RECIPE["batch_size"],
            learning_rate=RECIPE["learning_rate"], warmup_steps=round(RECIPE["warmup_share"] * steps),
            weight_decay=RECIPE["weight_decay"], save_strategy="no", eval_strategy="no", report_to=[],
            use_cpu=True, seed=seed, logging_strategy="no", disable_tqdm=True,
        )  # fmt: skip
        collate = transformers.DataCollatorWithPadding(tokenizer)
        trainer = transformers.Trainer(model=model, args=args, train_dataset=rows, data_collator=collate)
        tokens = sum(len(row["input_ids"]) for row in rows) * RECIPE["epochs"]
        began = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - began
    predictions = pipeline_answers(model.eval(), tokenizer, test, any(e.impossible for e in train))
    scores = squad_scores(test, predictions)
    return {"seconds": seconds, "tokens_per_s": tokens / seconds, "exact": scores.exact / 100, "f1": scores.f1 / 100}


def agreement(run: Path, export: Path, test: Path) -> str:
    """How many test questions our `predict` and the exported folder, read by `transformers`, answer alike."""
    import transformers

    examples = read_qa_file(test).examples
    mine = FineTuned(RunDir(run))
    model = transformers.AutoModelForQuestionAnswering.from_pretrained(export).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(export)
    answers = pipeline_answers(model, tokenizer, examples, mine.task.unanswerable)
    same = sum(mine.answer(e.question, e.context)[0]["answer"] == theirs for e, theirs in zip(examples, answers))
    return f"{same} of {len(examples)} test questions answered alike by `predict` and the exported folder"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path, help="BIG-bench's disfl_qa/task.json")
    parser.add_argument("--questions", type=int, default=600, help="training questions")
    parser.add_argument("--answered", action="store_true", help="only the questions with an answer (SQuAD v1.1)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--lr", type=float, default=RECIPE["learning_rate"])
    parser.add_argument("--epochs", type=float, default=RECIPE["epochs"])
    parser.add_argument("--keep", type=Path, help="keep the data, the model and the runs in this folder")
    args = parser.parse_args()
    RECIPE.update(epochs=args.epochs, learning_rate=args.lr)
    print(f"# {machine()}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-qa-"))
    root.mkdir(parents=True, exist_ok=True)
    files = disfl_qa_split(args.task, root, args.questions, args.answered)
    model = published_minilm(root)
    results: dict[str, list[dict]] = {"MLM Studio": [], "transformers Trainer": []}
    for seed in range(args.seeds):
        out = root / f"qa-lr{args.lr:g}-epochs{args.epochs:g}-seed{seed}"
        results["MLM Studio"].append(ours(model, files, out, seed))
        results["transformers Trainer"].append(theirs(model, files, seed))
        print(f"seed {seed}: " + "; ".join(f"{name} {r[-1]}" for name, r in results.items()), flush=True)
    print(f"{args.seeds} seeds, {args.questions:,} questions, lr {args.lr:g}, {args.epochs:g} epochs, batch 16")
    print(side_by_side(results, {"exact": "test exact match", "f1": "test F1"}))
    export = root / f"{out.name}-export"
    if not export.is_dir():
        export_model(out, export)
    print(agreement(out, export, files[2]))


if __name__ == "__main__":
    main()
