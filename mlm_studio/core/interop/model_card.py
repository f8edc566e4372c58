"""The model card (`README.md`) of an exported run: what it is, where its text came from, how it was masked,
what it reached, and how to use it."""

from __future__ import annotations

import re
from pathlib import Path

from mlm_studio import __version__
from mlm_studio.core.config.families import FAMILIES
from mlm_studio.core.runs.records import EvalRecord, TestRecord
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.shown import one_line
from mlm_studio.core.storage.checkpoint import CheckpointError, read_state


def model_card(run: RunDir, checkpoint: Path) -> str:
    """A short README: where the text came from, the configuration, and the last evaluation."""
    config, state = run.config, read_state(checkpoint)
    m, family, tokenizer = config.model, FAMILIES[config.model.family], run.tokenizer
    try:
        sources, _ = run.corpus_sources()
        corpus = ", ".join(_code(s.name) for s in sources[:10]) + (
            f" and {len(sources) - 10} more" if len(sources) > 10 else ""
        )
    except CheckpointError:
        corpus = "not recorded"
    evals = [
        r
        for r in run.records(EvalRecord)
        if r.step <= state["step"] and None not in (r.loss, r.accuracy, r.top5_accuracy, r.perplexity)
    ]
    if evals:
        last = evals[-1]
        metrics = (
            f"| validation loss | {last.loss:.4f} |\n| masked-token accuracy | {last.accuracy:.2%} |\n"
            f"| top-5 accuracy | {last.top5_accuracy:.2%} |\n| perplexity | {last.perplexity:,.1f} |\n"
            f"| evaluated at step | {last.step:,} |\n"
        )
    else:
        metrics = "| validation | not evaluated yet |\n"
    start = ""
    if run.initial_weights is not None:
        source = run.origin.get("source", "an imported model")
        start = f"Continued pre-training of {_code(Path(str(source)).name)}.\n\n"
    electra = config.training.objective == "electra"
    kind = (
        "An ELECTRA discriminator trained by replaced-token detection (its generator, a masked-LM "
        f"{config.training.generator_size:g} times as wide, is in `generator/`),"
        if electra
        else f"A {family.title} masked language model, {m.parameter_count():,} parameters,"
    )
    return _writable(f"""---
library_name: transformers
pipeline_tag: {"token-classification" if electra else "fill-mask"}
tags: [{m.family}, fill-mask, mlm-studio]
---

# {one_line(run.name)}

{kind} trained with MLM Studio {__version__}: {m.num_hidden_layers} layers, hidden
size {m.hidden_size}, {m.num_attention_heads} heads, a {tokenizer.kind} vocabulary
of {tokenizer.vocab_size:,} pieces. {start}Exported from checkpoint `{checkpoint.name}` after {state["step"]:,}
optimizer steps and {state.get("tokens_seen", 0):,} tokens.

## Training data

Corpus: {corpus}. Masking: {config.masking.rate:.0%} of tokens ({config.masking.strategy.replace("_", " ")}),
split {config.masking.mask_fraction:g} {tokenizer.specials.mask} / {config.masking.random_fraction:g} random /
{config.masking.keep_fraction:g} kept; sequences of {config.data.max_seq_len} tokens.

## Results

| metric | value |
|---|---|
{metrics}
## Use

```python
from transformers import pipeline

fill = pipeline("fill-mask", model="path/to/this/folder")
fill("The {tokenizer.specials.mask} of the list.")
```

## Configuration

```toml
{config.to_toml().strip()}
```
""")


def _code(text: str, limit: int = 80) -> str:
    """`text` as Markdown inline code on one line, fenced by more backticks than it holds in a row."""
    text = one_line(text, limit)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _writable(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD: Python keeps the bytes of a file name that is not UTF-8 (a corpus
    file's, a run folder's) as surrogates, which a UTF-8 file cannot hold."""
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


# the `transformers` pipeline of each fine-tuning task
PIPELINES = {"classification": "text-classification", "tokens": "token-classification", "qa": "question-answering"}


def _tagging_use(task: str) -> str:
    """For a tagger, the aggregation that gives the tags it was scored on ("" for other tasks)."""
    if task != "tokens":
        return ""
    return """
Each word is tagged, and was scored, on its first piece. Ask the pipeline for the same words with
`aggregation_strategy="first"` (each word whole, tagged as its first piece is, then grouped into entities):

```python
from transformers import pipeline

tag = pipeline("token-classification", model="path/to/this/folder", aggregation_strategy="first")
```

`"simple"` groups every piece by its own tag and can split a word whose later pieces are tagged otherwise. The
pipeline finds words by WordPiece's `##` (every vocabulary MLM Studio trains); with a byte-level or Unigram
vocabulary it finds them at spaces only, so a word written against punctuation can be grouped otherwise there.
"""


def classifier_card(run: RunDir, weights: Path, task: str, labels: list[str]) -> str:
    """A short README for a fine-tuned classifier: what it predicts, from what, and its test scores."""
    state = read_state(weights)
    family = FAMILIES[run.config.model.family]
    tests = run.records(TestRecord)
    scores = (
        "".join(
            f"| test {name.replace('_', ' ')} | {getattr(tests[-1], name):.2%} |\n"
            for name in ("accuracy", "macro_f1", "entity_f1", "exact_match", "f1")
            if getattr(tests[-1], name) is not None
        )
        if tests
        else "| test | not scored yet |\n"
    )
    pipeline = PIPELINES[task]
    predicts = "" if task == "qa" else ": labels " + ", ".join(_code(label) for label in labels)
    return _writable(f"""---
library_name: transformers
pipeline_tag: {pipeline}
tags: [{family.model_type}, {pipeline}, mlm-studio]
---

# {one_line(run.name)}

A {family.title} {pipeline.replace("-", " ")} model, fine-tuned and trained with MLM Studio {__version__}{predicts}.
Exported from `{weights.name}` (step {state["step"]:,}).
{_tagging_use(task)}
| metric | value |
|---|---|
{scores}""")
