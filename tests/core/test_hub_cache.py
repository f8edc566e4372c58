"""A Hub dataset already on this machine is read by its name; one that is not is named, never downloaded."""

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlm_studio.core.data.corpus import CorpusError, load_corpus

DOCS = ["A first document from the Hub cache.", "A second one, in another shard."]


@pytest.fixture
def caches(tmp_path, monkeypatch):
    hub, prepared = tmp_path / "hub", tmp_path / "datasets"
    shards = hub / "datasets--someone--tiny-corpus" / "snapshots" / "0123abc" / "data"
    shards.mkdir(parents=True)
    for n, doc in enumerate(DOCS):
        pq.write_table(pa.table({"text": [doc]}), shards / f"train-0000{n}-of-00002.parquet")
    folder = prepared / "someone___arrow-corpus" / "default" / "0.0.0" / "f00d"
    folder.mkdir(parents=True)
    table = pa.table({"text": DOCS})
    with pa.OSFile(str(folder / "arrow-corpus-train.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(prepared))
    return tmp_path


def test_a_cached_hub_dataset_is_read_by_its_name(caches):
    assert list(load_corpus(["hf:someone/tiny-corpus"]).iter_documents()) == DOCS
    assert list(load_corpus(["hf:someone/arrow-corpus"]).iter_documents()) == DOCS


def test_a_dataset_not_in_the_cache_is_named_and_nothing_is_downloaded(caches, corpus_file):
    corpus = load_corpus(["hf:nobody/absent", corpus_file])
    absent = next(s for s in corpus.sources if not s.loaded)
    assert (
        "'nobody/absent' is not in the local Hugging Face cache" in absent.reason
        and "nothing is downloaded" in absent.reason
    )
    with pytest.raises(CorpusError, match="nobody/absent"):
        load_corpus(["hf:nobody/absent"])


def test_the_command_line_trains_on_a_cached_hub_dataset(caches, tmp_path):
    from tests.core.helpers import config_file

    shards = caches / "hub" / "datasets--someone--tiny-corpus" / "snapshots" / "0123abc" / "data"
    pq.write_table(pa.table({"text": [DOCS[0]] * 50}), shards / "train-00000-of-00002.parquet")
    command = [sys.executable, "-m", "mlm_studio", "train", "--config", str(config_file(tmp_path))]
    done = subprocess.run(
        [*command, "--corpus", "hf:someone/tiny-corpus", "--max-steps", "1", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "51 documents" in done.stderr
        and "train-00000-of-00002.parquet" in (tmp_path / "run" / "corpus.json").read_text()
    )
