"""A small decoder without KV cache, as Hugging Face writes GPT-2, LLaMA and Qwen2, for
exports with a dynamic batch and a dynamic sequence length (test_dynamic_seq.py): int64
ids, a position table read up to the length, projections through GPT-2's `Conv1D`
(`x.view(-1, D)`, `addmm`, a view back to `[B, S, ·]`, which merges the batch and the
length), RoPE's cos/sin rows from `arange(S)`, a causal mask (additive, from
`full(...).triu(1)`, or boolean into SDPA) and a T5-style relative position bias
`[H, S, S]`."""
import torch
import torch.nn as nn

VOCAB, D, HEADS, MAX_POSITIONS = 50, 16, 2, 40


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D: a linear layer with a `[in, out]` weight."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out) * 0.2)
        self.bias = nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.weight.shape[1],)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Decoder(nn.Module):
    """`mask`: `"additive"` (a float causal mask added to the scores) or `"sdpa"` (a
    boolean one into `scaled_dot_product_attention`); `bias`: add a relative position
    bias computed from `arange(S)`."""

    def __init__(self, mask="additive", bias=False):
        super().__init__()
        self.mask, self.bias = mask, bias
        self.tokens = nn.Embedding(VOCAB, D)
        self.positions = nn.Embedding(MAX_POSITIONS, D)
        self.qkv = Conv1D(D, 3 * D)
        self.proj = Conv1D(D, D)
        self.relative = nn.Embedding(9, HEADS)
        head = D // HEADS
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, head, 2).float() / head))

    def forward(self, ids):
        b, s = ids.shape
        pos = torch.arange(s)
        x = self.tokens(ids) + self.positions(pos)[None]
        q, k, v = self.qkv(x).split(D, dim=2)
        q, k, v = (t.view(b, s, HEADS, -1).transpose(1, 2) for t in (q, k, v))
        freqs = pos[:, None].float() * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if self.mask == "sdpa":
            allowed = pos[None, :] <= pos[:, None]
            y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        else:
            scores = q @ k.transpose(-1, -2) / (D // HEADS) ** 0.5
            scores = scores + torch.full((s, s), torch.finfo(x.dtype).min).triu(1)
            if self.bias:
                distance = (pos[None, :] - pos[:, None]).clamp(-4, 4) + 4
                scores = scores + self.relative(distance).permute(2, 0, 1)[None]
            y = torch.softmax(scores, -1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, s, D))
