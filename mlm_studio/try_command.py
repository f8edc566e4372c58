"""`mlm-studio predict` on a fine-tuning run (any other model's masks are filled by headless.py's `predict`): a
classifier's labels of a text (or a pair) with their probabilities,
a tagger's entities and each word's tag, a question-answering model's answers; as a short table, or with --json
as `transformers`' pipeline of its kind returns them. Options of another kind of model are refused in a sentence,
and a text longer than the model reads is said, on stderr."""

from __future__ import annotations

import sys

from mlm_studio.core.finetune.predict import FineTuned, fine_tuned_at
from mlm_studio.core.training.device import resolve_device
from mlm_studio.headless import USER_ERRORS
from mlm_studio.headless import predict as fill_masks
from mlm_studio.terminal import MISUSED, emit, fail, reason, strict_json

# the options only a fine-tuned model reads: (option, its name in the parsed arguments)
FINE_TUNED_ONLY = (("--pair", "pair"), ("--question", "question"), ("--aggregation", "aggregation"))
KINDS = {"classification": "a text classifier", "tokens": "a token tagger", "qa": "a question-answering model"}
BAR_WIDTH = 24  # characters of a probability of 1


def predict(args) -> int:
    """A fine-tuning run's answers for `args.text`; any other model's masks filled, the options only a fine-tuned
    model reads refused."""
    try:
        fine_tuned = fine_tuned_at(args.model)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if fine_tuned is not None:
        return try_fine_tuned(fine_tuned, args)
    given = [option for option, value in FINE_TUNED_ONLY if getattr(args, value) is not None]
    if given:
        said = f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for a fine-tuned model"
        return fail(f"{said}; {args.model} fills masks", MISUSED)
    return fill_masks(args)


def try_fine_tuned(model: FineTuned, args) -> int:
    """Print what `model` answers for `args.text` (exit 0), or why it cannot (1; 2 for options of another kind)."""
    refused = misused_options(model, args)
    if refused:
        return fail(refused, MISUSED)
    try:
        model.model.to(resolve_device(args.device))
        if model.kind == "classification":
            labelled = model.label_text(args.text, args.pair)
            output = strict_json(labelled.as_pipeline(args.top_k)) if args.json else _labels_table(labelled, args.top_k)
            _say_what_was_read(labelled.reading.describe())
        elif model.kind == "tokens":
            tagged = model.tag_text(args.text)
            output = strict_json(tagged.as_pipeline(args.aggregation or "simple")) if args.json else _tags_table(tagged)
            _say_what_was_read(tagged.reading.describe())
        else:
            answers = model.answer(args.question, args.text, top_k=args.top_k or 1)
            output = strict_json(answers) if args.json else _answers_table(answers)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    return emit(output)


def misused_options(model: FineTuned, args) -> str:
    """Why the options given do not fit the fine-tuned model's kind, in a sentence ("" when they do)."""
    kind, name = model.kind, model.run.name
    fits = {
        "--fill": False,
        "--top-k": kind in ("classification", "qa"),
        "--pair": kind == "classification",
        "--question": kind == "qa",
        "--aggregation": kind == "tokens",
    }
    given = {
        "--fill": args.fill,
        "--top-k": args.top_k is not None,
        "--pair": args.pair is not None,
        "--question": args.question is not None,
        "--aggregation": args.aggregation is not None,
    }
    unfit = [option for option, fit in fits.items() if given[option] and not fit]
    if unfit:
        what = "does" if len(unfit) == 1 else "do"
        return f"{' and '.join(unfit)} {what} not apply to {name}: it is {KINDS.get(kind, kind)}"
    if args.top_k is not None and args.top_k < 1:
        return f"--top-k is how many answers to print: 1 or more, not {args.top_k}"
    if kind == "qa" and args.question is None:
        return f"{name} answers a question about TEXT: give the question with --question"
    if kind == "classification":
        pairs = model.reads_pairs()
        if pairs and args.pair is None:
            return f"{name} was fine-tuned on pairs of texts: give the second with --pair"
        if pairs is False and args.pair is not None:
            return f"{name} was fine-tuned on single texts: --pair is for a classifier of pairs"
    return ""


def _say_what_was_read(reading: str) -> None:
    if reading:
        print(f"Note: {reading}.", file=sys.stderr)


def _labels_table(labelled, top_k: int | None) -> str:
    rows = labelled.as_pipeline(top_k)
    width = max(len("label"), *(len(row["label"]) for row in rows))
    lines = [f"{'label':<{width}}  probability"]
    for row in rows:
        bar = "█" * round(row["score"] * BAR_WIDTH)
        lines.append(f"{row['label']:<{width}}  {row['score']:11.3f}  {bar}")
    return "\n".join(lines)


def _tags_table(tagged) -> str:
    """Each word's tag, then the entities of those tags (each word read on its first piece, as the model is
    scored; --json gives the pipeline's grouping of the pieces)."""
    words = " ".join(f"{w['word']}/{w['entity']}" for w in tagged.words)
    lines = [f"words: {words}" if words else "words: none"]
    found = tagged.word_entities
    if not found:
        return "\n".join([*lines, "entities: none"])
    width = max(len("entity"), *(len(e["entity_group"]) for e in found))
    lines.append(f"{'entity':<{width}}  score  characters  text")
    for entity in found:
        span = f"{entity['start']}–{entity['end']}"
        lines.append(f"{entity['entity_group']:<{width}}  {entity['score']:.3f}  {span:<10}  {entity['word']}")
    return "\n".join(lines)


def _answers_table(answers: list[dict]) -> str:
    if not answers:
        return "no answer found"
    lines = ["score  characters  answer"]
    for answer in answers:
        span = f"{answer['start']}–{answer['end']}"
        lines.append(f"{answer['score']:.3f}  {span:<10}  {answer['answer']}")
    return "\n".join(lines)
