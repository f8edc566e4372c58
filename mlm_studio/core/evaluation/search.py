"""Semantic search, the guide's fourth use case: a corpus's documents embedded by a model (each the mean of a
layer's output over its tokens, as the task probe reads texts), the documents nearest a query by cosine, and how
well a model's neighbours share labels on labelled texts (recall@k and the mean reciprocal rank)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.evaluation.task_probe import sentence_vectors
from mlm_studio.core.models.encoder import layer_count
from mlm_studio.core.progress import Progress


@dataclass(frozen=True)
class Hit:
    """One document found: its place in the corpus, its cosine to the query, its text."""

    index: int
    score: float
    text: str


@dataclass(frozen=True)
class SearchIndex:
    """The documents and their unit-length vectors, with the model that made them (a query is read alike)."""

    texts: tuple[str, ...]
    vectors: np.ndarray  # (documents, width), each of length 1 (0 for a text the model reads as nothing)
    model: torch.nn.Module
    tokenizer: MLMTokenizer
    layer: int | None = None

    def nearest(self, query: str, k: int = 10) -> list[Hit]:
        """The `k` documents nearest `query` by cosine, the nearest first."""
        if not query.strip():
            raise ValueError("the query is empty; type a few words to search for")
        vector = unit(sentence_vectors(self.model, self.tokenizer, [query], self.layer))[0]
        scores = self.vectors @ vector
        order = np.argsort(-scores, kind="stable")[: max(0, k)]
        return [Hit(int(i), float(scores[i]), self.texts[i]) for i in order]


def build_index(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    texts: list[str],
    layer: int | None = None,
    progress: Progress | None = None,
) -> SearchIndex:
    """Embed `texts` with `model` (an encoder: the output of layer `layer`, 1 = the first, the last by default),
    in batches, reporting progress and stopping when `progress` is cancelled."""
    if not texts:
        raise ValueError("there are no documents to search; load a corpus with text")
    layers = layer_count(model)
    if layer is not None and not 1 <= layer <= layers:
        raise ValueError(f"the model has {layers} layers; choose a layer from 1 to {layers}, or the last by default")
    vectors = unit(sentence_vectors(model, tokenizer, texts, layer, progress=progress))
    return SearchIndex(tuple(texts), vectors, model, tokenizer, layer)


def unit(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero), so a dot product is a cosine."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


@dataclass(frozen=True)
class RetrievalScores:
    """How often a text's nearest neighbours share its label, each text asking in turn of all the others."""

    k: int
    recall_at_k: float  # share of texts with a text of their label among their k nearest (as metric learning counts)
    mrr: float  # mean over texts of 1 / the rank of the nearest text of their label
    queries: int  # texts asking: those whose label another text has

    def to_json(self) -> dict:
        return dict(self.__dict__)


def retrieval_scores(vectors: np.ndarray, labels: list[str], k: int = 10) -> RetrievalScores:
    """Recall@k and MRR of same-label neighbours by cosine, each text a query against the others (leave one out);
    a text whose label no other text has does not ask."""
    if len(vectors) != len(labels):
        raise ValueError(f"{len(vectors)} vectors for {len(labels)} labels")
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    names, codes = np.unique(np.asarray(labels), return_inverse=True)
    counts = np.bincount(codes, minlength=len(names))
    asking = np.flatnonzero(counts[codes] > 1)
    if len(asking) == 0:
        raise ValueError("no label is shared by two texts, so no neighbour can share one")
    similar = unit(np.asarray(vectors, dtype=np.float64))
    hits, reciprocal = 0, 0.0
    for start in range(0, len(asking), 256):
        rows = asking[start : start + 256]
        scores = similar[rows] @ similar.T
        scores[np.arange(len(rows)), rows] = -np.inf  # a text is not its own neighbour
        order = np.argsort(-scores, axis=1, kind="stable")
        same = codes[order] == codes[rows][:, None]
        first = same.argmax(axis=1)  # 0-based rank of the nearest text of the same label
        hits += int((first < k).sum())
        reciprocal += float((1.0 / (first + 1)).sum())
    return RetrievalScores(k, hits / len(asking), reciprocal / len(asking), len(asking))
