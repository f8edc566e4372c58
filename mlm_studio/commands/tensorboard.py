"""`mlm-studio tensorboard`: TensorBoard events written for runs made before, from their metrics.jsonl."""

from __future__ import annotations

from mlm_studio.commands.terminal import fail, reason
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock
from mlm_studio.core.training.run_folder import RunDir


def run(args) -> int:
    """Write each run's TensorBoard events from its metrics.jsonl (refused while the run trains: it writes them)."""
    from mlm_studio.core.training.tensorboard import write_events

    for path in args.runs:
        try:
            source = RunDir(path)
            with RunLock(source.path):
                folder, notes = write_events(source.path, source.read_metrics())
        except (ImportError, CheckpointError, OSError) as exc:
            return fail(reason(exc))
        print(f"TensorBoard events of {path} in {folder}; view them with: tensorboard --logdir {folder.parent}")
        for note in notes:
            print(f"Note: {note}.")
    return 0
