"""What the model learned, seen through one word: its occurrences in the corpus placed by their contextual
vectors at a chosen layer (a 2-D PCA projection, k-means clusters, both from scikit-learn), so that "bank" by
a river and "bank" with interest rates fall apart if the model tells them apart; any sentence of your own can
be placed among them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.errors import UserError
from mlm_studio.core.models.encoder import layer_outputs
from mlm_studio.core.progress import Progress

CONTEXT_CHARS = 160  # characters kept on each side of an occurrence


@dataclass(frozen=True)
class ContextMap:
    word: str
    layer: int
    snippets: tuple[str, ...]  # each occurrence in its context
    vectors: np.ndarray  # (N, H) unit vectors of the word in each context
    points: np.ndarray  # (N, 2) their projection
    clusters: np.ndarray  # (N,) cluster of each
    projection: object  # the fitted PCA, to place new sentences

    def nearest(self, index: int, count: int = 5) -> list[int]:
        """The occurrences whose vectors are closest (cosine) to occurrence `index`, itself left out."""
        similarity = self.vectors @ self.vectors[index]
        order = [int(i) for i in np.argsort(-similarity) if i != index]
        return order[:count]


def occurrences(documents: Iterable[str], word: str, limit: int = 300) -> list[tuple[str, int, int]]:
    """Up to `limit` occurrences of `word` as a whole word (any case): (snippet, start, end) of each, the
    word at [start, end) of its snippet."""
    pattern = re.compile(rf"(?<!\w){re.escape(word.strip())}(?!\w)", re.IGNORECASE)
    found = []
    for document in documents:
        for match in pattern.finditer(document):
            left = max(0, match.start() - CONTEXT_CHARS)
            snippet = document[left : match.end() + CONTEXT_CHARS]
            found.append((snippet, match.start() - left, match.end() - left))
            if len(found) >= limit:
                return found
    return found


@torch.no_grad()
def word_vectors(
    model: torch.nn.Module, tokenizer: MLMTokenizer, spans: list[tuple[str, int, int]], layer: int, progress=None
) -> np.ndarray:
    """(N, H): the mean of the output of layer `layer` (1 = first) over the tokens of each span's word."""
    progress = progress or Progress()
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    vectors = []
    with layer_outputs(model, layer) as captured:
        for number, (text, start, end) in enumerate(spans):
            if number % 16 == 0:
                progress.check()
                progress.report(number, len(spans), "Reading the contexts")
            ids, inside = _window(tokenizer, text, start, end, model.config.max_tokens())
            captured.clear()
            model.hidden(torch.tensor([ids], device=device))
            states = captured[0][0].float()  # (L, H)
            vectors.append(states[inside].mean(0).cpu().numpy() if inside else np.zeros(states.shape[-1]))
    model.train(was_training)
    vectors = np.stack(vectors)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _window(tokenizer: MLMTokenizer, text: str, start: int, end: int, limit: int) -> tuple[list[int], list[int]]:
    """Ids of `text` cut to `limit` tokens around the word at [start, end), and the positions of its tokens."""
    ids, offsets = tokenizer.encode_text(text)
    content, spans = ids[1:-1], offsets[1:-1]
    inside = [i for i, (a, b) in enumerate(spans) if a < end and b > start and b > a]
    width = limit - 2
    first = max(0, min((inside[0] if inside else 0) - width // 2, len(content) - width))
    window = content[first : first + width]
    kept = [i - first + 1 for i in inside if first <= i < first + width]
    return [tokenizer.cls_id, *window, tokenizer.sep_id], kept


def context_map(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    documents: Iterable[str],
    word: str,
    layer: int,
    limit: int = 300,
    clusters: int = 4,
    progress=None,
) -> ContextMap:
    """The occurrences of `word` placed by their vectors at `layer`; raises ValueError when there are too few."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    spans = occurrences(documents, word, limit)
    if len(spans) < 3:
        raise UserError(f"'{word}' occurs {len(spans)} time(s) in the corpus; at least 3 are needed")
    vectors = word_vectors(model, tokenizer, spans, layer, progress)
    projection = PCA(n_components=2, random_state=0).fit(vectors)
    groups = KMeans(n_clusters=min(clusters, len(spans)), n_init=10, random_state=0).fit_predict(vectors)
    snippets = tuple(" ".join(text.split()) for text, _, _ in spans)
    return ContextMap(word, layer, snippets, vectors, projection.transform(vectors), groups, projection)


def place(context: ContextMap, model: torch.nn.Module, tokenizer: MLMTokenizer, sentence: str) -> np.ndarray:
    """Where `sentence`'s use of the map's word falls on the map; ValueError if the word is not in it."""
    spans = occurrences([sentence], context.word, 1)
    if not spans:
        raise UserError(f"the sentence does not contain '{context.word}'")
    vector = word_vectors(model, tokenizer, spans, context.layer)
    return context.projection.transform(vector)[0]
