"""Training on several processes started by `torchrun`: joining and leaving the process group, rank 0 telling
the others which run it prepared, and the collective decisions every step takes together."""

from __future__ import annotations

import contextlib
import gc
import os
from dataclasses import dataclass

import torch

from mlm_studio.core.errors import MLMStudioError


@dataclass(frozen=True)
class Distributed:
    """This process's place in a multi-process run."""

    rank: int
    world_size: int

    @property
    def main(self) -> bool:
        return self.rank == 0


SINGLE = Distributed(0, 1)


class RankZeroFailed(MLMStudioError):
    """Rank 0 could not prepare the run; the other ranks stop with its message."""


def join() -> tuple[Distributed, torch.device | None]:
    """Join the process group when started by torchrun: this process's place and its device (None alone)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return SINGLE, None
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local)
    torch.distributed.init_process_group("nccl" if cuda else "gloo")
    place = Distributed(torch.distributed.get_rank(), torch.distributed.get_world_size())
    return place, torch.device(f"cuda:{local}" if cuda else "cpu")


def leave() -> None:
    """Every rank waits for the others, then the group is torn down before the interpreter exits."""
    gc.collect()
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def share(dist: Distributed, path: str | None, error: str | None = None) -> str | None:
    """Rank 0 tells the other ranks the run folder it prepared, or why it could not (they raise RankZeroFailed)."""
    if dist.world_size == 1:
        return path
    message = [{"path": path, "error": error}]
    torch.distributed.broadcast_object_list(message, src=0)
    if message[0]["error"] is not None and not dist.main:
        raise RankZeroFailed(message[0]["error"])
    return message[0]["path"]


def any_rank(dist: Distributed, flag: bool, device: torch.device) -> bool:
    """True if any process raises `flag` (all processes must stop or skip together)."""
    if dist.world_size == 1:
        return flag
    value = torch.tensor([1.0 if flag else 0.0], device=device)
    torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.MAX)
    return bool(value.item())


def summed(dist: Distributed, values: tuple[float, ...], device: torch.device) -> list[float]:
    """Each value summed over the processes."""
    if dist.world_size == 1:
        return list(values)
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    torch.distributed.all_reduce(tensor)
    return tensor.tolist()


def no_sync_unless(module: torch.nn.Module, sync: bool):
    """Skip DistributedDataParallel's gradient all-reduce on all but the last micro-batch of a step."""
    if sync or not hasattr(module, "no_sync"):
        return contextlib.nullcontext()
    return module.no_sync()
