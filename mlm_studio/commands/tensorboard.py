"""`mlm-studio tensorboard`: TensorBoard events written for runs made before, from their metrics.jsonl."""

from __future__ import annotations

from mlm_studio.commands.terminal import fail, reason
from mlm_studio.core.runs.run_folder import RunDir
from mlm_studio.core.storage.checkpoint import CheckpointError
from mlm_studio.core.storage.lock import RunLock


def run(args) -> int:
    """Write each run's TensorBoard events from its metrics.jsonl (refused while the run trains: it writes them);
    exit 1 when any run was refused."""
    from mlm_studio.core.runs.tensorboard import write_events

    status = 0
    for path in args.runs:  # a run refused is said and the others still written; the exit status says it
        try:
            source = RunDir(path)
            with RunLock(source.path):
                folder, notes = write_events(source.path, source.read_metrics())
        except ImportError as exc:
            return fail(reason(exc))
        except (CheckpointError, OSError) as exc:
            status = fail(reason(exc))
            continue
        print(f"TensorBoard events of {path} in {folder}; view them with: tensorboard --logdir {folder.parent}")
        for note in notes:
            print(f"Note: {note}.")
    return status
