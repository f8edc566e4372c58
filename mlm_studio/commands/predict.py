"""`mlm-studio predict` on a fine-tuning run (any other model's masks are filled by `fill_masks`): a
classifier's labels of a text (or a pair) with their probabilities,
a tagger's entities and each word's tag, a question-answering model's answers; as a short table, or with --json
as `transformers`' pipeline of its kind returns them; for many texts (one a line, from standard input or a file),
one line each (JSON lines with --json). Options of another kind of model are refused in a sentence, and a text (or
a question) longer than the model reads is said, on stderr."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from mlm_studio.commands.explain import explain_prediction
from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import (
    LABEL_CHARS,
    MISUSED,
    emit,
    fail,
    reason,
    strict_json,
    warn_untrained,
)
from mlm_studio.commands.text_lines import TextLinesError, reads_lines, source_name, text_lines
from mlm_studio.core.errors import UserError
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.finetune.heads import CLASS_NAMES
from mlm_studio.core.finetune.predict import FineTuned, fine_tuned_at
from mlm_studio.core.models.hf_folder import architectures
from mlm_studio.core.runs.device import resolve_device
from mlm_studio.core.shown import one_line

# the options only a fine-tuned model reads: (option, its name in the parsed arguments)
FINE_TUNED_ONLY = (("--pair", "pair"), ("--question", "question"), ("--aggregation", "aggregation"))
KINDS = {"classification": "a text classifier", "tokens": "a token tagger", "qa": "a question-answering model"}
BAR_WIDTH = 24  # characters of a probability of 1


def run(args) -> int:
    """A fine-tuning run's answers for `args.text` (or for each line of standard input or `--text-file`); any
    other model's masks filled, the options only a fine-tuned model reads refused."""
    if (args.text is None) == (args.text_file is None):
        said = "both TEXT and --text-file" if args.text is not None else "no TEXT"
        return fail(f"{said}: give TEXT, - to read texts one a line from standard input, or --text-file FILE", MISUSED)
    try:
        fine_tuned = fine_tuned_at(args.model)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if fine_tuned is not None and args.explain is not None:
        refused = misused_options(fine_tuned, args)
        return fail(refused, MISUSED) if refused else explain_prediction(args, fine_tuned)
    if fine_tuned is not None:
        return try_fine_tuned(fine_tuned, args)
    given = [option for option, value in FINE_TUNED_ONLY if getattr(args, value) is not None]
    if given:
        said = f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for a fine-tuned model"
        return fail(f"{said}; {_what_fills_masks(args.model)}", MISUSED)
    return explain_prediction(args) if args.explain is not None else fill_masks(args)


def _what_fills_masks(model: str) -> str:
    """`model` said to fill masks, or, for a fine-tuned model exported for `transformers`, to be read from its run."""
    for name in architectures(model):
        for task, suffix in CLASS_NAMES.items():
            if name.endswith(suffix):
                return f"{model} is {KINDS[task]} exported for transformers ({name}): give predict its run's folder"
    return f"{model} fills masks"


def try_fine_tuned(model: FineTuned, args) -> int:
    """Print what `model` answers for `args.text` (exit 0), or why it cannot (1; 2 for options of another kind)."""
    refused = misused_options(model, args)
    if refused:
        return fail(refused, MISUSED)
    try:
        model.model.to(resolve_device(args.device))
        if reads_lines(args.text, args.text_file):
            return _each_line(args, lambda text: _fine_tuned_line(model, args, text))
        answered = _answered(model, args, args.text, args.pair)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    _say_what_was_read(answered.note)
    return emit(strict_json(answered.pipeline) if args.json else answered.table)


@dataclass(frozen=True)
class _Answered:
    """A fine-tuned model's answer to one text: as its pipeline returns it, as a table, as one line."""

    pipeline: list[dict]
    table: str
    line: str
    note: str  # what was cut of the text or the question ("" when nothing was)


def _answered(model: FineTuned, args, text: str, pair: str | None) -> _Answered:
    if model.kind == "classification":
        labelled = model.label_text(text, pair)
        best = labelled.as_pipeline(args.top_k or 1)
        line = "\t".join(f"{row['label']}\t{row['score']:.3f}" for row in best)
        table = _labels_table(labelled, args.top_k)
        return _Answered(labelled.as_pipeline(args.top_k), table, line, labelled.reading.describe())
    if model.kind == "tokens":
        tagged = model.tag_text(text)
        line = " ".join(f"{w['word']}/{w['entity']}" for w in tagged.words)
        pipeline = tagged.as_pipeline(args.aggregation or "first")
        return _Answered(pipeline, _tags_table(tagged), line, tagged.reading.describe())
    answered = model.answer_text(args.question, text, top_k=args.top_k or 1)
    answers = answered.as_pipeline()
    line = "\t".join(f"{answer['answer']}\t{answer['score']:.3f}" for answer in answers)
    return _Answered(answers, _answers_table(answers), line, answered.question.describe())


def _fine_tuned_line(model: FineTuned, args, text: str) -> tuple[str, str]:
    """(the line printed for one line's text, what was cut of it): a classifier of pairs reads TEXT<tab>TEXT2."""
    pair = None
    if model.kind == "classification" and model.reads_pairs() is not False:
        text, tab, pair = text.partition("\t")
        if model.reads_pairs() and not (tab and pair.strip()):
            raise UserError("a classifier of pairs reads each line as TEXT, a tab, then TEXT2; this line has no TEXT2")
    answered = _answered(model, args, text, pair or None)
    return strict_json(answered.pipeline) if args.json else answered.line, answered.note


def _each_line(args, answer) -> int:
    """Print `answer`'s line for each text line (JSON lines with --json) as it comes; a text that cannot be
    answered ends it, naming its line (exit 1)."""
    source = source_name(args.text_file)
    number = 0
    try:
        for number, text in text_lines(args.text_file):
            printed, note = answer(text)
            _say_what_was_read(f"line {number}: {note}" if note else "")
            if emit(printed):
                return 1
    except TextLinesError as exc:
        return fail(str(exc))
    except USER_ERRORS as exc:
        return fail(f"{source}, line {number}: {reason(exc)}")
    return 0


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
    if kind != "qa" and not reads_lines(args.text, args.text_file) and not args.text.strip():
        return f"TEXT is empty: give {name} a text to {'label' if kind == 'classification' else 'tag'}"
    if kind == "qa" and args.question is None:
        return f"{name} answers a question about TEXT: give the question with --question"
    if kind == "classification":
        pairs = model.reads_pairs()
        if pairs and args.pair is not None and reads_lines(args.text, args.text_file):
            return f"--pair is one second text: give each line as TEXT, a tab, then TEXT2 for {name}"
        if pairs and not (args.pair or "").strip() and not reads_lines(args.text, args.text_file):
            empty = " (it is empty)" if args.pair is not None else ""
            return f"{name} was fine-tuned on pairs of texts: give the second with --pair{empty}"
        if pairs is False and args.pair is not None:
            return f"{name} was fine-tuned on single texts: --pair is for a classifier of pairs"
    return ""


def _say_what_was_read(reading: str) -> None:
    if reading:
        print(f"Note: {reading}.", file=sys.stderr)


def _labels_table(labelled, top_k: int | None) -> str:
    rows = labelled.as_pipeline(top_k)
    names = [one_line(row["label"], LABEL_CHARS) for row in rows]
    width = max(len("label"), *(len(name) for name in names))
    lines = [f"{'label':<{width}}  probability"]
    for name, row in zip(names, rows, strict=True):
        bar = "█" * round(row["score"] * BAR_WIDTH)
        lines.append(f"{name:<{width}}  {row['score']:11.3f}  {bar}")
    return "\n".join(lines)


PIECES_DIFFER = (
    "* its later pieces are tagged otherwise: a word's tag is its first piece's, as the test scores read it and "
    'the entities group the words (the pipeline\'s aggregation_strategy="first"); --aggregation simple, which '
    "groups every piece by its own tag, can split such a word"
)


def _tags_table(tagged) -> str:
    """Each word's tag (its first piece's, as the model is scored; marked * where its later pieces are tagged
    otherwise), then the entities: those words grouped as the pipeline's "first" aggregation groups them, the very
    entities and scores of --json (and of the exported model's pipeline), each with its characters as written."""
    words = " ".join(
        f"{w['word']}/{one_line(w['entity'], LABEL_CHARS)}{'*' if w.get('pieces_differ') else ''}" for w in tagged.words
    )
    lines = [f"words: {words}" if words else "words: none"]
    found = tagged.entities
    if not found:
        lines.append("entities: none")
    else:
        names = [one_line(entity["entity_group"], LABEL_CHARS) for entity in found]
        width = max(len("entity"), *(len(name) for name in names))
        lines.append(f"{'entity':<{width}}  score  characters  text")
        for name, entity in zip(names, found, strict=True):
            span, written = f"{entity['start']}–{entity['end']}", tagged.text[entity["start"] : entity["end"]]
            lines.append(f"{name:<{width}}  {entity['score']:.3f}  {span:<10}  {one_line(written)}")
    if any(w.get("pieces_differ") for w in tagged.words):
        lines.append(PIECES_DIFFER)
    return "\n".join(lines)


def _answers_table(answers: list[dict]) -> str:
    if not answers:
        return "no answer found"
    lines = ["score  characters  answer"]
    for answer in answers:
        none = answer["answer"] == "" and answer["start"] == answer["end"]  # a SQuAD v2 model's "no answer"
        span, said = ("–", "(no answer)") if none else (f"{answer['start']}–{answer['end']}", answer["answer"])
        lines.append(f"{answer['score']:.3f}  {span:<10}  {said}")
    return "\n".join(lines)


FILL_MASK_TOP_K = 5  # candidates per mask unless told


def fill_masks(args) -> int:
    """Print the top-k candidates for each [MASK] (or the filled text with --fill), as text or JSON (a fine-tuning
    run's answers are `try_fine_tuned`'s)."""
    args.top_k = FILL_MASK_TOP_K if args.top_k is None else args.top_k
    try:
        predictor = FillMask.from_path(args.model, str(resolve_device(args.device)))
        if reads_lines(args.text, args.text_file):  # one line each: a text's masks apart by tabs
            if predictor.untrained_head:
                warn_untrained(args.model, "these predictions are random")
            return _each_line(args, lambda text: (_predictions(predictor, args, text).replace("\n", "\t"), ""))
        output = _predictions(predictor, args, args.text)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if predictor.untrained_head:
        warn_untrained(args.model, "these predictions are random")
    return emit(output)


def _predictions(predictor: FillMask, args, text: str) -> str:
    """What `predict` prints for `text`: the pipeline's JSON (each candidate marked when the head is untrained), or
    with --fill the text and each mask's candidates, or lines for people."""
    if args.json and not args.fill:
        rows = predictor.as_pipeline(text, args.top_k)
        if predictor.untrained_head:
            for candidate in rows if isinstance(rows[0], dict) else [c for row in rows for c in row]:
                candidate["untrained_head"] = True
        return strict_json(rows)
    if args.fill:
        filled = predictor.fill(text, args.top_k)
        results, text = list(filled.candidates), filled.text
    else:
        results, text = predictor.predict(text, args.top_k), None
    if args.json:
        masks = [[{"score": c.score, "token": c.token_id, "token_str": c.token} for c in mask] for mask in results]
        return strict_json({"text": text, "masks": masks, "untrained_head": predictor.untrained_head})
    lines = [text] if text is not None else []
    for number, candidates in enumerate(results, start=1):
        lines.append(f"[MASK] {number}: " + "  ".join(f"{c.token} {c.score:.3f}" for c in candidates))
    return "\n".join(lines)
