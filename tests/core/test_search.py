"""Semantic search with a real (tiny, trained) model: documents embedded in batches with progress and cancel, the
nearest by cosine with their scores; recall@k and MRR of same-label neighbours, worked by hand."""

from itertools import islice

import numpy as np
import pytest
import torch

from mlm_studio.core.evaluation.search import build_index, neighbour_ranks, retrieval_scores, unit
from mlm_studio.core.evaluation.subject import load_subject
from mlm_studio.core.evaluation.vectors import sentence_vectors
from mlm_studio.core.progress import Cancelled, Progress


@pytest.fixture(scope="module")
def subject(trained_run):
    return load_subject(trained_run.path)


@pytest.fixture(scope="module")
def documents(small_corpus):
    return list(islice(small_corpus.iter_documents(), 80))


class Recorded(Progress):
    def __init__(self, cancel_after: int | None = None) -> None:
        super().__init__()
        self.reports, self.cancel_after = [], cancel_after

    def report(self, done, total, message=""):
        self.reports.append((done, total))
        if self.cancel_after is not None and len(self.reports) >= self.cancel_after:
            self.cancel()


def test_a_document_is_its_own_nearest_and_the_scores_are_cosines_in_order(subject, documents):
    """The 80 documents hold 75 distinct texts (a few paragraphs repeat): those are embedded and searched."""
    progress = Recorded()
    index = build_index(subject.encoder, subject.tokenizer, documents, progress=progress)
    assert len({" ".join(d.split()) for d in documents}) == 75 and index.documents == 80
    assert [done for done, _ in progress.reports] == [0, 32, 64] and {t for _, t in progress.reports} == {75}
    assert index.vectors.shape == (75, subject.config.model.hidden_size)
    assert np.allclose(np.linalg.norm(index.vectors, axis=1), 1.0, atol=1e-5)
    hits = index.nearest(documents[17], k=5)
    assert len(hits) == 5 and hits[0].index == 17 and hits[0].text == documents[17]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    query = unit(sentence_vectors(subject.encoder, subject.tokenizer, [documents[17]]))[0]
    expected = index.vectors @ query
    order = np.argsort(-expected, kind="stable")[:5]
    assert [h.index for h in hits] == [index.positions[i] for i in order]
    assert [h.score for h in hits] == pytest.approx(expected[order].tolist(), abs=1e-6)
    assert len(index.nearest("the list", k=500)) == 75


def test_a_chosen_layer_gives_other_vectors_and_a_layer_the_model_lacks_is_refused(documents, tmp_path):
    from mlm_studio.core.models.hf_folder import import_model
    from tests.core.family_folders import make_folder

    imported = import_model(make_folder("bert", documents, tmp_path))  # three layers, as transformers made it
    model, tokenizer = imported.build_model(), imported.tokenizer
    last = build_index(model, tokenizer, documents[:8])
    first = build_index(model, tokenizer, documents[:8], layer=1)
    assert not np.allclose(first.vectors, last.vectors, atol=1e-2)
    assert first.nearest(documents[3], k=1)[0].index == 3
    assert np.allclose(build_index(model, tokenizer, documents[:8], layer=3).vectors, last.vectors, atol=1e-5)
    for layer in (0, 4):
        with pytest.raises(ValueError, match="the model has 3 layers; choose a layer from 1 to 3"):
            build_index(model, tokenizer, documents, layer=layer)
    with pytest.raises(ValueError, match="no documents"):
        build_index(model, tokenizer, [])
    with pytest.raises(ValueError, match="the query is empty"):
        last.nearest("  ")


def test_embedding_stops_when_cancelled(subject, documents):
    progress = Recorded(cancel_after=2)
    with pytest.raises(Cancelled):
        build_index(subject.encoder, subject.tokenizer, documents, progress=progress)
    assert len(progress.reports) == 2  # the third batch was never read


def test_recall_at_k_and_mrr_worked_by_hand():
    """Directions at 0°, 10°, 25° and 45° labelled a, b, a, b (and one c at 90°, whose label no other text has):
    the nearest text of the same label is 2nd, 3rd, 3rd and 2nd."""
    angles = np.radians([0, 10, 25, 45, 90])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1) * [[1], [2], [3], [0.5], [1]]  # lengths do not count
    labels = ["a", "b", "a", "b", "c"]
    scores = retrieval_scores(vectors, labels, k=1).to_json()
    assert scores == {"k": 1, "recall_at_k": 0.0, "mrr": pytest.approx(5 / 12), "queries": 4}
    assert retrieval_scores(vectors, labels, k=2).recall_at_k == 0.5
    assert retrieval_scores(vectors, labels, k=3).recall_at_k == 1.0
    separated = retrieval_scores(np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]]), ["a", "a", "b", "b"], k=1)
    assert (separated.recall_at_k, separated.mrr) == (1.0, 1.0)
    with pytest.raises(ValueError, match="no label is shared"):
        retrieval_scores(vectors[:3], ["a", "b", "c"])
    with pytest.raises(ValueError, match="k must be at least 1"):
        retrieval_scores(vectors, labels, k=0)


def test_held_out_texts_ask_among_other_texts_dense_or_sparse():
    """Candidates at 0°, 30°, 60° and 90° labelled b, a, b, a; queries at 10° (a), 80° (b), 30° (a, on a candidate:
    among others, a text is its own neighbour's equal) and 45° (c, a label no candidate has, so it does not ask)."""
    from scipy.sparse import csr_matrix

    def at(degrees):
        angles = np.radians(degrees)
        return np.stack([np.cos(angles), np.sin(angles)], axis=1)

    among = (at([0, 30, 60, 90]), ["b", "a", "b", "a"])
    queries, labels = at([10, 80, 30, 45]), ["a", "b", "a", "c"]
    assert list(neighbour_ranks(queries, labels, among)) == [1, 1, 0]
    scores = retrieval_scores(queries, labels, k=1, among=among)
    assert (scores.recall_at_k, scores.mrr, scores.queries) == (pytest.approx(1 / 3), pytest.approx(2 / 3), 3)
    sparse = retrieval_scores(csr_matrix(queries), labels, k=2, among=(csr_matrix(among[0]), among[1]))
    assert (sparse.recall_at_k, sparse.mrr) == (1.0, pytest.approx(2 / 3))
    with pytest.raises(ValueError, match="no label is shared"):
        retrieval_scores(queries[3:], ["c"], among=among)


def test_the_trained_models_neighbours_share_labels_more_than_chance(subject, tmp_path):
    from mlm_studio.core.evaluation.task_probe import read_task
    from tests.core.test_diagnostics import _labelled

    task = read_task(_labelled(tmp_path / "topics.csv", count=120))
    vectors = sentence_vectors(subject.encoder, subject.tokenizer, task.texts)
    scores = retrieval_scores(vectors, task.labels, k=1)
    shuffled = retrieval_scores(vectors, list(np.random.default_rng(0).permutation(task.labels)), k=1)
    assert scores.queries == 120 and scores.recall_at_k > 0.8 > shuffled.recall_at_k + 0.2


def test_a_text_the_corpus_holds_twice_is_embedded_and_found_once(subject, documents):
    """The third document repeated (once with other spacing) at the end: it is listed once, at its first place,
    with its copies counted; the documents read still number all of them."""
    repeated = [*documents[:8], documents[2], "  " + documents[2].replace(" ", "\n ", 1)]
    index = build_index(subject.encoder, subject.tokenizer, repeated)
    assert index.texts == tuple(documents[:8]) and index.vectors.shape[0] == 8 and index.documents == 10
    assert index.positions == tuple(range(8)) and index.copies == (1, 1, 3, 1, 1, 1, 1, 1)
    hits = index.nearest(documents[2], k=10)
    assert len(hits) == 8 and [h.text for h in hits].count(documents[2]) == 1
    assert (hits[0].index, hits[0].text, hits[0].copies) == (2, documents[2], 3)


def test_a_long_document_is_read_whole_in_windows_and_one_past_the_windows_is_said(subject, documents):
    """A document 400 words longer is not scored as the document without them; its vector is the mean over every
    token of every window, so it equals the token-weighted mean of its windows read apart."""
    from mlm_studio.core.evaluation.vectors import WINDOW_TOKENS, tokens_read

    short = documents[3]
    window = min(WINDOW_TOKENS, subject.config.model.max_tokens())
    longer = f"{short} {' '.join(documents[40:42])}"
    assert window < len(subject.tokenizer.encode_text(longer)[0]) <= tokens_read(subject.encoder)  # windows, read whole
    both = sentence_vectors(subject.encoder, subject.tokenizer, [short, longer])
    assert not np.allclose(both[0], both[1], atol=1e-3)
    ids = subject.tokenizer.encode_text(longer)[0]
    model = subject.encoder.eval()
    with torch.no_grad():
        sums = [
            model.hidden(torch.tensor([ids[i : i + window]]), torch.ones(1, len(ids[i : i + window]), dtype=torch.long))
            .double()
            .sum(1)[0]
            .numpy()
            for i in range(0, len(ids), window)
        ]
    assert np.allclose(both[1], np.sum(sums, 0) / len(ids), atol=1e-5)

    endless = " ".join([short] * 400)
    index = build_index(subject.encoder, subject.tokenizer, [short, endless, documents[5]])
    assert index.cut == (1,)
    assert index.cut_note == (
        f"1 of the 3 documents are longer than the {tokens_read(subject.encoder):,} tokens read of each (the first "
        "at place 2); their vectors stand for their beginnings"
    )
    assert build_index(subject.encoder, subject.tokenizer, [short, longer]).cut == ()
