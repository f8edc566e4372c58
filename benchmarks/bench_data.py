"""Tokenization throughput and memory: the built-in corpus, ten times it as text files, and ten and a hundred
times it as Parquet shards, each tokenized into the memory-mapped cache in a fresh process; peak resident
memory should barely grow.

Run: python benchmarks/bench_data.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

WORKER = r"""
import json, os, resource, sys, time
from pathlib import Path
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.dataset import tokenize_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer

paths, tokenizer_file, root = json.loads(sys.argv[1])
tokenizer = MLMTokenizer.load(tokenizer_file)
corpus = load_corpus(paths)
start = time.perf_counter()
data = tokenize_corpus(corpus, tokenizer, root=Path(root))
seconds = time.perf_counter() - start
try:  # this process's own peak: ru_maxrss keeps the parent's peak across fork and exec on Linux
    peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
size = sum(source.path.stat().st_size for source in corpus.loaded_sources)
print(json.dumps({"tokens": data.tokens, "documents": data.documents, "seconds": seconds, "peak": peak, "bytes": size}))
"""


def run(paths: list[str], tokenizer: str, root: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, json.dumps([paths, tokenizer, root])], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout)


def main() -> None:
    from mlm_studio.core.config.sections import TokenizerConfig
    from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
    from mlm_studio.core.data.corpus import load_corpus
    from mlm_studio.core.data.tokenizer import train_tokenizer

    builtin = ensure_builtin_corpus()
    corpus = load_corpus([builtin])
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = train_tokenizer(corpus.iter_documents(), TokenizerConfig(), corpus.documents).save(Path(tmp))
        copies = []
        for i in range(10):
            copy = Path(tmp) / f"copy{i}.txt"
            copy.write_bytes(builtin.read_bytes())
            copies.append(str(copy))
        shards = _parquet_shards(list(corpus.iter_documents()), Path(tmp) / "parquet", 100)
        print("| corpus | size | documents | tokens | tokenize time | tokens/s | peak RSS |")
        print("|---|---|---|---|---|---|---|")
        results = {}
        corpora = (
            ("built-in", [str(builtin)]),
            ("10× built-in", copies),
            ("10× built-in, Parquet shards", shards[:10]),
            ("100× built-in, Parquet shards", shards),
        )
        for name, paths in corpora:
            r = results[name] = run(paths, str(tokenizer), str(Path(tmp) / f"cache-{len(paths)}"))
            print(
                f"| {name} | {r['bytes'] / 2**20:.1f} MiB | {r['documents']:,} | {r['tokens']:,} | "
                f"{r['seconds']:.2f} s | {r['tokens'] / r['seconds']:,.0f} | {r['peak'] / 2**20:.0f} MiB |"
            )
        growth = results["10× built-in"]["peak"] / results["built-in"]["peak"]
        parquet = results["100× built-in, Parquet shards"]["peak"] / results["10× built-in, Parquet shards"]["peak"]
        print(f"\nPeak RSS grows {growth:.2f}× for 10× the text, and {parquet:.2f}× from 10× to 100× in Parquet.")


def _parquet_shards(documents: list[str], folder: Path, count: int) -> list[str]:
    """`count` Parquet shards, each the whole built-in corpus (a `text` column, zstd-compressed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    first = folder / "shard-000.parquet"
    pq.write_table(pa.table({"text": documents}), first, compression="zstd")
    paths = [first]
    for n in range(1, count):
        paths.append(folder / f"shard-{n:03d}.parquet")
        paths[-1].write_bytes(first.read_bytes())
    return [str(p) for p in paths]


if __name__ == "__main__":
    main()
