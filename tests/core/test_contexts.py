"""The contextual-embedding explorer's engine: occurrences found as whole words, one vector per occurrence at
the chosen layer, and a sentence placed exactly where its own context lies."""

import numpy as np
import pytest

from mlm_studio.core.evaluation.contexts import context_map, occurrences, place, word_vectors
from mlm_studio.core.evaluation.subject import load_subject
from mlm_studio.core.models.encoder import layer_count


def test_occurrences_are_whole_words_in_any_case_with_their_context():
    found = occurrences(["A list, a List and a listing.", "no such word", "LIST"], "list")
    assert [(text[start:end]) for text, start, end in found] == ["list", "List", "LIST"]
    assert occurrences(["list " * 10], "list", limit=4).__len__() == 4


def test_a_word_map_places_each_occurrence_and_a_known_sentence_on_its_own_point(trained_run, small_corpus):
    subject = load_subject(trained_run.path)
    layers = layer_count(subject.model)
    assert layers == subject.config.model.num_hidden_layers
    documents = list(small_corpus.iter_documents())
    context = context_map(subject.model, subject.tokenizer, documents, "the", layers, limit=60, clusters=3)
    assert len(context.snippets) == 60 == len(context.points) == len(context.clusters)
    assert set(context.clusters.tolist()) == {0, 1, 2}
    assert np.allclose(np.linalg.norm(context.vectors, axis=1), 1.0, atol=1e-5)
    nearest = context.nearest(0, 5)
    similarity = context.vectors @ context.vectors[0]
    assert 0 not in nearest and list(similarity[nearest]) == sorted(similarity[nearest], reverse=True)

    spans = occurrences(documents, "the", 60)
    index = next(i for i, (text, start, _) in enumerate(spans) if occurrences([text], "the", 1)[0][1] == start)
    own = place(context, subject.model, subject.tokenizer, spans[index][0])  # the very context of that point
    assert np.allclose(own, context.points[index], atol=1e-4)
    first = word_vectors(subject.model, subject.tokenizer, spans[:5], 1)
    assert first.shape == (5, subject.config.model.hidden_size)


def test_too_rare_a_word_is_refused(trained_run, small_corpus):
    subject = load_subject(trained_run.path)
    with pytest.raises(ValueError, match="occurs 0 time"):
        context_map(subject.model, subject.tokenizer, small_corpus.iter_documents(), "zyzzyva", 1)
    with pytest.raises(ValueError, match="does not contain"):
        context = context_map(subject.model, subject.tokenizer, small_corpus.iter_documents(), "the", 1, limit=20)
        place(context, subject.model, subject.tokenizer, "no such word here")
