"""The `finetune` command's options by the FinetuneOptions field each sets, and the command line that asks for given
options: how a recipe search prints the command that trains its chosen recipe again."""

from __future__ import annotations

import shlex
from dataclasses import astuple

from mlm_studio.core.finetune.options import FinetuneOptions

# the option that sets each of FinetuneOptions' fields (and MODEL); its value is in args under the option's name
FLAGS = {
    "model": "MODEL",
    "task": "--kind",
    "train": "--task",
    "validation": "--validation",
    "test": "--test",
    "learning_rate": "--lr",
    "epochs": "--epochs",
    "batch_size": "--batch-size",
    "grad_accumulation": "--grad-accumulation",
    "warmup_share": "--warmup",
    "weight_decay": "--weight-decay",
    "freeze_layers": "--freeze-layers",
    "patience": "--patience",
    "eval_interval": "--eval-every",
    "max_length": "--max-length",
    "pooling": "--pooling",
    "seed": "--seed",
    "device": "--device",
    "precision": "--precision",
    "doc_stride": "--doc-stride",
    "max_answer_length": "--max-answer-length",
    "report_to": "--report-to",
}
COLUMN_FLAGS = ("--text-column", "--label-column", "--pair-column")
SEARCH_FLAGS = {"learning_rates": "--lrs", "max_epochs": "--max-epochs", "seeds": "--seeds"}  # SearchPlan's
# the recipe's options a command that trains given options names, whatever their values
RECIPE = ("learning_rate", "epochs", "batch_size", "grad_accumulation", "warmup_share", "weight_decay", "freeze_layers",
          "patience", "eval_interval", "max_length", "pooling", "seed")  # fmt: skip


def finetune_command(spec: str, options: FinetuneOptions) -> str:
    """`mlm-studio finetune MODEL …` that fine-tunes `spec` with `options`: its task, files, columns and recipe
    (a question answerer's windows too), where it computes left to the defaults."""
    words = ["mlm-studio", "finetune", spec, FLAGS["task"], options.task, FLAGS["train"], str(options.train)]
    for name in ("validation", "test"):
        words += [FLAGS[name], str(getattr(options, name))] if getattr(options, name) is not None else []
    for flag, column in zip(COLUMN_FLAGS, astuple(options.columns) if options.columns else (), strict=False):
        words += [flag, column] if column else []
    answering = ("doc_stride", "max_answer_length") if options.task == "qa" else ()
    for name in (*RECIPE, *answering):
        words += [FLAGS[name], str(getattr(options, name))]
    return shlex.join(words)
