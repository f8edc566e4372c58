"""The Configuration form's words: each engine field's group, label and tooltip, and the choices of the
fields that take one of a few values."""

from __future__ import annotations

import dataclasses

from mlm_studio.core.config.families import FAMILIES, family_fields
from mlm_studio.core.config.sections import (
    OBJECTIVES,
    PRECISIONS,
    REPORT_TO,
    SCHEDULES,
    SECTIONS,
    STRATEGIES,
    ModelConfig,
)

# (section, field): (group, label, tooltip) of the fields every run has; a family's own fields and the family
# chooser's words come from the registry (`form_fields`).
FIELDS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("training", "objective"): (
        "Model",
        "Objective",
        "Masked LM: predict the masked tokens. ELECTRA: a small generator fills the masks and the model learns "
        "to tell, at every position, which tokens were replaced (the model becomes an ELECTRA of its size)",
    ),
    ("training", "generator_size"): (
        "Model",
        "Generator size",
        "ELECTRA: the generator's width as a share of the model's; 0.25–0.5 works best (ELECTRA paper)",
    ),
    ("training", "detection_weight"): (
        "Model",
        "Detection weight",
        "ELECTRA: weight of the replaced-token loss against the generator's masked-LM loss; 50",
    ),
    ("model", "hidden_size"): ("Model", "Hidden size", "Width of every layer; 128–1024 (BERT-base: 768)"),
    ("model", "num_hidden_layers"): ("Model", "Layers", "Transformer layers; 2–24 (BERT-base: 12)"),
    ("model", "num_attention_heads"): ("Model", "Attention heads", "Must divide the hidden size; usually hidden/64"),
    ("model", "intermediate_size"): (
        "Model",
        "Feed-forward size",
        "Inner width of each feed-forward; usually 4× hidden",
    ),
    ("model", "hidden_dropout_prob"): ("Model", "Dropout", "Dropout after each sub-layer; 0–0.1"),
    ("model", "attention_probs_dropout_prob"): ("Model", "Attention dropout", "Dropout on attention weights; 0–0.1"),
    ("model", "max_position_embeddings"): ("Model", "Max positions", "Longest sequence the model can read; ≥ length"),
    ("model", "layer_norm_eps"): ("Model", "LayerNorm ε", "Numerical guard of LayerNorm; 1e-12 (BERT) to 1e-5"),
    ("model", "initializer_range"): ("Model", "Init std", "Standard deviation of the initial weights; 0.02"),
    ("training", "learning_rate"): (
        "Optimisation",
        "Learning rate",
        "Peak AdamW learning rate; 1e-4–1e-3 for small models",
    ),
    ("training", "batch_size"): ("Optimisation", "Batch size", "Blocks per micro-batch; 8–256, as memory allows"),
    ("training", "grad_accumulation"): (
        "Optimisation",
        "Accumulation",
        "Micro-batches per step (effective batch = batch × this)",
    ),
    ("training", "weight_decay"): ("Optimisation", "Weight decay", "AdamW decay, not on biases or LayerNorm; 0.01"),
    ("training", "max_grad_norm"): ("Optimisation", "Gradient clip", "Clip the gradient norm to this; 1.0 (0: off)"),
    ("training", "adam_beta1"): ("Optimisation", "Adam β1", "0.9"),
    ("training", "adam_beta2"): ("Optimisation", "Adam β2", "0.98–0.999"),
    ("training", "adam_epsilon"): ("Optimisation", "Adam ε", "1e-6–1e-8"),
    ("training", "max_steps"): ("Schedule", "Steps", "Optimizer steps to train for"),
    ("training", "epochs"): ("Schedule", "Epochs", "Passes over the data; overrides Steps when above 0"),
    ("training", "time_budget"): (
        "Schedule",
        "Time budget",
        "Train for this long (90s, 6m, 1h30m): the learning rate decays with the clock and Steps and Epochs "
        "are ignored; 0 turns it off",
    ),
    ("training", "warmup_steps"): ("Schedule", "Warm-up steps", "Steps of linear warm-up; 1–10% of the steps"),
    ("training", "schedule"): ("Schedule", "Decay", "Learning-rate decay after warm-up"),
    ("training", "eval_interval"): ("Schedule", "Evaluate every", "Steps between validation evaluations"),
    ("training", "eval_blocks"): ("Schedule", "Validation blocks", "Blocks per evaluation (0: the whole split)"),
    ("training", "checkpoint_interval"): ("Schedule", "Checkpoint every", "Steps between checkpoints"),
    ("training", "keep_checkpoints"): ("Schedule", "Keep checkpoints", "Latest checkpoints kept, besides the best"),
    ("training", "log_interval"): ("Schedule", "Log every", "Steps between plotted training points"),
    ("training", "report_to"): (
        "Schedule",
        "Report to",
        "Where the metrics go besides the run's metrics.jsonl: TensorBoard events in the run's folder, an MLflow "
        "run (at MLFLOW_TRACKING_URI; needs the mlflow package), both, or neither",
    ),
    ("data", "max_seq_len"): ("Data & masking", "Sequence length", "Tokens per block; 64–512"),
    ("data", "packing"): ("Data & masking", "Pack documents", "Fill blocks with consecutive documents (no padding)"),
    ("data", "validation_fraction"): ("Data & masking", "Validation share", "Documents held out; 0.01–0.1"),
    ("data", "split_seed"): ("Data & masking", "Split seed", "Decides which documents are held out"),
    ("masking", "strategy"): ("Data & masking", "Masking", "Token, whole word or span (SpanBERT)"),
    ("masking", "rate"): ("Data & masking", "Masking rate", "Share of tokens to predict; 0.15 (BERT) to 0.4"),
    ("masking", "mask_fraction"): ("Data & masking", "[MASK] share", "Of the selected tokens: replaced by [MASK]; 0.8"),
    ("masking", "random_fraction"): ("Data & masking", "Random share", "Of the selected: a random token instead; 0.1"),
    ("masking", "keep_fraction"): ("Data & masking", "Kept share", "Of the selected tokens: left unchanged; 0.1"),
    ("masking", "span_p"): ("Data & masking", "Span p", "Geometric law of span lengths; 0.2"),
    ("masking", "max_span"): ("Data & masking", "Longest span", "In words; 10"),
    ("training", "device"): ("Hardware", "Device", "Where to train: auto picks CUDA, then MPS, then the CPU"),
    ("training", "precision"): (
        "Hardware",
        "Precision",
        "auto: bf16 where the processor computes it natively, else fp32; fp32 everywhere; bf16 on recent GPUs and "
        "CPUs; fp16 on CUDA",
    ),
    ("training", "compile"): ("Hardware", "torch.compile", "Compile the model: faster steps after a slow first one"),
    ("training", "seed"): ("Hardware", "Seed", "Decides initial weights, data order, masking and dropout"),
    ("training", "max_nonfinite_steps"): (
        "Hardware",
        "Stop after NaN steps",
        "Consecutive non-finite losses tolerated",
    ),
}
# What a preset leaves as the user set it: the time they have and the machine they have.
KEPT_ACROSS_PRESETS = ("time_budget", "device", "precision", "compile", "seed")
GROUPS = ("Model", "Optimisation", "Schedule", "Data & masking", "Hardware")
CHOICES = {
    "objective": OBJECTIVES,
    "schedule": SCHEDULES,
    "strategy": STRATEGIES,
    "precision": PRECISIONS,
    "report_to": REPORT_TO,
}

CHOICE_TITLES = {"mlm": "Masked LM", "electra": "ELECTRA (replaced-token detection)"}
OBJECTIVE_FIELDS = ("generator_size", "detection_weight")  # shown with ELECTRA's objective only


def form_fields() -> dict[tuple[str, str], tuple[str, str, str]]:
    """Every field of the form in order: the family chooser, the shared fields, and after the model's shared
    fields every registered family's own ones (the form shows those of the chosen family)."""
    tooltip = "The architecture, exported as transformers' class of that name: " + "; ".join(
        f"{family.title} ({family.summary})" for family in FAMILIES.values()
    )
    rows = list(FIELDS.items())
    last_model = max(i for i, ((section, _), _) in enumerate(rows) if section == "model")
    own = [(("model", f.name), ("Model", f.label, f.help)) for f in family_fields().values()]
    return dict(
        [(("model", "family"), ("Model", "Family", tooltip)), *rows[: last_model + 1], *own, *rows[last_model + 1 :]]
    )


def choices_of(name: str) -> tuple[str, ...]:
    """The values a field with a few choices takes (none for other fields)."""
    if name == "family":
        return tuple(FAMILIES)
    own = family_fields().get(name)
    return own.choices if own is not None else CHOICES.get(name, ())


def field_names() -> set[tuple[str, str]]:
    """Every configurable (section, field) of the engine, for checking that the form covers them all."""
    hidden = {("model", "vocab_size"), ("model", "hidden_act"), ("model", "pad_token_id")}
    names = {("model", name) for name in ModelConfig.field_defaults()}
    for section in ("data", "masking", "training"):
        names.update((section, f.name) for f in dataclasses.fields(SECTIONS[section]))
    return names - hidden
