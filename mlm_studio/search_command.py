"""`mlm-studio search`: the documents of a corpus nearest a query by a model's sentence vectors, and with a
labelled file how often a text's nearest neighbours share its label."""

from __future__ import annotations

import sys

from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.evaluation.search import build_index, retrieval_scores
from mlm_studio.core.evaluation.subject import load_subject
from mlm_studio.core.evaluation.task_probe import read_task
from mlm_studio.core.evaluation.vectors import sentence_vectors
from mlm_studio.core.finetune.labelled import TaskError
from mlm_studio.headless import USER_ERRORS
from mlm_studio.terminal import Status, emit, fail, strict_json


def search(args) -> int:
    """Print the `--k` documents nearest each query (rank, cosine, text) or JSON; with --task, recall@k and MRR."""
    if not args.query and args.task is None:
        return fail("give --query TEXT to search the corpus, or --task FILE to score same-label neighbours")
    try:
        corpus = load_corpus(args.corpus, progress=Status())
        subject = load_subject(args.model, corpus=corpus, progress=Status())
        encoder, tokenizer = subject.encoder, subject.tokenizer
        result = {"model": subject.title}
        if args.query:
            index = build_index(encoder, tokenizer, list(corpus.iter_documents()), args.layer, Status())
            result["queries"] = [
                {"query": query, "hits": [hit.__dict__ for hit in index.nearest(query, args.k)]} for query in args.query
            ]
        if args.task is not None:
            task = read_task(args.task, args.text_column, args.label_column)
            vectors = sentence_vectors(encoder, tokenizer, task.texts, args.layer, progress=Status())
            result["retrieval"] = retrieval_scores(vectors, task.labels, args.k).to_json()
    except (*USER_ERRORS, TaskError) as exc:
        return fail(str(exc))
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    return emit(strict_json(result) if args.json else _for_people(result))


def _for_people(result: dict) -> str:
    lines = []
    for asked in result.get("queries", []):
        lines += [f"{result['model']}: nearest to {asked['query']!r}"]
        for rank, hit in enumerate(asked["hits"], start=1):
            text = " ".join(hit["text"].split())
            lines.append(f"{rank:>4}  {hit['score']:.3f}  {text[:100]}{'…' if len(text) > 100 else ''}")
    scores = result.get("retrieval")
    if scores is not None:
        lines.append(
            f"same-label neighbours ({scores['queries']:,} texts): recall@{scores['k']} {scores['recall_at_k']:.2%}, "
            f"MRR {scores['mrr']:.3f}"
        )
    return "\n".join(lines)
