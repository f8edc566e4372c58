"""`mlm-studio search` as a subprocess: the documents nearest a query with their cosines, as text and JSON, the
same-label neighbours of a labelled file, and bad requests as one sentence."""

import json

import pytest

from mlm_studio.cli import main
from tests.command import mlm_studio
from tests.core.helpers import config_file
from tests.core.test_diagnostics import _labelled


@pytest.fixture(scope="module")
def run(corpus_file, tmp_path_factory):
    folder = tmp_path_factory.mktemp("search")
    args = ["train", "--config", str(config_file(folder, learning_rate=5e-3)), "--corpus", str(corpus_file)]
    assert main([*args, "--out", str(folder / "run"), "--max-steps", "4"]) == 0
    return folder / "run"


def search(*args: str):
    return mlm_studio("search", *args, env={"COLUMNS": "200"})


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


def test_a_k_beyond_the_documents_is_capped_and_said_and_a_task_needs_no_corpus(run, tmp_path, capsys):
    five = tmp_path / "five.txt"
    five.write_text("\n\n".join(f"Document {n} returns a list of files." for n in range(5)), encoding="utf-8")
    assert main(["search", str(run), "--corpus", str(five), "--query", "the list", "--k", "100000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("nearest to 'the list' (the 5 documents there are, of --k 100,000)")
    assert len(lines) == 1 + 5
    labelled = _labelled(tmp_path / "topics.csv", count=12)
    assert main(["search", str(run), "--task", str(labelled), "--k", "50"]) == 0
    assert capsys.readouterr().out.endswith("(--k 50 capped at the 11 other texts)\n")
    assert main(["search", str(run), "--task", str(labelled), "--k", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["retrieval"]["k"] == 11


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--query", "a list"], "--query searches a corpus: give it with --corpus PATH"),
        (["--task", "t.csv", "--corpus", "c.txt"],
         "--corpus is searched by --query; --task scores the labelled file alone: leave out --corpus"),
    ],
)  # fmt: skip
def test_a_corpus_missing_or_ignored_is_refused(run, capsys, args, message):
    assert main(["search", str(run), *args]) == 2
    assert capsys.readouterr() == ("", f"mlm-studio: {message}\n")


def test_rows_of_a_task_file_left_out_are_said_as_evaluate_says_them(run, tmp_path):
    import json as json_module

    rows = [{"text": f"text {i} about {'rivers' if i % 2 else 'money'}", "label": "ab"[i % 2]} for i in range(20)]
    rows[4]["label"] = ["a list"]
    task = tmp_path / "listed.jsonl"
    task.write_text("\n".join(json_module.dumps(row) for row in rows) + "\n")
    done = search(str(run), "--task", str(task))
    assert done.returncode == 0, done.stderr
    assert "line 5: field 'label' is not a string or a number" in done.stderr
    assert "(19 texts)" in done.stdout


def test_repeated_texts_are_counted_once_and_said_not_called_a_sample(run, tmp_path, capsys):
    """A small file whose texts repeat: its repeats said (those with more than one label named with their rows), no
    'sample'; a label whose other text is a copy of another label's is left out and said, in search and evaluate."""
    import csv

    rows = [(f"text {i} about {'rivers' if i % 2 else 'money'}", "ab"[i % 2]) for i in range(20)]
    rows += [*rows[:5], (rows[6][0], "b"), (rows[8][0], "rare"), ("a text of its own", "rare")]
    rows += [(rows[6][0], "rare"), (rows[6][0], "b")]  # text 6's third label, then its second again
    task = tmp_path / "repeats.csv"
    with open(task, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("text", "label"), *rows])
    for command in (["search", str(run), "--task", str(task)], ["evaluate", str(run), "--task", str(task)]):
        assert main(command) == 0
        err = capsys.readouterr().err
        assert "sample" not in err
        said = "repeats.csv: 9 repeated texts counted once, 2 of them with more than one label, read under the first: "
        assert said in err
        assert "'text 6 about money' (rows 8, 27 and 30: 3 labels); 'text 8 about money' (rows 10 and 28)" in err
        assert "row 29: its label 'rare' has no other text once repeated texts are read once" in err
    for command in (["search", str(run), "--task", str(task)], ["evaluate", str(run), "--task", str(task)]):
        assert main([*command, "--json"]) == 0
        payload = json.loads(capsys.readouterr().out)
        found = payload["retrieval"] if command[0] == "search" else payload["task"]
        assert found["repeated"] == 9, payload  # the repeats said, not only those the model's reading adds
