"""`mlm-studio predict … --explain [METHOD]`: why a masked-LM predicted a word at a [MASK] (a fine-tuned run: its
label of the text or of a pair of texts, its tag of a word, or its answer to a question), each word's attribution
as a signed bar (a pair's or a question's words under their own text), or with --json the method, the prediction
and each word's score (and which text each word is in)."""

from __future__ import annotations

from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import MISUSED, emit, fail, reason, strict_json, warn_untrained
from mlm_studio.core.evaluation.explain.answer_attributions import AnswerExplainer
from mlm_studio.core.evaluation.explain.attributions import COMPLETE_WITHIN, Attribution, Explainer, amount
from mlm_studio.core.evaluation.explain.choices import DEFAULT_STEPS, MAX_STEPS, METHODS
from mlm_studio.core.evaluation.explain.task_attributions import TaskExplainer
from mlm_studio.core.evaluation.explain.two_texts import TwoTextAttribution
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.runs.device import resolve_device

BAR_WIDTH = 20  # characters of a score as large as the scale (full colour in the window)


def explain_prediction(args, tuned: FineTuned | None = None) -> int:
    """Explain one prediction of `args.model` on `args.text` (a fine-tuned run's label, of the pair with --pair; with
    --mask a tagger's tag of that word; with --question the answer found in the text) (exit 0), or say why it
    cannot (1; 2 for options that do not go with --explain)."""
    if args.fill:
        return fail("--explain explains one mask's prediction as the text stands; leave out --fill", MISUSED)
    if args.text is None or args.text == "-":
        return fail("--explain explains one TEXT given on the command line, not texts read one a line", MISUSED)
    misused = _misused_number(args, tuned)
    if misused:
        return fail(misused, MISUSED)
    if tuned is not None and tuned.kind == "qa" and args.question is None:
        return fail(f"{tuned.run.name} answers a question about TEXT: give the question with --question", MISUSED)
    if tuned is not None and tuned.kind == "qa" and args.pair is not None:
        return fail(f"--pair does not apply to {tuned.run.name}: it answers --question from TEXT", MISUSED)
    if tuned is not None and tuned.kind == "qa" and args.candidate is not None:
        return fail("--candidate does not apply to a question-answering model: its best answer is explained", MISUSED)
    try:
        explained, untrained = _explained(args, tuned)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if untrained:
        warn_untrained(args.model, "this explains a random prediction")
    printed = explained.as_json()
    numbered = tuned is None or tuned.kind not in ("classification", "qa")
    printed["mask"] = explained.mask + 1 if numbered else None  # as --mask counts
    printed["completeness_error"] = explained.completeness_error()  # integrated gradients' sum against the logit
    return emit(strict_json(printed) if args.json else table(explained, explained.target))


def _misused_number(args, tuned: FineTuned | None) -> str:
    """Why --mask, --steps or --top-k does not apply as given ("" when it does)."""
    if args.mask is not None and args.mask < 1:
        return f"--mask counts the text's masks (a tagger's words) from 1, not {args.mask}"
    if args.mask is not None and tuned is not None and tuned.kind in ("classification", "qa"):
        return "--mask picks a [MASK] or a tagger's word; this model's answer is of the whole text"
    if args.top_k is not None and tuned is not None:
        other = "" if tuned.kind == "qa" else " (another label: --candidate)"
        return f"--top-k lists more answers; --explain explains the best one{other}"
    if args.steps is not None and args.explain != "ig":
        return f"--steps sets integrated gradients' steps (--explain ig); {args.explain} takes none"
    return ""


def _explained(args, tuned: FineTuned | None) -> tuple[Attribution, bool]:
    """The attribution asked for, and whether the model's head is untrained."""
    method, baseline = args.explain, args.baseline
    steps, mask = DEFAULT_STEPS if args.steps is None else args.steps, 0 if args.mask is None else args.mask - 1
    if tuned is None:
        predictor = FillMask.from_path(args.model, str(resolve_device(args.device)))
        explainer = Explainer.of(predictor)
        return explainer.explain(args.text, args.candidate, mask, method, steps, baseline), predictor.untrained_head
    tuned.model.to(resolve_device(args.device))
    if tuned.kind == "qa":
        return AnswerExplainer(tuned).explain_answer(args.question, args.text, method, steps, baseline), False
    explainer = TaskExplainer(tuned)
    if args.pair is not None:
        return explainer.explain_pair(args.text, args.pair, args.candidate, method, steps, baseline), False
    return explainer.explain(args.text, args.candidate, mask, method, steps, baseline), False


def table(explained: Attribution, where: str) -> str:
    """A line saying what is explained (the prediction `where`), the scale of the bars (what the words explain, and
    when no word carried the prediction, that), then each word with its score and a bar (right: for, left:
    against)."""
    method, unit = METHODS[explained.method]
    what = f"{explained.candidate} ({explained.probability:.3f}) {where}"
    if isinstance(explained, TwoTextAttribution) and explained.answer is not None:
        what = f"{where} (score {explained.probability:.3f}), read in {explained.window}"
    lines = [f"Why {what}: {method}, in {unit} units (+ for the prediction, - against); the model: {explained.source}"]
    if explained.gap is not None:
        lines.append(
            f"{explained.steps} steps from a {explained.baseline} baseline; the words sum to {explained.total:+.3g}, "
            f"the logit changed by {explained.gap:+.3g}"
        )
        if explained.completeness_error() > COMPLETE_WITHIN:
            more = min(4 * explained.steps, MAX_STEPS)
            lines.append(
                f"the sum misses the logit's change by {explained.completeness_error():.1%} (more than "
                f"{COMPLETE_WITHIN:.0%}): more steps (--steps {more}) bring them together"
            )
    scale = f"a full bar ({BAR_WIDTH} characters) is {amount(explained.scale(), unit)}"
    lines.append("; ".join(filter(None, [scale, explained.uncarried()])))
    width = max((len(word) for word in explained.words), default=4)
    parts = explained.parts if isinstance(explained, TwoTextAttribution) else (0,) * len(explained.words)
    for number, (word, score, share) in enumerate(zip(explained.words, explained.scores, explained.shares())):
        if isinstance(explained, TwoTextAttribution) and (number == 0 or parts[number] != parts[number - 1]):
            lines.append(f"{explained.names[parts[number]]}:")
        bar = "█" * round(abs(share) * BAR_WIDTH)
        drawn = f"{bar:>{BAR_WIDTH}}|" if share < 0 else f"{'':>{BAR_WIDTH}}|{bar}"
        lines.append(f"{word:<{width}}  {score:+.3e}  {drawn}")
    return "\n".join(lines)
