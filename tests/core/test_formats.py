"""Every corpus format reads the same documents, streamed; a damaged file is named and the rest is kept."""

import bz2
import gzip
import json
import lzma

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from mlm_studio.core.data.corpus import CorpusError, ReadOptions, load_corpus
from mlm_studio.core.data.formats import kind_of

DOCS = ["The first document, in ASCII.", "Le deuxième, accentué.", "A third\nwith two lines."]
COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress, ".zst": zstandard.compress}


def plain(kind):
    if kind == "txt":
        return "\n\n".join(DOCS) + "\n"
    if kind == "jsonl":
        return "".join(json.dumps({"text": d}) + "\n" for d in DOCS)
    return "id,text\n" + "".join(f'{n},"{d}"\n' for n, d in enumerate(DOCS))


@pytest.mark.parametrize("kind", ["txt", "jsonl", "csv"])
@pytest.mark.parametrize("compression", ["", *COMPRESS])
def test_every_text_format_compressed_or_not_gives_the_same_documents(tmp_path, kind, compression):
    data = plain(kind).encode()
    path = tmp_path / f"corpus.{kind}{compression}"
    path.write_bytes(COMPRESS[compression](data) if compression else data)
    corpus = load_corpus([path])
    assert list(corpus.iter_documents()) == DOCS and corpus.sources[0].loaded


def test_parquet_and_arrow_read_the_text_column_and_name_bad_rows(tmp_path):
    table = pa.table({"id": [1, 2, 3, 4], "text": [DOCS[0], None, DOCS[1], DOCS[2]]})
    pq.write_table(table, tmp_path / "shard-0.parquet", row_group_size=2)
    with pa.OSFile(str(tmp_path / "data-00000-of-00001.arrow"), "wb") as sink:  # as datasets.save_to_disk writes
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    corpus = load_corpus([tmp_path])
    assert [s.path.name for s in corpus.loaded_sources] == ["data-00000-of-00001.arrow", "shard-0.parquet"]
    assert list(corpus.iter_documents()) == DOCS + DOCS
    assert [str(issue) for issue in corpus.sources[1].issues] == ["row 2: no 'text' value"]
    with pytest.raises(CorpusError, match=r"shard-0.parquet: no column 'body' \(columns: id, text\)"):
        load_corpus([tmp_path / "shard-0.parquet"], ReadOptions(table_column="body"))


def test_a_damaged_parquet_file_and_a_truncated_gz_are_named_and_the_rest_is_kept(tmp_path):
    pq.write_table(pa.table({"text": DOCS}), tmp_path / "good.parquet")
    damaged = (tmp_path / "good.parquet").read_bytes()
    (tmp_path / "damaged.parquet").write_bytes(damaged[: len(damaged) // 2])
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(plain("jsonl").encode() * 50)[:-40])
    (tmp_path / "notes.txt.zst").write_bytes(zstandard.compress(plain("txt").encode()))
    corpus = load_corpus([tmp_path])
    reasons = {s.path.name: s.reason for s in corpus.sources if not s.loaded}
    assert reasons["damaged.parquet"].startswith("not a readable Parquet file")
    assert reasons["cut.jsonl.gz"].startswith("damaged or cut short compressed data")
    assert sorted(s.path.name for s in corpus.loaded_sources) == ["good.parquet", "notes.txt.zst"]
    assert corpus.documents == 2 * len(DOCS)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.txt", "text"),
        ("a.md.xz", "text"),
        ("a.jsonl.gz", "jsonl"),
        ("a.tsv.bz2", "tsv"),
        ("a.parquet", "parquet"),
        ("a.arrow", "arrow"),
        ("a.parquet.gz", None),
        ("a.gz", None),
        ("a.pdf", None),
        ("archive.tar.gz", None),
    ],
)
def test_the_format_comes_from_the_name(tmp_path, name, kind):
    assert kind_of(tmp_path / name) == kind
