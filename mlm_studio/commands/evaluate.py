"""`mlm-studio evaluate`: where a model is right and wrong on held-out text, and with --task whether it helps a
labelled task, as a table or one JSON object."""

from __future__ import annotations

import sys

from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import (
    Status,
    emit,
    fail,
    print_report,
    reason,
    strict_json,
    warn_untrained,
)
from mlm_studio.core.data.corpus import load_corpus


def run(args) -> int:
    """Print the masked-token diagnosis of a model (and, with --task, the downstream probe) as a table or JSON;
    refused when the held-out text gave nothing to score."""
    from mlm_studio.core.data.labelled import TaskError
    from mlm_studio.core.evaluation.diagnosis import diagnose
    from mlm_studio.core.evaluation.subject import load_subject
    from mlm_studio.core.evaluation.task_probe import probe_task, read_task, sample_note

    try:
        task = read_task(args.task, args.text_column, args.label_column, Status()) if args.task is not None else None
        if task is not None and task.report.noteworthy:
            print_report(task.report)
        if task is not None and sample_note(task):
            print(f"Note: {sample_note(task)}.", file=sys.stderr)
        corpus = load_corpus(list(args.corpus)) if args.corpus else None
        subject = load_subject(args.model, args.checkpoint, corpus)
        diagnosis = diagnose(subject.model, subject.tokenizer, subject.config, subject.validation)
        if diagnosis.predicted == 0:
            return fail(
                f"{subject.title}: nothing was scored, as the held-out text ({len(subject.validation):,} blocks) gave "
                "no masked position; give a larger corpus"
            )
        result = {**diagnosis.to_json(), "untrained_head": subject.untrained_head}
        if task is not None:
            probed = probe_task(
                subject.encoder, subject.tokenizer, task.texts, task.labels, progress=Status(), read_once=task.read_once
            )
            result["task"] = {**probed.to_json(), "sampled_from": task.sampled_from}
    except (*USER_ERRORS, TaskError) as exc:
        return fail(reason(exc))
    if subject.untrained_head:
        warn_untrained(args.model, "the masked-token figures are those of a random head (a --task probe reads "
                        "the encoder alone and still counts)")  # fmt: skip
    return emit(strict_json(result) if args.json else _diagnosis_table(subject.title, diagnosis, result.get("task")))


def _diagnosis_table(title: str, diagnosis, task: dict | None) -> str:
    """`evaluate`'s report for people; an empty group's accuracy is a dash."""
    lines = [
        f"{title}: {diagnosis.predicted:,} masked positions",
        f"loss {diagnosis.loss:.4f} · accuracy {diagnosis.accuracy:.2%} · top-5 {diagnosis.top5_accuracy:.2%} · "
        f"calibration error {diagnosis.ece:.3f}",
    ]
    for heading, shares in (("by corpus frequency", diagnosis.by_frequency), ("by kind", diagnosis.by_kind)):
        lines += ["", f"{heading}:"]
        for share in shares:
            accuracy = f"{share.accuracy:7.2%}" if share.count else f"{'—':>7}"
            lines.append(f"  {share.name:>14}  {share.count:>7,}  {accuracy}")
    lines += ["", "most frequent confusions (expected → predicted):"]
    lines += [f"  {expected} → {predicted}  ×{count}" for expected, predicted, count in diagnosis.confusions[:10]]
    if task is not None:
        lines += [
            "",
            f"task ({task['examples']:,} examples): accuracy {task['accuracy']:.2%}, macro-F1 {task['macro_f1']:.3f}; "
            f"majority class {task['majority_accuracy']:.2%}, bag of words {task['bag_of_words_accuracy']:.2%}",
            "same-label neighbours of the held-out texts among the training texts: "
            f"recall@1 {task['recall_at_1']:.2%}, recall@5 {task['recall_at_5']:.2%}, MRR {task['mrr']:.3f}; "
            f"bag of words recall@1 {task['bag_of_words_recall_at_1']:.2%}, recall@5 "
            f"{task['bag_of_words_recall_at_5']:.2%}, MRR {task['bag_of_words_mrr']:.3f}",
        ]
        if task.get("repeated"):
            lines.append(
                f"{task['repeated']:,} texts repeat another and were read once, so no held-out text has its copy "
                "among the training texts"
            )
    return "\n".join(lines)
