"""`mlm-studio replay RUN --step N`: the batch of one training step rebuilt from the run folder and scored with
the checkpoint before it, the sequences that carried its loss first."""

from __future__ import annotations

import sys
from pathlib import Path

from mlm_studio.commands.refusals import USER_ERRORS
from mlm_studio.commands.terminal import Status, emit, fail, reason, strict_json
from mlm_studio.commands.values import whole

SHOWN_TOKENS = 3  # of each sequence, the masked tokens that carried most of its loss, in the text output


def add_replay(commands) -> None:
    replay = commands.add_parser(
        "replay",
        help="rebuild the batch of one training step and score it: its sequences and masked tokens, worst first",
    )
    replay.add_argument("run_dir", type=Path, metavar="RUN", help="a pre-training run folder")
    replay.add_argument("--step", type=whole, required=True, metavar="N", help="the step to replay (1 is the first)")
    replay.add_argument("--sequences", type=whole, default=5, metavar="K", help="how many to print (default 5)")
    replay.add_argument("--device", help="where to score (default the run's training.device)")
    replay.add_argument("--json", action="store_true", help="print every sequence and token as one JSON object")
    replay.set_defaults(run=run)


def run(args) -> int:
    from mlm_studio.core.storage.step_file import StepFileDamaged, read_steps
    from mlm_studio.core.training.replay import replay_step

    try:
        replay = replay_step(args.run_dir, args.step, Status(), args.device)
    except USER_ERRORS as exc:
        return fail(reason(exc))
    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    try:
        logged = read_steps(args.run_dir, args.run_dir.name).at(args.step)
    except StepFileDamaged as exc:
        print(f"mlm-studio: warning: {exc}", file=sys.stderr)
        logged = None
    measured = None if logged is None else logged[0]
    if args.json:
        return emit(strict_json(_as_json(replay, measured)))
    return emit(_as_text(replay, measured, args.sequences))


def _as_text(replay, measured: float | None, count: int) -> str:
    trained = "" if measured is None else f"; the trainer measured {measured:.4f}"
    shown = min(count, len(replay.sequences))
    lines = [
        f"Step {replay.step}, scored with {replay.checkpoint_said()}.",
        f"Loss {replay.loss:.4f} over {replay.predicted} masked tokens in {len(replay.sequences)} sequences{trained}.",
        f"The {shown} sequence{'s' if shown != 1 else ''} that carried most of it:",
    ]
    for place, sequence in enumerate(replay.sequences[:count], start=1):
        share = sequence.loss_sum / (replay.loss * replay.predicted) if replay.predicted and replay.loss else 0.0
        lines.append(
            f"{place}. block {sequence.block} (micro-batch {sequence.micro_batch}"
            + (f", process {sequence.rank}" if sequence.rank else "")
            + f"): {share:.1%} of the step's loss, {sequence.predicted} masked tokens, mean loss {sequence.loss:.4f}"
        )
        lines.append("   " + " ".join(_shown(t.token) for t in sequence.tokens if not t.token.special))
        worst = sorted((t for t in sequence.tokens if t.loss is not None), key=lambda t: -t.loss)[:SHOWN_TOKENS]
        for token in worst:
            candidates = ", ".join(f"{piece} {chance:.0%}" for piece, chance in token.candidates)
            lines.append(f"   {token.token.original!r}: loss {token.loss:.3f}; the model's candidates {candidates}")
    return "\n".join(lines)


def _shown(token) -> str:
    """A piece as the text shows it: a masked one in brackets, with what the model read where that differs."""
    if not token.kind:
        return token.original
    read = token.generated if token.generated is not None else token.shown
    return f"[{token.original}]" if read == token.original else f"[{token.original}→{read}]"


def _as_json(replay, measured: float | None) -> dict:
    return {
        "step": replay.step,
        "checkpoint": replay.checkpoint,
        "checkpoint_step": replay.checkpoint_step,
        "exact": replay.exact,
        "loss": replay.loss,
        "measured_loss": measured,
        "masked_tokens": replay.predicted,
        "sequences": [
            {
                "block": s.block,
                "process": s.rank,
                "micro_batch": s.micro_batch,
                "loss_sum": s.loss_sum,
                "masked_tokens": s.predicted,
                "tokens": [
                    {
                        "original": t.token.original,
                        "shown": t.token.shown,
                        "kind": t.token.kind.name.lower(),
                        "generated": t.token.generated,
                        "loss": t.loss,
                        "candidates": [{"token": piece, "probability": p} for piece, p in t.candidates],
                    }
                    for t in s.tokens
                ],
            }
            for s in replay.sequences
        ],
    }
