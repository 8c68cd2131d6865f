#!/usr/bin/env python3
"""Token models with integer and bool inputs, for `tests/interop/test_dtypes.py`:

* `bert`: a tiny BERT-like encoder written by hand: token and position `nn.Embedding`s,
  one attention block whose padding mask is an input (bool `True` = a real token, or the
  int64 0/1 `attention_mask` of Hugging Face tokenizers), a feed-forward block and a
  masked-mean pooled head.
* `bag`: an `nn.Embedding` classifier (mean of the token vectors, an MLP head).
* `masked-bag`: a masked mean of token vectors, its argmax and a `where` on the ids (what
  a `torch.jit.trace` holds: no op returning a tuple).
* `picker`: argmax/argmin, `max(dim)`, `topk`, `where`, comparisons, logical ops,
  `masked_fill` on a float and an int64 input, returning float, int64 and
  bool outputs.

    python tokens_int.py KIND OUT.pt2 [--dynamic-seq] [--trace OUT.pt]
"""
import torch
from torch import nn

VOCAB = 50
SEQ = 8
WIDTH = 16
HEADS = 2


class Bert(nn.Module):
    def __init__(self, mask_dtype):
        super().__init__()
        self.mask_dtype = mask_dtype
        self.tokens = nn.Embedding(VOCAB, WIDTH)
        self.positions = nn.Embedding(SEQ, WIDTH)
        self.norm0 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.norm1 = nn.LayerNorm(WIDTH)
        self.ffn = nn.Sequential(nn.Linear(WIDTH, 32), nn.GELU(), nn.Linear(32, WIDTH))
        self.norm2 = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 3)

    def forward(self, ids, mask):
        h = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        h = self.norm0(h)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q, k, v = (t.unflatten(-1, (HEADS, WIDTH // HEADS)).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (WIDTH // HEADS) ** 0.5
        keys = mask.unsqueeze(1).unsqueeze(2)
        if self.mask_dtype == torch.bool:
            scores = scores.masked_fill(~keys, -1e9)
        else:
            scores = scores + (1.0 - keys.float()) * -1e9
        a = (scores.softmax(-1) @ v).transpose(1, 2).flatten(2)
        h = self.norm1(h + self.proj(a))
        h = self.norm2(h + self.ffn(h))
        weights = (mask != 0).unsqueeze(-1).float()
        pooled = (h * weights).sum(1) / weights.sum(1).clamp_min(1.0)
        return self.head(pooled)


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, ids):
        return self.mlp(self.embed(ids).mean(1))


class MaskedBag(nn.Module):
    """What a trace can hold: a masked mean of token vectors, its argmax and a `where` on
    the ids (single-output ops only)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.head = nn.Linear(WIDTH, 4)

    def forward(self, ids, mask):
        e = self.embed(ids).masked_fill(~mask.unsqueeze(-1), 0.0)
        m = mask.unsqueeze(-1).float()
        logits = self.head(e.sum(1) / m.sum(1).clamp_min(1.0))
        return logits, logits.argmax(-1), torch.where(ids > 3, ids, 0)


class Picker(nn.Module):
    def forward(self, x, ids):
        values, indices = x.topk(3, dim=-1)
        top, where_top = x.max(dim=1)
        keep = (ids >= 2) & (ids != 4) | ids.lt(1)
        return {
            "argmax": x.argmax(-1),
            "argmin": ids.argmin(dim=1, keepdim=True),
            "topk": values,
            "topk_indices": indices,
            "max": top,
            "max_indices": where_top,
            "leaky": torch.where(x > 0, x, 0.1 * x),
            "keep": keep,
            "not_keep": torch.logical_not(keep),
            "le": x <= 0.25,
            "ge_tensor": x.ge(torch.where(x > 0, x, 0.1 * x)),
            "filled": x.masked_fill(x < -0.5, 0.0),
            "as_float": ids.float() * 0.5,
        }


def build(kind, seed=0):
    torch.manual_seed(seed)
    model = {
        "bert": lambda: Bert(torch.bool),
        "bert-int-mask": lambda: Bert(torch.int64),
        "bag": Bag,
        "masked-bag": MaskedBag,
        "picker": Picker,
    }[kind]()
    return model.eval()


def example(kind, batch, seq=SEQ, seed=0):
    """Inputs for `kind` at `batch` (ids drawn in range; masks with padding at the end)."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (batch, seq), generator=gen)
    if kind == "picker":
        return (torch.randn(batch, 6, 5, generator=gen), torch.randint(0, 6, (batch, 5),
                                                                        generator=gen))
    if kind == "bag":
        return (ids,)
    lengths = torch.randint(1, seq + 1, (batch,), generator=gen)
    mask = torch.arange(seq)[None, :] < lengths[:, None]
    return (ids, mask.long() if kind == "bert-int-mask" else mask)


def input_names(kind):
    return {"picker": ["x", "ids"], "bag": ["ids"]}.get(kind, ["ids", "mask"])


def export(kind, path, seed=0, dynamic_seq=False):
    """`torch.export` of `kind` with a dynamic batch (and sequence, when asked)."""
    model = build(kind, seed)
    inputs = example(kind, 2)
    batch = torch.export.Dim("batch")
    axes = {0: batch}
    if dynamic_seq:
        axes[1] = torch.export.Dim("seq", min=2, max=SEQ)
    shapes = {name: dict(axes) for name in input_names(kind)}
    program = torch.export.export(model, inputs, dynamic_shapes=shapes)
    torch.export.save(program, str(path))
    return model


def trace(kind, path, seed=0):
    """`torch.jit.trace` of `kind` at batch 2, saved to `path`."""
    model = build(kind, seed)
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(model, example(kind, 2)), str(path))
    return model


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["bert", "bert-int-mask", "bag", "masked-bag", "picker"])
    parser.add_argument("out")
    parser.add_argument("--dynamic-seq", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    export(args.kind, args.out, args.seed, args.dynamic_seq)
