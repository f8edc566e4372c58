"""`mlm-studio predict … --explain [METHOD]`: why a masked-LM predicted a word at a [MASK] (a fine-tuned run: its
label of the text, or its tag of a word), each word's attribution as a signed bar, or with --json the method, the
prediction and each word's score."""

from __future__ import annotations

from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import MISUSED, emit, fail, reason, strict_json, warn_untrained
from mlm_studio.core.evaluation.explain.attributions import COMPLETE_WITHIN, Attribution, Explainer
from mlm_studio.core.evaluation.explain.choices import DEFAULT_STEPS, MAX_STEPS, METHODS
from mlm_studio.core.evaluation.explain.task_attributions import TaskExplainer
from mlm_studio.core.evaluation.predict import FillMask
from mlm_studio.core.finetune.predict import FineTuned
from mlm_studio.core.training.device import resolve_device

BAR_WIDTH = 20  # characters of the largest score's bar


def explain_prediction(args, tuned: FineTuned | None = None) -> int:
    """Explain one prediction of `args.model` on `args.text` (a fine-tuned run's label, or with --mask its tag of
    that word) (exit 0), or say why it cannot (1; 2 for options that do not go with --explain)."""
    if args.fill:
        return fail("--explain explains one mask's prediction as the text stands; leave out --fill", MISUSED)
    if args.text is None or args.text == "-":
        return fail("--explain explains one TEXT given on the command line, not texts read one a line", MISUSED)
    mask, whole_text = 1 if args.mask is None else args.mask, tuned is not None and tuned.kind == "classification"
    steps = DEFAULT_STEPS if args.steps is None else args.steps
    if mask < 1:
        return fail(f"--mask counts the text's masks (a tagger's words) from 1, not {mask}", MISUSED)
    if args.mask is not None and whole_text:
        return fail("--mask picks a [MASK] or a tagger's word; a classifier labels the whole text", MISUSED)
    if args.steps is not None and args.explain != "ig":
        return fail(f"--steps sets integrated gradients' steps (--explain ig); {args.explain} takes none", MISUSED)
    try:
        if tuned is None:
            predictor = FillMask.from_path(args.model, str(resolve_device(args.device)))
            explainer, untrained = Explainer.of(predictor), predictor.untrained_head
        else:
            explainer, untrained = TaskExplainer(tuned), False
        explained = explainer.explain(args.text, args.candidate, mask - 1, args.explain, steps, args.baseline)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if untrained:
        warn_untrained(args.model, "this explains a random prediction")
    if tuned is None:
        where = f"at [MASK] {explained.mask + 1}"
    else:
        where = "of the text" if tuned.kind == "classification" else f"of word {explained.mask + 1}"
    printed = {**explained.as_json(), "mask": None if whole_text else explained.mask + 1}  # as --mask
    printed["completeness_error"] = explained.completeness_error()  # integrated gradients' sum against the logit
    return emit(strict_json(printed) if args.json else table(explained, where))


def table(explained: Attribution, where: str) -> str:
    """A line saying what is explained (the prediction `where`), then each word with its score and a bar (right:
    for, left: against)."""
    method, unit = METHODS[explained.method]
    lines = [
        f"Why {explained.candidate} ({explained.probability:.3f}) {where}: {method}, in {unit} units (+ for the "
        f"prediction, - against); the model: {explained.source}"
    ]
    if explained.gap is not None:
        lines.append(
            f"{explained.steps} steps from a {explained.baseline} baseline; the words sum to {explained.total:+.4f}, "
            f"the logit changed by {explained.gap:+.4f}"
        )
        if explained.completeness_error() > COMPLETE_WITHIN:
            more = min(4 * explained.steps, MAX_STEPS)
            lines.append(
                f"the sum misses the logit's change by {explained.completeness_error():.1%} (more than "
                f"{COMPLETE_WITHIN:.0%}): more steps (--steps {more}) bring them together"
            )
    width = max((len(word) for word in explained.words), default=4)
    for word, score, share in zip(explained.words, explained.scores, explained.normalised()):
        bar = "█" * round(abs(share) * BAR_WIDTH)
        drawn = f"{bar:>{BAR_WIDTH}}|" if share < 0 else f"{'':>{BAR_WIDTH}}|{bar}"
        lines.append(f"{word:<{width}}  {score:+.4f}  {drawn}")
    return "\n".join(lines)
