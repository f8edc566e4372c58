"""Small configurations that train in seconds on the CPU."""

import csv
import random
from dataclasses import replace

from hypothesis import strategies as st

from mlm_studio.core.config.run_config import RunConfig
from mlm_studio.core.config.sections import DataConfig, ModelConfig, TrainConfig
from mlm_studio.core.models.hf_folder import InteropError, import_model


def small_config(**training) -> RunConfig:
    defaults = dict(
        batch_size=8,
        max_steps=8,
        warmup_steps=2,
        eval_interval=4,
        eval_blocks=16,
        checkpoint_interval=4,
        log_interval=1,
        learning_rate=1e-3,
    )
    return RunConfig(
        model=ModelConfig(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
        ),
        data=DataConfig(max_seq_len=32),
        training=TrainConfig(**{**defaults, **training}),
    )


def with_training(config: RunConfig, **training) -> RunConfig:
    return replace(config, training=replace(config.training, **training))


def config_file(folder, **training):
    """`small_config` with a 400-piece tokenizer, saved as `folder/config.toml` for the command line."""
    config = small_config(**training)
    return replace(config, tokenizer=replace(config.tokenizer, vocab_size=400)).save(folder / "config.toml")


def train_documents(blocks, count):
    """The first `count` documents of a block set (a small training set, to cross epochs quickly)."""
    import numpy as np

    starts = blocks.data.offsets[:-1]
    wanted = set(blocks.doc_starts[:count].tolist())
    return np.flatnonzero([s in wanted for s in starts])


# Any JSON value, the odd ones included: huge integers, infinities, NaN, nested lists and objects.
ODD_NUMBERS = st.sampled_from([10**400, -(10**30), 0, -1, 2**63, float("inf"), float("nan"), 1e308, True])
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(-2, 600) | ODD_NUMBERS | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=8,
)


def imports_or_refuses(folder) -> None:
    """import_model gives a model or one InteropError sentence, never another exception."""
    try:
        import_model(folder)
    except InteropError as exc:
        assert str(exc) and "\n" not in str(exc)


def two_label_task(path, rows):
    """`rows` labelled sentences in a CSV at `path`, each of filler words and one word that gives its label away
    ("value": returns, "raise": errors): a task any model learns in a few steps. The file."""
    rng = random.Random(0)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence", "category"])
        for _ in range(rows):
            label = rng.choice(["returns", "errors"])
            words = [rng.choice(("the", "of", "a", "list", "to")) for _ in range(rng.randint(3, 9))]
            words.insert(rng.randint(0, len(words)), {"returns": "value", "errors": "raise"}[label])
            writer.writerow([" ".join(words), label])
    return path
