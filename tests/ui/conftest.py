"""UI fixtures: a tokenizer for the built-in corpus, trained runs, and no background task left behind."""

import pytest

from mlm_studio.core.config.sections import TokenizerConfig
from mlm_studio.core.data.tokenizer import train_tokenizer


@pytest.fixture(scope="session", autouse=True)
def garbage_collected_on_the_gui_thread(qapp):
    """As in the application: no cycle collection on a background task's thread."""
    import gc

    from mlm_studio.ui.tasks import collect_garbage_on_the_gui_thread

    collector = collect_garbage_on_the_gui_thread()
    yield
    collector.timer.stop()
    gc.enable()


@pytest.fixture(autouse=True)
def no_task_outlives_its_test():
    """Each test leaves no background task running, and its Qt objects are collected here, on the GUI thread."""
    import gc

    from mlm_studio.ui.tasks import stop_all_tasks

    yield
    assert stop_all_tasks(), "a background task did not stop"
    gc.collect()


@pytest.fixture(scope="session")
def builtin_tokenizer(builtin_corpus):
    return train_tokenizer(builtin_corpus.iter_documents(), TokenizerConfig(vocab_size=3000), builtin_corpus.documents)


@pytest.fixture(scope="session")
def trained_runs(small_corpus, small_tokenizer, tmp_path_factory):
    """A folder with two short runs trained on the small corpus."""
    from mlm_studio.core.training.runs import start_run, training_blocks
    from mlm_studio.core.training.trainer import Trainer
    from tests.core.helpers import small_config

    root = tmp_path_factory.mktemp("runs")
    for name, steps in (("early", 4), ("late", 40)):
        run = start_run(root / name, small_config(max_steps=steps, learning_rate=5e-3), small_corpus, small_tokenizer)
        list(Trainer(run, *training_blocks(run, small_corpus)).run())
    return root


@pytest.fixture(scope="session")
def try_it_runs(trained_runs, tmp_path_factory):
    """A runs folder of four fine-tuning runs of the `late` run (texts, pairs, tags, answers) and one with no weights
    yet: the Try it tab's and its *why?*'s."""
    import shutil

    from mlm_studio.core.finetune.options import FinetuneOptions
    from mlm_studio.core.finetune.setup import prepare_finetuner
    from tests.core.qa_tasks import write_squad
    from tests.core.test_finetune import write_task
    from tests.core.test_finetune_export import write_pairs
    from tests.core.test_finetune_tokens import write_tagging

    root = tmp_path_factory.mktemp("try-it")
    tasks = {
        "texts": ("classification", write_task(root / "task.csv", rows=60), 1),
        "pairs": ("classification", write_pairs(root / "pairs.csv"), 1),
        "tags": ("tokens", write_tagging(root / "tags.jsonl", sentences=80), 4),
        "qa": ("qa", write_squad(root / "squad.json", contexts=30, facts=1), 1),
    }
    for name, (task, path, epochs) in tasks.items():
        stride = {"doc_stride": 16} if task == "qa" else {}
        options = FinetuneOptions(task, path, learning_rate=5e-3, epochs=epochs, batch_size=8, device="cpu", **stride)
        list(prepare_finetuner(root / name, str(trained_runs / "late"), options).run())
    shutil.copytree(root / "texts", root / "bare", ignore=shutil.ignore_patterns("best", "checkpoints"))
    return root


@pytest.fixture
def finetune_panel(qtbot, trained_runs, tmp_path):
    """The Fine-tune panel on its own runs folder, the `late` run added as a model."""
    from mlm_studio.ui.panels.finetune.panel import FinetunePanel
    from mlm_studio.ui.workspace import Workspace
    from tests.ui.finetune_driving import TIMEOUT_MS

    widget = FinetunePanel(Workspace(runs_root=tmp_path / "runs"))
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    widget.form.add_folder(str(trained_runs / "late"))
    yield widget
    widget.controller.stop()
    widget.controller.wait(TIMEOUT_MS)


@pytest.fixture
def evaluation_panel(qtbot, trained_runs, small_corpus, listed):
    """The Evaluation panel on the two trained runs, the small corpus loaded."""
    from mlm_studio.ui.panels.evaluation.panel import EvaluationPanel
    from mlm_studio.ui.workspace import Workspace

    workspace = Workspace()
    workspace.set_corpus(small_corpus)
    workspace.set_runs_root(trained_runs)
    widget = EvaluationPanel(workspace)
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    listed(workspace)
    return widget


@pytest.fixture
def listed(qtbot):
    """Waits until a workspace's listing of its runs folder has arrived: read off the GUI thread, it comes after the
    panels are built and after another folder is chosen."""

    def wait(workspace) -> None:
        qtbot.waitUntil(lambda: workspace.runs.read and not workspace.reading_runs, timeout=60_000)

    return wait
