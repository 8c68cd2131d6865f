"""Writes a DCP folder whose chunks give `ckpt consolidate` every kind of piece: row-sharded
chunks of 1 MiB and more (one long run each), a 3-D tensor sharded on its middle axis (runs
of 1 MiB, interleaved across the ranks' files), a 2-D one sharded by columns (short runs) and
an uneven row split. Two gloo CPU ranks, DTensors saved with `dcp.save`.

    python _dcp_runs.py OUT [--no-crc]

`--no-crc` has torch.save skip the records' CRC-32 (`set_crc32_options(False)`: it writes 0),
as a user may to save faster.
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard

# name: (full shape, sharded axis)
TENSORS = {
    "rows": ((8, 65536), 0),          # 1 MiB of float32 per rank: one run each
    "middle": ((3, 4, 65536), 1),     # runs of 512 KiB: buffered
    "wide_middle": ((2, 4, 131072), 1),  # runs of 1 MiB, rank 0's and rank 1's interleaved
    "columns": ((64, 256), 1),        # runs of 512 bytes
    "uneven": ((5, 131072), 0),       # 3 rows and 2 rows
}


def full(name, shape):
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    return torch.randn(shape, generator=g)


def run(rank, world, port, out, crc):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.serialization.set_crc32_options(crc)
    mesh = init_device_mesh("cpu", (world,))
    sd = {}
    for name, (shape, dim) in TENSORS.items():
        whole = full(name, shape)
        parts = torch.tensor_split(whole, world, dim=dim) if name == "uneven" else \
            whole.chunk(world, dim=dim)
        local = parts[rank].contiguous()
        sd[name] = DTensor.from_local(local, mesh, [Shard(dim)], shape=whole.shape,
                                      stride=whole.stride(), run_check=False)
    dcp.save({"model": sd}, checkpoint_id=out)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(run, args=(2, port, sys.argv[1], "--no-crc" not in sys.argv[2:]), nprocs=2)
