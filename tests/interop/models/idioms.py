"""Small modules holding the idioms of users' models that the export must lower or refuse:
`diff`, `cumsum`, `*_like` factories, in-place dropouts, `sin`/`cos`, per-sample gathers
by `arange` over the batch (CLIP's pooling, tokens picked per sample, transformers' padding
mask lookup, a boolean causal and padding mask into SDPA, T5's position bias selected by a padding
mask), BERT's bidirectional and decoders' causal additive masks from an `attention_mask`
input, diffusers' int64 timestep embedding, ultralytics' anchors, RoBERTa's position
ids, ViT's class token expanded over the batch, Swin's window mask and WavLM's position bias
expanded or repeated over the batch and folded into another dimension, and timm's:
attention's q, k, v stacked in front of the batch and unbound, a pad to a multiple of the
window computed from sizes, a −∞ pad before max pooling, a number raised to a constant
tensor, and the batch folded or moved by size arithmetic (sequence-first attention,
Conv1D's rows, kornia's channels as samples, einops' size products), DeBERTa's
relative position scores gathered by a clamped int64 index over batch × heads, sizes computed through
0-d tensors (DINOv2's `int(sqrt(n - 1))`, MobileViT's ceil and floor division),
kornia's mask of non-finite pixels, gcvit's global query repeated over each image's
windows and timm's rotary embedding beside an empty prefix of tokens, RAFT's `linspace` of
numbers, `topk` of per-sample scores and Longformer's put by a bool mask (test_idioms.py)."""
import torch, torch.nn as nn, torch.nn.functional as F
S, D = 6, 8
class Diff(nn.Module):
    def forward(self, x): return torch.diff(x, dim=-1)
class Cumsum(nn.Module):
    def forward(self, x): return x.cumsum(-1)
class Likes(nn.Module):
    def forward(self, x):
        e = torch.empty_like(x).fill_(0.5)
        return x + torch.zeros_like(x) + torch.ones_like(x) * 2 + torch.full_like(x, 3.0) + e
class Dropouts(nn.Module):
    def __init__(self):
        super().__init__(); self.d2 = nn.Dropout2d(0.3, inplace=True); self.d = nn.Dropout(0.2, inplace=True)
    def forward(self, x): return self.d(self.d2(x.reshape(-1, 2, 2, 2) * 1.5)).reshape(-1, D)
class SinCos(nn.Module):
    def forward(self, x): return torch.sin(x) * 2 + torch.cos(x)
class Pool(nn.Module):  # CLIP text pooling
    def forward(self, x, ids): return x[torch.arange(x.shape[0]), ids.argmax(-1)]
class PickTokens(nn.Module):  # several tokens per sample by computed, possibly negative positions
    def forward(self, x, pos): return x[torch.arange(x.shape[0])[:, None], pos] * 2
class PaddingLookup(nn.Module):  # transformers' padding_mask[batch_idx, kv_idx] mask builder
    def forward(self, x, mask):
        b = torch.arange(x.shape[0])[:, None, None, None]
        kv = torch.arange(x.shape[1])[None, None, None, :]
        allowed = mask.bool()[b, kv]
        scores = (x @ x.transpose(-1, -2))[:, None].masked_fill(~allowed, torch.finfo(x.dtype).min)
        return (torch.softmax(scores, -1) @ x[:, None]).squeeze(1)
class SdpaMask(nn.Module):  # transformers 5: a boolean causal & padding mask into SDPA
    def forward(self, x, mask):
        b, s = x.shape[0], x.shape[1]
        kv = torch.arange(s)[None, None, None, :]
        allowed = (kv <= torch.arange(s)[None, None, :, None]) & mask.bool()[torch.arange(b)[:, None, None, None], kv]
        h = x.view(b, s, 2, D // 2).transpose(1, 2)
        y = nn.functional.scaled_dot_product_attention(h, h, h, attn_mask=allowed.expand(b, -1, s, s))
        return y.transpose(1, 2).reshape(b, s, D)
class SdpaInfMask(nn.Module):  # an additive −∞ causal and padding mask into SDPA
    def forward(self, x, mask):
        padding = torch.zeros(mask.shape).masked_fill(mask == 0, float("-inf"))[:, None, None, :]
        additive = torch.full((S, S), float("-inf")).triu(1) + padding  # row 0: a hole hides all
        h = x.view(x.shape[0], S, 2, D // 2).transpose(1, 2)
        y = nn.functional.scaled_dot_product_attention(h, h, h, attn_mask=additive)
        return y.transpose(1, 2).reshape(x.shape[0], S, D)
class SdpaHiddenRow(nn.Module):  # a stored additive mask whose first query row hides every key
    def __init__(self):
        super().__init__()
        hidden = torch.zeros(S, S)
        hidden[0] = float("-inf")
        self.register_buffer("hidden", hidden)
    def forward(self, x):
        h = x.view(x.shape[0], S, 2, D // 2).transpose(1, 2)
        y = nn.functional.scaled_dot_product_attention(h, h, h, attn_mask=self.hidden)
        return y.transpose(1, 2).reshape(x.shape[0], S, D)
class PositionBias(nn.Module):  # T5: a padding mask selects from a [1, H, S, S] position bias
    def __init__(self):
        super().__init__(); self.register_buffer("bias", torch.randn(1, 2, S, S))
    def forward(self, x, mask):
        bias = torch.where(mask.bool()[:, None, None, :], self.bias, torch.finfo(x.dtype).min)
        h = x.view(x.shape[0], S, 2, D // 2).transpose(1, 2)
        return torch.softmax(h @ h.transpose(-1, -2) + bias, -1).sum(1)
class Bidirectional(nn.Module):
    def forward(self, x, mask):
        scores = x @ x.transpose(-1, -2)
        ext = (1.0 - mask[:, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        return torch.softmax(scores + ext, -1) @ x
class Causal(nn.Module):
    def forward(self, x, mask):
        s = x.shape[1]
        causal = torch.full((s, s), torch.finfo(x.dtype).min).triu(1)
        pad = (1.0 - mask[:, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        scores = x @ x.transpose(-1, -2) + causal + pad
        return torch.softmax(scores, -1) @ x
class Timestep(nn.Module):
    def __init__(self):
        super().__init__(); self.register_buffer("freqs", torch.exp(-torch.arange(4.0)))
    def forward(self, x, t):
        t = t.expand(x.shape[0])
        e = t[:, None].float() * self.freqs[None, :]
        return x + torch.cat([torch.sin(e), torch.cos(e)], -1)
class TimestepScale(nn.Module):  # diffusers UNet2DModel: the int64 timestep times int64 ones, then a float table
    def __init__(self):
        super().__init__(); self.register_buffer("freqs", torch.exp(-torch.arange(D // 2.0)))
    def forward(self, x, t):
        t = t * torch.ones(x.shape[0], dtype=t.dtype)
        e = (t[:, None] + 1) * self.freqs[None, :]
        return x + torch.cat([torch.sin(e), torch.cos(e)], -1)
class Anchors(nn.Module):  # ultralytics make_anchors: type_as of constants, new_full by a stored stride
    def __init__(self):
        super().__init__(); self.register_buffer("stride", torch.tensor([8.0, 16.0]))
    def forward(self, x):
        sx = torch.arange(D // 2).type_as(x) + 0.5
        strides = torch.cat([x.new_full((D // 4, 1), self.stride[i].item()) for i in range(2)])
        return x * torch.cat([sx, sx]) + strides.reshape(-1).repeat(2)[:D]
class StrideAnchors(nn.Module):  # ultralytics make_anchors: `full` by a 0-d stride tensor (a trace reads it with annotate(number))
    def __init__(self):
        super().__init__(); self.register_buffer("stride", torch.tensor([8.0, 16.0]))
    def forward(self, x):
        strides = torch.cat([torch.full((D // 2, 1), self.stride[i], dtype=x.dtype) for i in range(2)])
        return x * strides.reshape(-1)
class PositionIds(nn.Module):  # RoBERTa: cumsum of an int32 mask is int64; token types gathered from a buffer row
    def __init__(self):
        super().__init__()
        self.register_buffer("token_types", torch.zeros(1, 2 * S, dtype=torch.long))
        self.pos = nn.Embedding(2 * S + 2, D); self.types = nn.Embedding(2, D)
    def forward(self, x, ids):
        mask = ids.ne(1).int()
        pos = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1
        types = torch.gather(self.token_types.expand(ids.shape[0], -1), 1, pos)
        return x + self.pos(pos) + self.types(types)
class ClassToken(nn.Module):  # ViT: a stored class token expanded over the batch beside the patch tokens
    def __init__(self):
        super().__init__(); self.cls = nn.Parameter(torch.randn(1, 1, D))
    def forward(self, x): return torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1)
class WindowMask(nn.Module):  # Swin: a stored window mask expanded over the batch, then folded into the windows
    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.randn(2, S // 2, S // 2))
        self.register_buffer("hidden", torch.rand(2, S // 2, S // 2) < 0.3)
    def forward(self, x):
        w = x.view(-1, S // 2, D)
        scores = w @ w.transpose(1, 2)
        bias = self.bias.unsqueeze(0).expand(x.shape[0], -1, -1, -1).reshape(-1, S // 2, S // 2)
        hidden = self.hidden.unsqueeze(0).expand(x.shape[0], -1, -1, -1).reshape(-1, S // 2, S // 2)
        return torch.softmax((scores + bias).masked_fill(hidden, -1e4), -1).view(x.shape[0], -1)
class RepeatedBias(nn.Module):  # WavLM: a position bias repeated over the batch, viewed as batch × heads
    def __init__(self):
        super().__init__(); self.bias = nn.Parameter(torch.randn(2, S, S))
    def forward(self, x):
        b = x.shape[0]
        q = x.view(b, S, 2, D // 2).transpose(1, 2).reshape(b * 2, S, D // 2)
        bias = self.bias.unsqueeze(0).repeat(b, 1, 1, 1).view(b * 2, S, S)
        return (q @ q.transpose(1, 2) + bias).view(b, 2, S, S)
class QkvAttention(nn.Module):  # timm's Attention: q, k, v stacked before the batch, then unbound
    def __init__(self):
        super().__init__(); self.qkv = nn.Linear(D, 3 * D)
    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, 2, c // 2).permute(2, 0, 3, 1, 4).unbind(0)
        a = (q @ k.transpose(-2, -1) * 0.5).softmax(-1)
        return (a @ v).transpose(1, 2).reshape(b, n, c)
class WindowPad(nn.Module):  # swin's pad to a multiple of the window; timm's MaxPool2dSame −∞ pad
    def forward(self, x):
        x = x[:, None]
        h, w = x.shape[2], x.shape[3]
        x = torch.nn.functional.pad(x, (0, (5 - w % 5) % 5, 0, (5 - h % 5) % 5))
        x = torch.nn.functional.pad(x, (1, 1, 1, 1), value=-float("inf"))
        return torch.nn.functional.max_pool2d(x, 3, 1)[:, 0]
class FourierScale(nn.Module):  # timm's PositionalEncodingFourier: a number raised to a constant tensor
    def forward(self, x):
        d = torch.div(torch.arange(D, dtype=torch.float32), 2, rounding_mode="floor")
        return x / 10000 ** (2 * d / D)
class SeqFirstAttention(nn.Module):  # nn.MultiheadAttention on (L, N, E): a trace views to `bsz * num_heads` rows
    def __init__(self):
        super().__init__(); self.a = nn.MultiheadAttention(D, 2)
    def forward(self, x):
        y = x.transpose(0, 1)
        return self.a(y, y, y, need_weights=False)[0].transpose(0, 1)
class FoldedRows(nn.Module):  # transformers' Conv1D: the batch and the tokens folded into rows by view(-1, d)
    def __init__(self):
        super().__init__(); self.w = nn.Parameter(torch.randn(D, 3 * D)); self.b = nn.Parameter(torch.randn(3 * D))
    def forward(self, x):
        y = torch.addmm(self.b, x.view(-1, x.size(-1)), self.w)
        return y.view(x.size()[:-1] + (3 * D,))
class ChannelsAsSamples(nn.Module):  # kornia's filters: reshape(b * c, 1, h, w), a padded conv, back to (b, c, 2, h, w)
    def __init__(self):
        super().__init__(); self.register_buffer("k", torch.randn(2, 1, 3, 3))
    def forward(self, x):
        x = x.reshape(x.shape[0], 2, 3, D)
        b, c, h, w = x.shape
        y = nn.functional.conv2d(nn.functional.pad(x.reshape(b * c, 1, h, w), [1, 1, 1, 1], "replicate"), self.k)
        y = y.reshape(b, c, 2, h, w)
        return y[:, :, 0] * y[:, :, 1]
class SizeProduct(nn.Module):  # einops' Rearrange: sizes multiplied in place (a trace's `mul_` of sizes), the batch times 1
    def forward(self, x):
        x = x.reshape(x.shape[0], S, 2, D // 2).permute(0, 2, 1, 3)
        b, h, l, d = x.shape
        hd = h * 1
        hd *= d
        return x.permute(0, 2, 1, 3).reshape(b * 1, l, hd) * 2
class SizeScale(nn.Module):  # DeBERTa's sqrt of a size made a float tensor; kornia's 0-d brightness factor, clamp_ by numbers
    def forward(self, x):
        scale = torch.sqrt(torch.tensor(x.size(-1), dtype=torch.float) * 2)
        factor = torch.tensor(0.2).to(x.dtype)
        return torch.clamp_(x / scale + factor, 0.0, 1.0)
class IntegerExtremes(nn.Module):  # hashing and bucketing on token ids: min/max of two int64 tensors, clamp by integer bounds, numbers beyond float32's 2^24
    def forward(self, ids):
        other = ids.flip(-1)
        bucket = torch.clamp(torch.minimum(ids, other) + torch.max(ids, other), min=1, max=12)
        return (ids * 1000003 + 16777217).clamp_max(2**40) + bucket
class ExactIntegers(nn.Module):  # int64 numbers beyond float32's 2^24 in factories: full, arange, full_like and new_full over the batch
    def forward(self, ids):
        a = ids + torch.full((S,), 16777219, dtype=torch.long) + torch.arange(16777217, 16777217 + S)
        return a + torch.full_like(ids, 16777221) + ids.new_full((ids.shape[0], S), 16777223)
class BucketMin(nn.Module):  # T5's and MPNet's relative position buckets: torch.min and torch.max of two tensors
    def forward(self, x):
        pos = torch.arange(x.shape[1])[:, None] - torch.arange(x.shape[1])[None, :]
        buckets = torch.min(pos.abs() + 2, torch.full_like(pos, 4))
        return torch.max(x, x * 0.5)[:, :, :S] + buckets.float()
class SizeRoot(nn.Module):  # DINOv2's grid side int(sqrt(n - 1)) of a table's length; MobileViT's patch count by ceil and floor division
    def __init__(self):
        super().__init__(); self.pos = nn.Parameter(torch.randn(1, 5, S))
    def forward(self, x):
        n, w = self.pos.shape[1] - 1, x.shape[2]
        if torch.jit.is_tracing():  # transformers' torch_int: sizes are 0-d tensors in a trace
            side, cols = (n ** 0.5).to(torch.int64), (torch.ceil(w / 4) * 4).to(torch.int64) // 4
        else:
            side, cols = int(n ** 0.5), -(-w // 4)
        grid = self.pos[:, 1:].reshape(1, side, side, S).permute(0, 3, 1, 2).reshape(1, S, side * side)
        return x.reshape(x.shape[0], S, cols, 4).sum(-1) + grid[:, :, :cols]
class NonFinitePixels(nn.Module):  # kornia's median blur: a mask of non-finite pixels padded in the input dtype
    def forward(self, x):
        y = x.unsqueeze(1)
        marked = F.pad((~torch.isfinite(y)).to(y.dtype), (1, 1, 1, 1), mode="reflect") != 0
        near = marked[..., 1:-1, 1:-1] | marked[..., 2:, 2:]
        return torch.where(near, torch.zeros_like(y), y).squeeze(1)
class GatherScores(nn.Module):  # DeBERTa's c2p and p2c scores: int64 relative positions clamped (and negated) into an index expanded over batch × heads
    def forward(self, x):
        b = x.shape[0]
        q = x.view(b, S, 2, D // 2).permute(0, 2, 1, 3).reshape(-1, S, D // 2)
        scores = torch.bmm(q, q.transpose(-1, -2))
        pos = torch.arange(S)[:, None] - torch.arange(S)[None, :]
        c2p = torch.clamp(pos + 2, 0, S - 1).unsqueeze(0).squeeze(0).expand([q.size(0), q.size(1), S])
        p2c = torch.clamp(-pos + 2, 0, S - 1).expand([q.size(0), q.size(1), S])
        return (torch.gather(scores, -1, c2p) + torch.gather(scores, -1, p2c)).view(b, 2, S, S)
class ShiftedTokens(nn.Module):  # MobileBERT's trigram input: the tokens shifted by one, padded with a pair reaching the batch by nothing
    def forward(self, x):
        after = F.pad(x[:, 1:], [0, 0, 0, 1, 0, 0], value=0.0)
        before = F.pad(x[:, :-1], [0, 0, 1, 0, 0, 0], value=0.0)
        return torch.cat([after, x, before], dim=2)
class FusedQkv(nn.Module):  # Falcon's multi-query split: the key and value heads picked by the negative indices [-2] and [-1]
    def forward(self, x):
        qkv = x.view(x.shape[0], S, 4, D // 4)
        return qkv[..., :-2, :] * qkv[..., [-2], :] + qkv[..., [-1], :]
class _XSoftmax(torch.autograd.Function):  # SEW-D's and DeBERTa-v1's masked softmax; export keeps its in-place masked_fill_
    @staticmethod
    def forward(ctx, x, mask, dim):
        hidden = ~(mask.to(torch.bool))
        out = torch.softmax(x.masked_fill(hidden, torch.finfo(x.dtype).min), dim)
        out.masked_fill_(hidden, 0)
        return out
class InPlaceMaskedSoftmax(nn.Module):  # the masked softmax of an autograd.Function: an in-place masked_fill_ on an activation
    def forward(self, x, mask):
        return _XSoftmax.apply(x, mask[:, None, :], -1)
class GlobalQuery(nn.Module):  # gcvit's global query: one per image, repeated over its windows by `windows.size(0) // q.size(0)`
    def forward(self, x):
        windows = x.reshape(-1, S // 2, D)
        q = x[:, : S // 2] * 0.5
        q = q.repeat_interleave(windows.shape[0] // q.shape[0], 0)
        return torch.softmax(q @ windows.transpose(1, 2), -1).view(x.shape[0], -1)
class RotaryPrefix(nn.Module):  # timm's eva/qwen3_vit: `cat([q[:, :, :npt, :], rope(q[:, :, npt:, :])], 2)` with no prefix tokens (npt = 0)
    def forward(self, x):
        q = x.view(x.shape[0], S, 2, D // 2).transpose(1, 2)
        npt = 0
        t = q[:, :, npt:, :]
        half = D // 4
        rotated = torch.cat([-t[..., half:], t[..., :half]], -1) * 0.5 + t * 0.25
        return torch.cat([q[:, :, :npt, :], rotated], 2).reshape(x.shape[0], -1)
class SeqFirstTokens(nn.Module):  # XLNet: ids moved to [seq, batch] and looked up there, a padding mask compared there, positions expanded over the batch in an einsum, a one-operand einsum moving the batch first
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(9, D)
        self.r = nn.Parameter(torch.randn(S, D))
    def forward(self, ids, mask):
        h = self.table(ids.transpose(0, 1).contiguous())
        pos = self.r[:, None, :].expand(-1, ids.shape[0], -1)
        scores = torch.einsum("ibd,jbd->ijb", h, pos) - 1e4 * torch.eye(S)[:, :, None]
        hidden = mask.transpose(0, 1)[None, :, :] == 0
        scores = scores.masked_fill(hidden, -1e4)
        return torch.einsum("ijb->bij", scores).softmax(-1)
class SplitsByType(nn.Module):  # hsplit, dsplit and tensor_split by a count or by indices: the argument's type picks the overload
    def forward(self, x):
        halves = torch.hsplit(x, 2)
        pieces = torch.hsplit(x, [1, 4])
        depth = torch.dsplit(x, [3])
        thirds = torch.tensor_split(x, 2, dim=1)
        cuts = torch.tensor_split(x, [2, 5], dim=2)
        return torch.cat([(halves[0] * halves[1] + thirds[1]).flatten(1),
                          pieces[1].sum(1) + depth[0].sum(2, keepdim=True).mean(1),
                          (cuts[2] + depth[1][..., :3]).flatten(1)], 1)
class SinePositions(nn.Module):  # RT-DETR's 2-D sine position embedding: torch.outer of constant positions and frequencies
    def forward(self, x):
        positions = torch.arange(x.size(1), dtype=torch.float32)
        omega = 1.0 / 10000 ** (torch.arange(x.size(2) // 2, dtype=torch.float32) / (x.size(2) // 2))
        angles = torch.outer(positions, omega)
        return x + torch.cat([angles.sin(), angles.cos()], 1)[None]
class DoubleSinePositions(nn.Module):  # RT-DETR's embedding as transformers computes it: in float64 constants, cast to float32 at the end
    def forward(self, x):
        positions = torch.arange(x.size(1), dtype=torch.float64)
        omega = 1.0 / 10000.0 ** (torch.arange(x.size(2) // 2, dtype=torch.float64) / (x.size(2) // 2))
        angles = positions.outer(omega)
        return x + torch.cat([angles.sin(), angles.cos()], 1).to(torch.float32)[None]
class NumberSpacing(nn.Module):  # RAFT's correlation neighbourhood: linspace of numbers (of ints too: float32 points)
    def forward(self, x):
        return x + torch.linspace(-4, 4, D) * torch.linspace(0.5, -1.5, S)[:, None]
class TopScores(nn.Module):  # post-processing: topk of per-sample scores, values and indices
    def forward(self, x):
        top, index = x.mean(2).topk(3, dim=1)
        return torch.cat([top, index.float()], 1)
class MaskedPut(nn.Module):  # Longformer's global attention marks: `mask[ids == 2] = finfo.max`, a put by a bool mask of the tensor's own sizes
    def forward(self, x, ids):
        bias = (ids > 4).float() * -2.0
        bias[ids == 2] = torch.finfo(torch.float32).max
        return x.mean(2) + bias.clamp(max=7.0)
class BroadcastFactor(nn.Module):  # kornia's adjust_brightness: a 0-d factor made the image's rank by `factor[..., None]`
    def forward(self, x):
        factor = torch.as_tensor(0.2, device=x.device, dtype=x.dtype)
        while factor.dim() != x.dim():
            factor = factor[..., None]
        return (x + factor).clamp(0.0, 1.0)
class _Concat(nn.Module):
    def forward(self, x):
        return torch.concat([x, x.sin()], dim=-1)
class ConcatAlias(nn.Module):  # RT-DETR's hybrid encoder: `torch.concat`, torch's alias of cat (a trace keeps the alias in a submodule's code)
    def __init__(self):
        super().__init__()
        self.join = _Concat()
    def forward(self, x):
        return self.join(x)
class EmbeddingBags(nn.Module):  # DLRM's sparse features: nn.EmbeddingBag of [batch, length] ids, one bag per row (sum, mean and max with a padding id, sum with per-sample weights)
    def __init__(self):
        super().__init__()
        self.total = nn.EmbeddingBag(9, 4, mode="sum")
        self.mean = nn.EmbeddingBag(9, 4, mode="mean", padding_idx=1)
        self.most = nn.EmbeddingBag(9, 4, mode="max", padding_idx=1)
        self.weighted = nn.EmbeddingBag(9, 4, mode="sum", padding_idx=1)
    def forward(self, ids):
        scale = ids.float() / 9
        return torch.cat([self.total(ids), self.mean(ids), self.most(ids),
                          self.weighted(ids, per_sample_weights=scale)], -1)
class WritesIntoParts(nn.Module):  # in-place writes into parts of an activation under no_grad (torch.export keeps them): a select filled, a slice copied, scaled and zeroed, a select of a slice through relu_
    def forward(self, x):
        y = x * 2
        with torch.no_grad():
            y[:, 0] = 5.0
            y[:, 2:4] = x[:, 1:3]
            y[:, -1].fill_(3.0)
            y[:, 4:6].mul_(-2)
            y[:, 6:].zero_()
            z = y.view(-1, 2, 4)
            z[:, 1, 1:3].relu_()
        return y + 1


class InPlaceThroughDetach(nn.Module):  # an in-place op under no_grad on a detached alias: torch.export keeps it, and the tensor it aliases sees the change
    def forward(self, x):
        x = x * 1
        with torch.no_grad():
            y = x.detach()
            y.relu_()
        return x * 2
