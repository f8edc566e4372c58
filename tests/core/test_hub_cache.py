"""A Hub dataset or model already on this machine is read by its name, from the cache and the revision
`huggingface_hub` (and so `transformers`) would use; one that is not is named, never downloaded; a name the Hub
would refuse is refused before any path is built from it."""

import io
import json
import os
import subprocess
import sys
from itertools import islice

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlm_studio.core.data.corpus import CorpusError, load_corpus
from mlm_studio.core.storage.hub_cache import cached_model
from tests.command import mlm_studio
from tests.core.hub_layout import add_folder, add_snapshot, point_main_at, use_cache

DOCS = ["A first document from the Hub cache.", "A second one, in another shard."]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parquet(docs: list[str]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"text": docs}), sink)
    return sink.getvalue()


@pytest.fixture
def caches(tmp_path, monkeypatch):
    """A Hub cache with `someone/tiny-corpus` (refs/main names the snapshot of DOCS; a newer one, not named,
    holds other text) and a `datasets` cache with `someone/arrow-corpus`, set for this process and its children."""
    hub, prepared = tmp_path / "hub", tmp_path / "datasets"
    shards = {f"data/train-0000{n}-of-00002.parquet": parquet([doc]) for n, doc in enumerate(DOCS)}
    main = add_snapshot(hub, "someone/tiny-corpus", shards, "main", kind="dataset")
    add_snapshot(hub, "someone/tiny-corpus", {"data/train.parquet": parquet(["Not on main."])}, "pr", kind="dataset")
    point_main_at(main)
    folder = prepared / "someone___arrow-corpus" / "default" / "0.0.0" / "f00d"
    folder.mkdir(parents=True)
    table = pa.table({"text": DOCS})
    with pa.OSFile(str(folder / "arrow-corpus-train.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    use_cache(monkeypatch, hub)
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

    main = (caches / "hub" / "datasets--someone--tiny-corpus" / "refs" / "main").read_text()
    shards = caches / "hub" / "datasets--someone--tiny-corpus" / "snapshots" / main / "data"
    pq.write_table(pa.table({"text": [DOCS[0]] * 50}), shards / "train-00000-of-00002.parquet")
    done = mlm_studio("train", "--config", config_file(tmp_path), "--corpus", "hf:someone/tiny-corpus",
                      "--max-steps", "1", "--out", tmp_path / "run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    shard = (shards / "train-00000-of-00002.parquet").resolve()  # the blob the snapshot links to
    assert "51 documents" in done.stderr and str(shard) in (tmp_path / "run" / "corpus.json").read_text()


def test_a_cached_hub_dataset_is_read_at_the_revision_refs_main_names(caches):
    """The newer snapshot, which refs/main does not name, is not read (as `datasets` would not read it)."""
    assert list(load_corpus(["hf:someone/tiny-corpus"]).iter_documents()) == DOCS


@pytest.mark.parametrize(
    "source", ["hf:..", "hf:", "hf:.", "hf:org/../x", "hf:../datasets", "hf:someone/tiny-corpus/../..", "hf:a--b"]
)
def test_a_dataset_name_the_hub_would_refuse_is_refused_before_any_file_is_read(caches, source):
    with pytest.raises(CorpusError, match="is not a Hugging Face Hub name: write org/name") as refused:
        load_corpus([source])
    assert str(refused.value).startswith(f"No usable text in the corpus ({source!r}: ")  # the source as given
    assert str(refused.value).endswith("Name a dataset of the local Hugging Face cache as hf:org/name, or give files "
                                       "that contain text.")  # fmt: skip


def test_the_refused_names_read_nothing_outside_the_cache(caches):
    """`hf:..` and its kin once read every `.arrow` file above the datasets cache: one placed there stays unread."""
    outside = caches / "outside.arrow"
    table = pa.table({"text": ["Not a Hub dataset."]})
    with pa.OSFile(str(outside), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    for source in ("hf:..", "hf:", "hf:.", "hf:someone/../.."):
        corpus = load_corpus([source, caches / "outside.arrow"])
        assert [s.path for s in corpus.loaded_sources] == [outside]
        assert "is not a Hugging Face Hub name" in next(s.reason for s in corpus.sources if not s.loaded)


@pytest.mark.parametrize("where", ["hub", "datasets"])
def test_a_cached_file_that_leads_out_of_the_cache_is_refused(caches, where):
    secret = caches / "secret.parquet"
    secret.write_bytes(parquet(["Something outside the cache."]))
    if where == "hub":
        main = (caches / "hub" / "datasets--someone--tiny-corpus" / "refs" / "main").read_text()
        link = caches / "hub" / "datasets--someone--tiny-corpus" / "snapshots" / main / "data" / "extra.parquet"
        source = "hf:someone/tiny-corpus"
    else:
        link = caches / "datasets" / "someone___arrow-corpus" / "default" / "0.0.0" / "f00d" / "extra.arrow"
        source = "hf:someone/arrow-corpus"
    link.symlink_to(secret)
    with pytest.raises(CorpusError, match=r"leads to .*secret\.parquet, outside the cache folder") as refused:
        load_corpus([source])
    assert str(link) in str(refused.value)


@pytest.mark.parametrize("name", ["..", ".", "", "org/../x", "../hub/models--x", "/etc", "org/name/.."])
def test_a_model_name_the_hub_would_refuse_is_refused(caches, name):
    with pytest.raises(ValueError, match="is not a Hugging Face Hub name: write org/name"):
        cached_model(name)


SETTINGS = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME", "HF_DATASETS_CACHE")


def python(code: str, env: dict[str, str], cwd) -> str:
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("setting", "cache"),
    [
        ({"HF_HUB_CACHE": "chosen"}, "chosen"),
        ({"HUGGINGFACE_HUB_CACHE": "chosen"}, "chosen"),
        ({"HF_HOME": "hf-home"}, "hf-home/hub"),
        ({"XDG_CACHE_HOME": "xdg"}, "xdg/huggingface/hub"),
        ({"XDG_CACHE_HOME": ""}, None),  # where huggingface_hub itself looks then
        ({}, "home/.cache/huggingface/hub"),
    ],
)
def test_a_cached_model_is_found_where_and_at_the_revision_transformers_finds_it(tmp_path, setting, cache):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in SETTINGS}
    env.update(HOME=str(home), PYTHONPATH=ROOT, **{k: str(tmp_path / v) if v else "" for k, v in setting.items()})
    if cache is None:
        hub = work / python("from huggingface_hub import constants; print(constants.HF_HUB_CACHE)", env, work).strip()
    else:
        hub = tmp_path / cache
    main = add_snapshot(hub, "org/name", {"config.json": b'{"model_type": "bert", "hidden_size": 48}'}, "main")
    add_snapshot(hub, "org/name", {"config.json": b'{"model_type": "bert", "hidden_size": 64}'}, "newer")
    point_main_at(main)
    point_main_at(add_snapshot(hub, "org/texts", {"data/train.parquet": parquet(DOCS)}, "main", kind="dataset"))
    probe = (
        "import json\n"
        "from transformers.utils.hub import cached_file\n"
        "from mlm_studio.core.data.corpus import load_corpus\n"
        "from mlm_studio.core.storage.hub_cache import cached_model\n"
        "theirs = cached_file('org/name', 'config.json', local_files_only=True)\n"
        "texts = list(load_corpus(['hf:org/texts']).iter_documents())\n"
        "print(json.dumps([str(cached_model('org/name')), theirs, texts]))\n"
    )
    ours, theirs, texts = json.loads(python(probe, env, work))
    assert texts == DOCS  # a dataset too, found where the same settings say
    theirs = os.path.dirname(os.path.join(work, theirs))  # relative where huggingface_hub's cache is
    assert os.path.isabs(ours) and os.path.samefile(ours, main) and os.path.samefile(theirs, main)


def test_the_model_imported_is_the_revision_refs_main_names_not_the_newest(tmp_path, small_corpus):
    from tests.core.family_folders import make_folder

    documents = list(islice(small_corpus.iter_documents(), 400))
    hub = tmp_path / "hub"
    main = add_folder(hub, "org/name", make_folder("bert", documents, tmp_path / "bert"), "main")
    add_folder(hub, "org/name", make_folder("distilbert", documents, tmp_path / "distilbert"), "newer")
    point_main_at(main)
    probe = (
        "import json\n"
        "from transformers import AutoConfig\n"
        "from mlm_studio.core.models.hf_folder import import_model\n"
        "model = import_model('org/name')\n"
        "theirs = AutoConfig.from_pretrained('org/name', local_files_only=True).model_type\n"
        "print(json.dumps([str(model.folder), model.config.family, theirs]))\n"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "PYTHONPATH": ROOT}
    folder, family, theirs = json.loads(python(probe, env, tmp_path))
    assert os.path.samefile(folder, main) and family == theirs == "bert"


@pytest.mark.parametrize("linked", ["file", "snapshot"])
def test_a_cached_model_whose_files_lead_out_of_the_cache_is_refused(caches, linked):
    outside = caches / "outside"
    outside.mkdir()
    (outside / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    snapshot = add_snapshot(caches / "hub", "org/model", {"tokenizer.json": b"{}"}, "main")
    point_main_at(snapshot)
    if linked == "file":
        (snapshot / "config.json").symlink_to(outside / "config.json")
    else:
        for item in snapshot.iterdir():
            item.unlink()
        snapshot.rmdir()
        snapshot.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match=r"leads to .*outside.*, outside the cache folder"):
        cached_model("org/model")
