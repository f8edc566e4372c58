"""Semantic search, the guide's fourth use case: a corpus's documents embedded by a model (each the mean of a
layer's output over its tokens, a long document read whole in windows, as the task probe reads texts), the
documents nearest a query by cosine, and how
well a model's neighbours share labels on labelled texts (recall@k and the mean reciprocal rank)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mlm_studio.core.data.copies import Normalise, as_written
from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.errors import UserError
from mlm_studio.core.evaluation.vectors import MAX_TEXT_CHARS, sentence_vectors, tokens_read
from mlm_studio.core.models.encoder import layer_count
from mlm_studio.core.progress import Progress


@dataclass(frozen=True)
class Hit:
    """One document found: its place in the corpus (its first copy's), its cosine to the query, its text, and how
    many times the corpus holds that text."""

    index: int
    score: float
    text: str
    copies: int = 1


@dataclass(frozen=True)
class SearchIndex:
    """The distinct documents and their unit-length vectors, with the model that made them (a query is read
    alike). A text the corpus holds more than once is embedded and found once."""

    texts: tuple[str, ...]  # each distinct text once, in the order of its first copy
    positions: tuple[int, ...]  # each text's first place in the corpus
    copies: tuple[int, ...]  # how many times the corpus holds each text
    vectors: np.ndarray  # (texts, width), each of length 1 (0 for a text the model reads as nothing)
    model: torch.nn.Module
    tokenizer: MLMTokenizer
    layer: int | None = None
    cut: tuple[int, ...] = ()  # the corpus places of the documents longer than the model read of each

    @property
    def cut_note(self) -> str:
        """What was not read, in words ("" when every document was read whole)."""
        if not self.cut:
            return ""
        return (
            f"{len(self.cut):,} of the {len(self.texts):,} documents are longer than the {tokens_read(self.model):,} "
            f"tokens read of each (the first at place {self.cut[0] + 1:,}); their vectors stand for their beginnings"
        )

    @property
    def documents(self) -> int:
        """How many documents were read, repeated ones counted each time."""
        return sum(self.copies)

    def query_read(self, query: str) -> int:
        """How many characters of `query` are read: all of it, or, past `tokens_read`, up to the last token read."""
        limit = tokens_read(self.model)
        ids, spans = self.tokenizer.encode_text(query[:MAX_TEXT_CHARS])
        if len(ids) <= limit and len(query) <= MAX_TEXT_CHARS:
            return len(query)
        return spans[limit - 1][1]

    def nearest(self, query: str, k: int = 10) -> list[Hit]:
        """The `k` documents nearest `query` by cosine, the nearest first."""
        if not query.strip():
            raise UserError("the query is empty; type a few words to search for")
        vector = unit(sentence_vectors(self.model, self.tokenizer, [query], self.layer))[0]
        scores = self.vectors @ vector
        order = np.argsort(-scores, kind="stable")[: max(0, k)]
        return [Hit(self.positions[i], float(scores[i]), self.texts[i], self.copies[i]) for i in order]


def build_index(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    texts: list[str],
    layer: int | None = None,
    progress: Progress | None = None,
) -> SearchIndex:
    """Embed `texts` with `model` (an encoder: the output of layer `layer`, 1 = the first, the last by default),
    in batches, reporting progress and stopping when `progress` is cancelled. Texts that are the same but for their
    spacing are embedded once: a search lists each once."""
    if not texts:
        raise UserError("there are no documents to search; load a corpus with text")
    layers = layer_count(model)
    if layer is not None and not 1 <= layer <= layers:
        raise UserError(f"the model has {layers} layers; choose a layer from 1 to {layers}, or the last by default")
    first: dict[str, int] = {}  # each distinct text (spacing aside) to its number among the distinct
    positions, copies = [], []
    for position, text in enumerate(texts):
        number = first.setdefault(" ".join(text.split()), len(first))
        if number == len(positions):
            positions.append(position)
            copies.append(0)
        copies[number] += 1
    distinct = [texts[p] for p in positions]
    cut: list[int] = []
    vectors = unit(sentence_vectors(model, tokenizer, distinct, layer, progress=progress, cut=cut))
    places = tuple(positions[i] for i in cut)
    return SearchIndex(tuple(distinct), tuple(positions), tuple(copies), vectors, model, tokenizer, layer, places)


def distinct_texts(
    texts: list[str], labels: list[str], normalise: Normalise = as_written
) -> tuple[list[str], list[str], int]:
    """Each text once (as `normalise` reads it, spacing aside: pass the tokenizer's `normalised` for texts the
    model reads alike), under the label of its first copy, and how many repeats were left out: a text whose copy
    is its neighbour, or on the other side of a split, would score what is not learned."""
    first: dict[str, int] = {}
    for place, text in enumerate(texts):
        first.setdefault(" ".join(normalise(text).split()), place)
    kept = list(first.values())
    return [texts[i] for i in kept], [labels[i] for i in kept], len(texts) - len(kept)


def unit(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero), so a dot product is a cosine."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


@dataclass(frozen=True)
class RetrievalScores:
    """How often a text's nearest neighbours share its label."""

    k: int
    recall_at_k: float  # share of texts with a text of their label among their k nearest (as metric learning counts)
    mrr: float  # mean over texts of 1 / the rank of the nearest text of their label
    queries: int  # texts asking: those whose label a neighbour can have

    @classmethod
    def of(cls, ranks: np.ndarray, k: int) -> RetrievalScores:
        """The scores of `neighbour_ranks`' ranks, recall counted at `k`."""
        if k < 1:
            raise UserError(f"k must be at least 1, not {k}")
        return cls(k, float((ranks < k).mean()), float((1.0 / (ranks + 1)).mean()), len(ranks))

    def to_json(self) -> dict:
        return dict(self.__dict__)


def retrieval_scores(
    vectors, labels: list[str], k: int = 10, among: tuple | None = None, progress: Progress | None = None
) -> RetrievalScores:
    """Recall@k and MRR of same-label neighbours by cosine (see `neighbour_ranks`)."""
    return RetrievalScores.of(neighbour_ranks(vectors, labels, among, progress), k)


def neighbour_ranks(vectors, labels, among: tuple | None = None, progress: Progress | None = None) -> np.ndarray:
    """For each text asking, the 0-based rank by cosine of its nearest neighbour of the same label: each text a
    query against the others (leave one out), or with `among` (vectors and labels) against those. A text whose
    label no neighbour has does not ask. Vectors are rows of an array or of a sparse matrix (TF-IDF). The
    queries' batches are reported to `progress`."""
    from sklearn.preprocessing import normalize
    from sklearn.utils.extmath import safe_sparse_dot

    if vectors.shape[0] != len(labels):
        raise ValueError(f"{vectors.shape[0]} vectors for {len(labels)} labels")
    queries = normalize(vectors.astype(np.float64))
    candidates, their_labels = (
        (queries, labels) if among is None else (normalize(among[0].astype(np.float64)), among[1])
    )
    names, codes = np.unique(np.concatenate([np.asarray(labels), np.asarray(their_labels)]), return_inverse=True)
    mine, theirs = codes[: len(labels)], codes[len(labels) :]
    present = np.bincount(theirs, minlength=len(names))
    asking = np.flatnonzero(present[mine] > (1 if among is None else 0))
    if len(asking) == 0:
        raise UserError("no label is shared by two texts (a query and a neighbour), so no neighbour can share one")
    ranks = []
    for start in range(0, len(asking), 256):
        if progress is not None:
            progress.check()
            progress.report(start, len(asking), f"Finding the nearest neighbours of {len(asking):,} texts")
        rows = asking[start : start + 256]
        scores = safe_sparse_dot(queries[rows], candidates.T, dense_output=True)
        if among is None:
            scores[np.arange(len(rows)), rows] = -np.inf  # a text is not its own neighbour
        ranks.append(_first_same_rank(scores, theirs[None, :] == mine[rows][:, None]))
    return np.concatenate(ranks)


def _first_same_rank(scores: np.ndarray, same: np.ndarray) -> np.ndarray:
    """Per row, the 0-based place of the best-scoring `same` column in the row sorted by score, highest first, ties
    in column order (a stable sort's), counted without sorting: the columns above it and those tied before it."""
    best = np.where(same, scores, -np.inf).max(axis=1, keepdims=True)
    tied = scores == best
    first = (same & tied).argmax(axis=1)[:, None]
    return (scores > best).sum(axis=1) + (tied & (np.arange(scores.shape[1])[None, :] < first)).sum(axis=1)
