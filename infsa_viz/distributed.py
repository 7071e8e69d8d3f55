"""torchrun support: rank/world from the environment, sharding, gathering to rank 0.

Under ``torchrun --nproc_per_node=N -m infsa_viz.cli …`` the process group is initialised from
the standard environment variables (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``…), with gloo on
CPU and nccl on CUDA. Without them everything runs as a single process (rank 0 of 1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Dist", "init_distributed", "shard_indices"]


@dataclass
class Dist:
    """The process's place in the job."""

    rank: int = 0
    world_size: int = 1
    backend: str | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def gather(self, obj: Any) -> list[Any] | None:
        """Every rank's ``obj`` on rank 0 (in rank order); ``None`` on other ranks."""
        if not self.enabled:
            return [obj]
        import torch.distributed as dist

        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        dist.gather_object(obj, out, dst=0)
        return out

    def barrier(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def close(self) -> None:
        if self.enabled:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()


def init_distributed(device: str = "cpu") -> Dist:
    """Join the torchrun job described by the environment, or return a single-process ``Dist``."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    import torch.distributed as dist

    backend = "nccl" if device.startswith("cuda") and torch.cuda.is_available() else "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return Dist(rank=dist.get_rank(), world_size=dist.get_world_size(), backend=backend)


def shard_indices(n: int, dist: Dist) -> list[int]:
    """DistributedSampler-style shard without padding: indices ``rank, rank + world, …``."""
    return list(range(dist.rank, n, dist.world_size))
