"""Resumes FSDP2 training from a DCP folder on N gloo CPU ranks and records the losses.

    python _dcp_resume.py WORLD DCP_DIR OUT_JSON

Builds the model of fixtures/dcp/generate.py, shards it the same way (`fully_shard`, `b`
by columns), makes AdamW, loads `{"model", "optim", "extra"}` from DCP_DIR with `dcp.load`
and `set_state_dict`, trains 3 more steps on fixed data and writes (from rank 0) the
all-reduced loss of every step, the loaded `extra` values and the full model state after
loading, to OUT_JSON / OUT_JSON.pt."""
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_state_dict, set_state_dict)
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import Shard

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "dcp"))
from generate import Model, free_port  # noqa: E402


def run(rank, world, port, folder, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(123)  # weights are overwritten by the load
    model = Model()
    fully_shard(model.a)
    fully_shard(model.b, shard_placement_fn=lambda p: Shard(1))
    fully_shard(model.c)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd, "extra": {"epoch": 0, "tag": ""}}
    dcp.load(state, checkpoint_id=folder)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    torch.manual_seed(99)
    data = [torch.randn(6, 5) for _ in range(3)]
    losses = []
    for x in data:
        # Every rank sees the same batch, so the loss does not depend on the world size.
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        reduced = loss.detach().clone()
        dist.all_reduce(reduced)
        losses.append((reduced / world).item())
    if rank == 0:
        Path(out).write_text(json.dumps({"losses": losses, "extra": state["extra"]}))
        torch.save(full, out + ".pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    world, folder, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    mp.spawn(run, args=(world, free_port(), folder, out), nprocs=world)
