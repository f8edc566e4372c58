"""The Configuration form's words: each engine field's group, label and tooltip, and the choices of the
fields that take one of a few values."""

from __future__ import annotations

import dataclasses

from mlm_studio.core.config.sections import FAMILY_NAMES, OBJECTIVES, PRECISIONS, SCHEDULES, SECTIONS, STRATEGIES

# (section, field): (group, label, tooltip)
FIELDS: dict[tuple[str, str], tuple[str, str, str]] = {
    ("model", "family"): (
        "Model",
        "Family",
        "The architecture, exported as transformers' class of that name: BERT; RoBERTa (positions offset by the "
        "padding id, one segment type); DistilBERT (no segments); ModernBERT (rotary positions, GeGLU, "
        "pre-LayerNorm without biases, alternating global and local attention); ELECTRA (BERT's layers, "
        "embeddings of their own width)",
    ),
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
    ("model", "embedding_size"): (
        "Model",
        "Embedding size",
        "ELECTRA: width of the embeddings the generator shares, projected to the hidden size; 0 = the hidden size",
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
    ("model", "position_embedding_type"): ("Model", "Positions", "Learned (absolute, as BERT) or fixed sinusoidal"),
    ("model", "pre_layer_norm"): (
        "Model",
        "Pre-LayerNorm",
        "LayerNorm before each sub-layer: steadier at high learning rates",
    ),
    ("model", "local_attention"): ("Model", "Local window", "Tokens a local layer attends to, half on each side; 128"),
    ("model", "global_attn_every_n_layers"): (
        "Model",
        "Global every",
        "Layers 0, n, 2n… attend to the whole sequence, the others to their window; 3",
    ),
    ("model", "global_rope_theta"): ("Model", "Global RoPE base", "Rotary base of the global layers; 160,000"),
    ("model", "local_rope_theta"): ("Model", "Local RoPE base", "Rotary base of the local layers; 10,000"),
    ("model", "layer_norm_eps"): ("Model", "LayerNorm ε", "Numerical guard of LayerNorm; 1e-12 (BERT) to 1e-5"),
    ("model", "initializer_range"): ("Model", "Init std", "Standard deviation of the initial weights; 0.02"),
    ("model", "type_vocab_size"): ("Model", "Segment types", "Segment embeddings (sentence A/B); 2"),
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
    ("training", "precision"): ("Hardware", "Precision", "fp32 everywhere; bf16 on recent GPUs and CPUs; fp16 on CUDA"),
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
    "family": FAMILY_NAMES,
    "objective": OBJECTIVES,
    "position_embedding_type": ("absolute", "sinusoidal"),
    "schedule": SCHEDULES,
    "strategy": STRATEGIES,
    "precision": PRECISIONS,
}

CHOICE_TITLES = {"mlm": "Masked LM", "electra": "ELECTRA (replaced-token detection)"}
OBJECTIVE_FIELDS = ("generator_size", "detection_weight")  # shown with ELECTRA's objective only


def field_names() -> set[tuple[str, str]]:
    """Every configurable (section, field) of the engine, for checking that the form covers them all."""
    hidden = {("model", "vocab_size"), ("model", "hidden_act"), ("model", "pad_token_id")}
    names = set()
    for section in ("model", "data", "masking", "training"):
        for f in dataclasses.fields(SECTIONS[section]):
            names.add((section, f.name))
    return names - hidden
