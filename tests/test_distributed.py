"""torchrun support: the single-process default, sharding, and a real 2-process gloo gather."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from infsa_viz.distributed import Dist, init_distributed, shard_indices


def test_single_process_by_default(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    dist = init_distributed()
    assert (dist.rank, dist.world_size, dist.backend) == (0, 1, None)
    assert dist.is_main and not dist.enabled and dist.gather("x") == ["x"]
    dist.barrier()
    dist.close()
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert init_distributed().world_size == 1


@pytest.mark.parametrize(("n", "world"), [(10, 3), (2, 4), (0, 2), (7, 1)])
def test_shards_cover_every_index_once(n, world):
    shards = [shard_indices(n, Dist(rank=r, world_size=world)) for r in range(world)]
    assert sorted(i for s in shards for i in s) == list(range(n))
    assert all(s == list(range(r, n, world)) for r, s in enumerate(shards))


SCRIPT = """
from infsa_viz.distributed import init_distributed
dist = init_distributed()
out = dist.gather({"rank": dist.rank, "shard": __import__("infsa_viz.distributed").distributed.shard_indices(5, dist)})
dist.barrier()
print(repr(out) if dist.is_main else repr(None))
dist.close()
"""


@pytest.mark.slow
def test_two_gloo_processes_gather_on_rank_0_in_rank_order():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "2",
           "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env={**env, "RANK": str(r)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-500:] for _, err in outs]
    assert outs[0][0].strip() == repr([{"rank": 0, "shard": [0, 2, 4]}, {"rank": 1, "shard": [1, 3]}])
    assert outs[1][0].strip() == "None"
