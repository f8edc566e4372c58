"""`mlm-studio search`: the documents of a corpus nearest a query by a model's sentence vectors, and with a
labelled file how often a text's nearest neighbours share its label."""

from __future__ import annotations

import sys

from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import MISUSED, Status, emit, fail, print_report, reason, strict_json
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.labelled import TaskError
from mlm_studio.core.evaluation.search import build_index, distinct_texts, retrieval_scores
from mlm_studio.core.evaluation.subject import load_reader
from mlm_studio.core.evaluation.task_probe import read_task, sample_note
from mlm_studio.core.evaluation.vectors import sentence_vectors, tokens_read
from mlm_studio.core.shown import one_line, shown


def run(args) -> int:
    """Print the `--k` documents nearest each query (rank, cosine, text) or JSON; with --task, recall@k and MRR.
    A --k larger than there are documents (or other texts) is capped at their number, and said."""
    if not args.query and args.task is None:
        return fail("give --query TEXT to search the corpus, or --task FILE to score same-label neighbours")
    if args.query and not args.corpus:
        return fail("--query searches a corpus: give it with --corpus PATH", MISUSED)
    if args.corpus and not args.query:
        return fail("--corpus is searched by --query; --task scores the labelled file alone: leave out --corpus",
                    MISUSED)  # fmt: skip
    try:
        reader = load_reader(args.model)
        result = {"model": reader.title}
        if args.query:
            result["queries"] = _nearest(reader, args, result)
        if args.task is not None:
            result["retrieval"] = _retrieval(reader, args)
    except (*USER_ERRORS, TaskError) as exc:
        return fail(reason(exc))
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    result["k_asked"] = args.k
    return emit(strict_json(result) if args.json else _for_people(result))


def _nearest(reader, args, result: dict) -> list[dict]:
    """Each query's nearest documents of the corpus; documents longer than the model reads are said."""
    documents = list(load_corpus(args.corpus, progress=Status()).iter_documents())
    index = build_index(reader.encoder, reader.tokenizer, documents, args.layer, Status())
    k = min(args.k, len(documents))
    if index.cut:
        result["documents_cut"] = {"count": len(index.cut), "tokens_read": tokens_read(reader.encoder)}
        print(f"Note: {index.cut_note}.", file=sys.stderr)
    found = []
    for query in args.query:
        read = index.query_read(query)
        if read < len(query):  # said, as a document cut is: where it ends
            end = one_line(query[max(0, read - 30) : read], 30)
            limit = tokens_read(reader.encoder)
            print(f"Note: the query {shown(query)} is longer than the {limit:,} tokens read of it: it was read up to "
                  f"character {read:,} of {len(query):,} ('…{end}')", file=sys.stderr)  # fmt: skip
        found.append(
            {"query": query, "k": k, "characters_read": read, "hits": [h.__dict__ for h in index.nearest(query, k)]}
        )
    return found


def _retrieval(reader, args) -> dict:
    """Recall@k and MRR of the task file's same-label neighbours; its rows left out and its repeats said."""
    task = read_task(args.task, args.text_column, args.label_column, Status())
    if task.report.noteworthy:  # the rows left out, said as evaluate says them
        print_report(task.report)
    if sample_note(task):
        print(f"Note: {sample_note(task)}.", file=sys.stderr)
    texts, labels, repeated = distinct_texts(task.texts, task.labels, reader.tokenizer.normalised)
    if repeated:
        more = " more" if task.repeats is not None and task.repeats.rows else ""
        print(f"Note: {repeated:,}{more} repeated texts (as the model's tokenizer reads them) counted once: a text "
              "is not its copy's neighbour.", file=sys.stderr)  # fmt: skip
    vectors = sentence_vectors(reader.encoder, reader.tokenizer, texts, args.layer, progress=Status())
    scores = retrieval_scores(vectors, labels, min(args.k, len(texts) - 1), progress=Status()).to_json()
    return {**scores, "repeated": repeated + task.read_once, "sampled_from": task.sampled_from}


def _for_people(result: dict) -> str:
    asked_k, lines = result["k_asked"], []
    for asked in result.get("queries", []):
        capped = f" (the {asked['k']:,} documents there are, of --k {asked_k:,})" if asked["k"] < asked_k else ""
        lines += [f"{result['model']}: nearest to {shown(asked['query'])}{capped}"]
        for rank, hit in enumerate(asked["hits"], start=1):
            text = " ".join(hit["text"].split())
            lines.append(f"{rank:>4}  {hit['score']:.3f}  {text[:100]}{'…' if len(text) > 100 else ''}")
    scores = result.get("retrieval")
    if scores is not None:
        capped = f" (--k {asked_k:,} capped at the {scores['k']:,} other texts)" if scores["k"] < asked_k else ""
        lines.append(
            f"same-label neighbours ({scores['queries']:,} texts): recall@{scores['k']} {scores['recall_at_k']:.2%}, "
            f"MRR {scores['mrr']:.3f}{capped}"
        )
    return "\n".join(lines)
