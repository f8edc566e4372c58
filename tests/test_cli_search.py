"""`mlm-studio search` as a subprocess: the documents nearest a query with their cosines, as text and JSON, the
same-label neighbours of a labelled file, and bad requests as one sentence."""

import json
import os
import subprocess
import sys

import pytest

from mlm_studio.cli import main
from tests.core.helpers import config_file
from tests.core.test_diagnostics import _labelled


@pytest.fixture(scope="module")
def run(corpus_file, tmp_path_factory):
    folder = tmp_path_factory.mktemp("search")
    args = ["train", "--config", str(config_file(folder, learning_rate=5e-3)), "--corpus", str(corpus_file)]
    assert main([*args, "--out", str(folder / "run"), "--max-steps", "4"]) == 0
    return folder / "run"


def search(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mlm_studio", "search", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "200"})  # fmt: skip


@pytest.mark.slow
def test_search_finds_a_document_by_its_own_words_and_scores_neighbours(run, small_corpus, corpus_file, tmp_path):
    document = list(small_corpus.iter_documents())[40]
    done = search(str(run), "--corpus", str(corpus_file), "--query", document, "--query", "the list", "--k", "3",
                  "--json", "--task", str(_labelled(tmp_path / "topics.csv", count=60)))  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    first, second = result["queries"]
    assert first["query"] == document and [len(q["hits"]) for q in result["queries"]] == [3, 3]
    assert first["hits"][0]["index"] == 40 and first["hits"][0]["text"] == document
    assert first["hits"][0]["score"] == pytest.approx(1.0, abs=1e-5)
    for asked in (first, second):
        scores = [hit["score"] for hit in asked["hits"]]
        assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 + 1e-6 for s in scores)
    retrieval = result["retrieval"]
    assert retrieval["k"] == 3 and retrieval["queries"] == 60 and 0 < retrieval["mrr"] <= 1
    assert 0 <= retrieval["recall_at_k"] <= 1

    done = search(str(run), "--corpus", str(corpus_file), "--query", "the list", "--k", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("nearest to 'the list'") and len(lines) == 3
    assert lines[1].split()[0] == "1" and float(lines[1].split()[1]) >= float(lines[2].split()[1])


def test_a_search_without_a_question_or_with_a_layer_the_model_lacks_is_one_sentence(run, corpus_file):
    done = search(str(run), "--corpus", str(corpus_file))
    assert done.returncode == 1 and done.stderr.strip() == (
        "mlm-studio: give --query TEXT to search the corpus, or --task FILE to score same-label neighbours"
    )
    done = search(str(run), "--corpus", str(corpus_file), "--query", "a list", "--layer", "5")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "the model has 1 layers; choose a layer from 1 to 1" in done.stderr
    done = search(str(run), "--corpus", str(corpus_file), "--query", "a list", "--k", "0")
    assert done.returncode == 2 and "'0' is not a whole number of at least 1" in done.stderr
