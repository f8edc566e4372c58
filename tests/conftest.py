"""Test configuration: headless Qt, an isolated cache, derandomized hypothesis in CI, shared corpora, a short
trained run and a tagger fine-tuned from it."""

import gc
import os
import subprocess
import tempfile
from itertools import islice
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["MLM_STUDIO_CACHE"] = tempfile.mkdtemp(prefix="mlm-studio-test-cache-")
os.environ["MLM_STUDIO_RUNS"] = tempfile.mkdtemp(prefix="mlm-studio-test-runs-")
# a pinned thread count: training never resizes it to the load, so runs repeat byte for byte (and the CLI's too);
# with pytest-xdist's workers (`-n`), the cores shared among them
os.environ.setdefault(
    "OMP_NUM_THREADS",
    str(
        max(
            1, getattr(os, "process_cpu_count", os.cpu_count)() // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        )
    ),
)

import pytest
from hypothesis import settings

from mlm_studio.core.config.sections import TokenizerConfig
from mlm_studio.core.data.builtin_corpus import ensure_builtin_corpus
from mlm_studio.core.data.corpus import load_corpus
from mlm_studio.core.data.tokenizer import train_tokenizer

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session")
def builtin_corpus():
    return load_corpus([ensure_builtin_corpus()])


@pytest.fixture(scope="session")
def corpus_file(builtin_corpus, tmp_path_factory):
    """The first 400 documents of the built-in corpus as a file of its own: trains in seconds."""
    path = tmp_path_factory.mktemp("small") / "small.txt"
    path.write_text("\n\n".join(islice(builtin_corpus.iter_documents(), 400)), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def small_corpus(corpus_file):
    return load_corpus([corpus_file])


@pytest.fixture(scope="session")
def small_tokenizer(small_corpus):
    return train_tokenizer(small_corpus.iter_documents(), TokenizerConfig(vocab_size=400), small_corpus.documents)


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, small_corpus, small_tokenizer):
    """30 steps on the small corpus, with checkpoints and evaluations: a model that learns a small task in a few
    epochs (the recipe search's tests)."""
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer
    from tests.core.helpers import small_config

    run = start_run(
        tmp_path_factory.mktemp("runs") / "run",
        small_config(max_steps=30, learning_rate=5e-3),
        small_corpus,
        small_tokenizer,
    )
    list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return run


@pytest.fixture(scope="session")
def exported_tagger(trained_run, tmp_path_factory):
    """A tagger fine-tuned from `trained_run` on names of several pieces, and its export folder: four epochs, so
    entities are found but not yet all of them right (groups of every shape come out, and words whose later
    pieces the model tags apart from their first)."""
    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.predict import fine_tuned_at
    from mlm_studio.core.finetune.setup import prepare_finetuner
    from mlm_studio.core.interop.export import export_model
    from tests.core.test_finetune_tokens import write_piece_tagging

    folder = tmp_path_factory.mktemp("tagger")
    task = write_piece_tagging(folder / "tags.jsonl")
    options = FinetuneOptions("tokens", task, learning_rate=5e-3, epochs=4, batch_size=8, device="cpu")
    list(prepare_finetuner(folder / "ft", str(trained_run.path), options).run())
    return fine_tuned_at(folder / "ft"), export_model(folder / "ft", folder / "export")


@pytest.fixture
def tmpfs():
    """Mount a real tmpfs at a folder (made if missing): `mount(folder, options)`, e.g. "size=96k" or
    "ro,size=64k"; unmounted after. Mounting needs root: the test is skipped elsewhere, saying why."""
    mounted = []

    def mount(folder, options):
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a filesystem ({options}) here: {done.stderr.decode().strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def pytest_collection_finish(session):
    """Freeze what collection made (PyTorch, transformers, Qt and every test module: half a million objects), as
    the window freezes what it imports: a full collection, which every UI test ends with, then scans only what the
    tests themselves made (0.2 s less a collection)."""
    gc.collect()
    gc.freeze()


ALONE = Path(__file__).parent / "ui" / "alone"


def pytest_collection_modifyitems(config, items):
    """The tests marked `alone` are the tests of tests/ui/alone, which CI runs by themselves (collecting only that
    folder): one marked elsewhere would be left out of both runs, one unmarked there would run beside others."""
    for item in items:
        if (item.get_closest_marker("alone") is not None) != (ALONE in item.path.parents):
            raise pytest.UsageError(f"{item.nodeid}: a test is marked alone exactly when it is in {ALONE.name}/")
