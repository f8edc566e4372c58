"""The model an evaluation reads: a run's checkpoint or an imported Hugging Face folder, with the held-out
blocks it is scored on; and the encoder a search reads texts with, which may also be a fine-tuning run's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import torch

from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.data.dataset import BlockSet, split_blocks, tokenize_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.models.build import build_model, build_trained, encoder_of, masked_lm_of
from mlm_studio.core.models.hf_folder import import_model, is_hf_folder, model_folder
from mlm_studio.core.progress import Progress
from mlm_studio.core.runs.run_folder import RunDir, resolve_checkpoint
from mlm_studio.core.storage.checkpoint import CheckpointError, load_state, load_weights
from mlm_studio.core.training.runs import training_blocks, with_architecture


@dataclass(frozen=True)
class Subject:
    """A model to diagnose and the held-out blocks it is scored on."""

    title: str
    trained: torch.nn.Module  # what the run trains (an ELECTRA run's generator and discriminator together)
    tokenizer: MLMTokenizer
    config: RunConfig
    validation: BlockSet
    untrained_head: bool = False  # an imported encoder's masked-LM head, made on import: its figures are random

    @property
    def model(self) -> torch.nn.Module:
        """The masked-LM: what is diagnosed."""
        return masked_lm_of(self.trained)

    @property
    def encoder(self) -> torch.nn.Module:
        """The model whose representations tasks and contexts read (an ELECTRA run's discriminator)."""
        return encoder_of(self.trained)


def load_subject(source: str | Path, step: int | None = None, corpus=None, progress: Progress | None = None) -> Subject:
    """A run (its latest checkpoint, or the one of `step`), one checkpoint folder, or a Hugging Face model with
    a `corpus` to score it on (its held-out share, cut as a new run's would be)."""
    folder = model_folder(source)
    if is_hf_folder(folder):
        if corpus is None:
            raise CheckpointError(
                f"{folder.name} is a Hugging Face model: it is scored on a corpus of yours (load one in the Corpus "
                "panel, or give --corpus)"
            )
        imported = import_model(folder)
        config = RunConfig()
        config = replace(config, data=replace(config.data, max_seq_len=min(config.data.max_seq_len,
                                                                          imported.config.max_tokens())))  # fmt: skip
        config = with_architecture(config, imported)
        _, validation = split_blocks(tokenize_corpus(corpus, imported.tokenizer, progress), config.data,
                                     imported.tokenizer)  # fmt: skip
        return Subject(f"{folder.name} (Hugging Face)", imported.build_model(), imported.tokenizer, config, validation,
                       imported.fresh_head)  # fmt: skip
    run, checkpoint = resolve_checkpoint(folder)
    refuse_fine_tuned(run)
    if step is not None:
        checkpoint = next((c for c in run.checkpoints() if c.name == f"step-{step:07d}"), None)
        if checkpoint is None:
            steps = ", ".join(str(int(c.name.split("-")[1])) for c in run.checkpoints())
            raise CheckpointError(f"run {run.name} has no checkpoint at step {step}; it has {steps or 'none'}")
    run.require_finite(checkpoint, "evaluate it")
    model = build_trained(run.config)
    load_weights(checkpoint, model)
    _, validation = training_blocks(run, corpus, progress)
    return Subject(f"{run.name} / {checkpoint.name}", model, run.tokenizer, run.config, validation)


def refuse_fine_tuned(run: RunDir) -> None:
    """Refuse (CheckpointError) a fine-tuning run where a masked-LM is needed, naming the model it started from."""
    if run.task is None:
        return
    origin = run.origin
    started = origin.get("source") if origin.get("kind") != "scratch" else None
    instead = f"the model it started from ({started})" if started else "a pre-trained model"
    what, use = FINE_TUNED.get(run.task.kind, FINE_TUNED["classification"])
    raise CheckpointError(
        f"{run.name} is {what}: it has no masked-LM head; {use}fill masks and evaluate with {instead} (a search "
        "reads its encoder)"
    )


# what each kind of fine-tuning run is, and what answers with it instead
FINE_TUNED = {
    "classification": ("a fine-tuned classifier", ""),
    "tokens": ("a fine-tuned tagger", ""),
    "qa": (
        "a question-answering run",
        "ask it with predict RUN TEXT --question Q (its test exact match and F1 are in its metrics.jsonl); ",
    ),
}


@dataclass(frozen=True)
class Reader:
    """The model a search reads texts with: what it is called, its encoder (with `hidden`) and its tokenizer."""

    title: str
    encoder: torch.nn.Module
    tokenizer: MLMTokenizer


def load_reader(source: str | Path) -> Reader:
    """The encoder of a run (its latest checkpoint), of one checkpoint folder, of a Hugging Face model, or of a
    fine-tuning run (its best weights, or the checkpoint folder given, without its classifier's head)."""
    folder = model_folder(source)
    if is_hf_folder(folder):
        imported = import_model(folder)
        return Reader(f"{folder.name} (Hugging Face)", encoder_of(imported.build_model()), imported.tokenizer)
    run, checkpoint = resolve_checkpoint(folder)
    if run.task is not None:
        tuned = FineTuned(run, checkpoint if folder.resolve() == checkpoint.resolve() else None)
        model = build_model(run.config.model)  # its masked-LM head stays fresh: a search reads the encoder only
        weights = tuned.model.encoder_module.state_dict()
        kept = {name: value for name, value in weights.items() if not name.startswith("pooler.")}
        load_state(kept, getattr(model, FAMILIES[run.config.model.family].prefix), tuned.weights.name)
        return Reader(f"{run.name} / {tuned.weights.name} (fine-tuned encoder)", model, run.tokenizer)
    run.require_finite(checkpoint, "read texts with it")
    model = build_trained(run.config)
    load_weights(checkpoint, model)
    return Reader(f"{run.name} / {checkpoint.name}", encoder_of(model), run.tokenizer)
