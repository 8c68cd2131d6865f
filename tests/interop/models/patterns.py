"""Hand-written models for the ONNX coverage sweep (scripts/sweep-onnx) and its CI subset
(test_coverage_fast.py): recurrent and detection-head patterns that the timm/transformers
corpus lacks, and small blocks representative of the timm families (ConvNeXt, EfficientNet
squeeze-excite, ViT) so CI covers them without timm installed.

`PATTERNS` maps a name to `(build, inputs)`: `build(seed)` returns the model in eval mode,
`inputs` is a tuple of `_coverage.Input`.
"""
import torch
from torch import nn

from _coverage import Axis, Input

VOCAB = 50


class Crnn(nn.Module):
    """OCR recogniser: conv features collapsed over the height, a bidirectional LSTM over
    the width, per-step class log-probabilities [N, T, classes]."""

    def __init__(self, classes=11):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d((2, 1)), nn.Conv2d(32, 32, (4, 1)), nn.ReLU())
        self.rnn = nn.LSTM(32, 24, bidirectional=True, batch_first=True)
        self.head = nn.Linear(48, classes)

    def forward(self, x):
        f = self.features(x).squeeze(2).permute(0, 2, 1)
        y, _ = self.rnn(f)
        return self.head(y).log_softmax(-1)


class GruTagger(nn.Module):
    """Sequence tagger: token embedding, two-layer GRU, per-token tag scores."""

    def __init__(self, tags=7):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.rnn = nn.GRU(16, 24, num_layers=2, batch_first=True)
        self.head = nn.Linear(24, tags)

    def forward(self, tokens):
        y, _ = self.rnn(self.embed(tokens))
        return self.head(y)


class YoloHead(nn.Module):
    """YOLOv5's Detect in inference form over three feature levels from a small backbone:
    per level a 1x1 conv to anchors*(5+classes), view/permute to [N, A, H, W, 5+C], sigmoid,
    xy decoded against a constant grid, wh against the anchors, all levels concatenated to
    [N, boxes, 5+C]."""

    def __init__(self, classes=3, size=64):
        super().__init__()
        self.no, self.na = classes + 5, 3
        chans = (8, 16, 32)
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.SiLU(),
                                  nn.Conv2d(8, 8, 3, 2, 1), nn.SiLU(),
                                  nn.Conv2d(8, 8, 3, 2, 1), nn.SiLU())
        self.down = nn.ModuleList([nn.Conv2d(8, 16, 3, 2, 1), nn.Conv2d(16, 32, 3, 2, 1)])
        self.m = nn.ModuleList(nn.Conv2d(c, self.na * self.no, 1) for c in chans)
        self.strides = (8, 16, 32)
        anchors = torch.tensor([[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119],
                                [116, 90, 156, 198, 373, 326]], dtype=torch.float32)
        for i, s in enumerate(self.strides):
            n = size // s
            yv, xv = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
            self.register_buffer(f"grid{i}", torch.stack((xv, yv), 2).view(1, 1, n, n, 2)
                                 .float() - 0.5)
            self.register_buffer(f"anchor{i}", anchors[i].view(1, 3, 1, 1, 2))

    def forward(self, x):
        p3 = self.stem(x)
        p4 = self.down[0](p3)
        p5 = self.down[1](p4)
        out = []
        for i, f in enumerate((p3, p4, p5)):
            y = self.m[i](f)
            n, _, h, w = y.shape
            y = y.view(n, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).sigmoid()
            xy = (y[..., 0:2] * 2 + getattr(self, f"grid{i}")) * self.strides[i]
            wh = (y[..., 2:4] * 2) ** 2 * getattr(self, f"anchor{i}")
            out.append(torch.cat((xy, wh, y[..., 4:]), -1).view(n, -1, self.no))
        return torch.cat(out, 1)


class Selections(nn.Module):
    """Post-processing users: stack, where, max over a dim (values and indices), argmax,
    topk (values and indices) on conv features."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        f = self.conv(x).flatten(2)                       # [N, 8, HW]
        gated = torch.where(f > 0, f, 0.1 * f)
        best, where = gated.max(dim=2)
        top, top_index = gated.mean(2).topk(3, dim=1)
        stacked = torch.stack((best, gated.mean(2)), dim=1)
        return stacked, where, gated.argmax(dim=1), top, top_index


class EmbeddingBagOfWords(nn.Module):
    """nn.Embedding looked up by int64 ids, averaged, a Linear classifier."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, tokens):
        return self.head(self.embed(tokens).mean(1))


class ConvNextBlock(nn.Module):
    """timm/torchvision ConvNeXt: patchify stem, depthwise 7x7, channels-last LayerNorm,
    MLP with exact GELU, layer scale, residual; global pool, LayerNorm, head."""

    def __init__(self, dim=16):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 4, stride=4)
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.rand(dim) + 0.5)
        self.head_norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x)
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        y = self.fc2(nn.functional.gelu(self.fc1(y))) * self.gamma
        x = x + y.permute(0, 3, 1, 2)
        return self.head(self.head_norm(x.mean((2, 3))))


class SqueezeExcite(nn.Module):
    """EfficientNet/MobileNetV3 inverted residual: expand 1x1, depthwise 3x3, hard-swish,
    squeeze-excite gate (global pool, two 1x1 convs, hard-sigmoid), project, residual."""

    def __init__(self, dim=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dim, 3, 2, 1), nn.BatchNorm2d(dim), nn.SiLU())
        self.expand = nn.Sequential(nn.Conv2d(dim, 4 * dim, 1), nn.BatchNorm2d(4 * dim),
                                    nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(4 * dim, 4 * dim, 3, 1, 1, groups=4 * dim),
                                nn.BatchNorm2d(4 * dim), nn.Hardswish())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(4 * dim, dim // 2, 1),
                                nn.ReLU(), nn.Conv2d(dim // 2, 4 * dim, 1), nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(4 * dim, dim, 1), nn.BatchNorm2d(dim))
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(self.expand(x))
        x = x + self.project(y * self.se(y))
        return self.head(x.mean((2, 3)))


class VitBlock(nn.Module):
    """ViT: conv patch embedding, class token, position embedding, one pre-norm encoder
    layer (nn.TransformerEncoderLayer, GELU), the class token's LayerNorm and head."""

    def __init__(self, dim=32, size=32, patch=8):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, dim) * 0.1)
        self.layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.0,
                                                activation="gelu", batch_first=True,
                                                norm_first=True)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat((self.cls.expand(t.shape[0], -1, -1), t), 1) + self.pos
        return self.head(self.norm(self.layer(t))[:, 0])


class StarBlock(nn.Module):
    """timm StarNet: depthwise 7x7 + BN, two 1x1 branches multiplied ("star", ReLU6 on one),
    1x1 back, depthwise 7x7, residual; global pool and head."""

    def __init__(self, dim=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dim, 3, 2, 1), nn.BatchNorm2d(dim), nn.ReLU6())
        self.dw1 = nn.Sequential(nn.Conv2d(dim, dim, 7, 1, 3, groups=dim), nn.BatchNorm2d(dim))
        self.f1, self.f2 = nn.Conv2d(dim, 3 * dim, 1), nn.Conv2d(dim, 3 * dim, 1)
        self.g = nn.Sequential(nn.Conv2d(3 * dim, dim, 1), nn.BatchNorm2d(dim))
        self.dw2 = nn.Conv2d(dim, dim, 7, 1, 3, groups=dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x)
        y = self.dw1(x)
        y = self.dw2(self.g(nn.functional.relu6(self.f1(y)) * self.f2(y)))
        return self.head(nn.functional.adaptive_avg_pool2d(x + y, 1).flatten(1))


class DlaTree(nn.Module):
    """timm DLA: two residual blocks aggregated by a root (concat, 1x1 conv, BN, ReLU, with
    the downsampled input as a residual), max-pool downsampling, global pool and head."""

    def __init__(self, dim=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dim, 3, 1, 1), nn.BatchNorm2d(dim), nn.ReLU())
        self.pool = nn.MaxPool2d(2, 2)
        self.tree1 = nn.Sequential(nn.Conv2d(dim, dim, 3, 2, 1), nn.BatchNorm2d(dim))
        self.tree2 = nn.Sequential(nn.Conv2d(dim, dim, 3, 1, 1), nn.BatchNorm2d(dim))
        self.root = nn.Sequential(nn.Conv2d(3 * dim, dim, 1), nn.BatchNorm2d(dim))
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x)
        bottom = self.pool(x)
        x1 = nn.functional.relu(self.tree1(x) + bottom)
        x2 = nn.functional.relu(self.tree2(x1) + x1)
        y = nn.functional.relu(self.root(torch.cat((x2, x1, bottom), 1)) + bottom)
        return self.head(y.mean((2, 3)))


class ShiftedWindows(nn.Module):
    """timm Swin / SwinV2: channels-last tokens rolled by half a window, partitioned into
    4x4 windows (the batch folded into the window count), cosine attention per window
    (`F.normalize`), windows merged and rolled back."""

    def __init__(self, dim=16, heads=2, window=4):
        super().__init__()
        self.dim, self.heads, self.window = dim, heads, window
        self.stem = nn.Conv2d(3, dim, 4, 4)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.scale = nn.Parameter(torch.full((heads, 1, 1), 10.0))
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x).permute(0, 2, 3, 1)  # B, H, W, C
        b, h, w, c = x.shape
        s, k = self.window // 2, self.window
        y = torch.roll(x, shifts=(-s, -s), dims=(1, 2))
        y = y.view(b, h // k, k, w // k, k, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, k * k, c)
        q, kk, v = self.qkv(y).reshape(-1, k * k, 3, self.heads, c // self.heads).permute(
            2, 0, 3, 1, 4).unbind(0)
        attn = nn.functional.normalize(q, dim=-1) @ nn.functional.normalize(kk, dim=-1).transpose(-2, -1)
        y = (attn * self.scale).softmax(-1) @ v
        y = self.proj(y.transpose(1, 2).reshape(-1, k * k, c))
        y = y.view(b, h // k, w // k, k, k, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        x = x + torch.roll(y, shifts=(s, s), dims=(1, 2))
        return self.head(x.mean((1, 2)))


class FourierPositions(nn.Module):
    """timm EdgeNeXt / XCiT positional encoding: a mask of zeros sized by the batch, its
    running sums normalised, sines and cosines of them, a 1x1 projection, added to the
    features; then an RMSNorm'd head (timm/HF RMSNorm)."""

    def __init__(self, dim=16, hidden=8):
        super().__init__()
        self.hidden = hidden
        self.stem = nn.Conv2d(3, dim, 4, 4)
        self.project = nn.Conv2d(2 * hidden, dim, 1)
        self.norm = nn.RMSNorm(dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x)
        b, _, h, w = x.shape
        mask = torch.zeros(b, h, w, dtype=torch.bool)
        not_mask = ~mask
        y = not_mask.cumsum(1, dtype=torch.float32)
        z = not_mask.cumsum(2, dtype=torch.float32)
        y = y / (y[:, -1:, :] + 1e-6) * 6.283185307179586
        z = z / (z[:, :, -1:] + 1e-6) * 6.283185307179586
        t = torch.arange(self.hidden, dtype=torch.float32)
        t = 10000 ** (2 * torch.div(t, 2, rounding_mode="floor") / self.hidden)
        py, pz = y[:, :, :, None] / t, z[:, :, :, None] / t
        py = torch.stack((py[:, :, :, 0::2].sin(), py[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pz = torch.stack((pz[:, :, :, 0::2].sin(), pz[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos = self.project(torch.cat((py, pz), dim=3).permute(0, 3, 1, 2))
        x = (x + pos).flatten(2).transpose(1, 2)
        return self.head(self.norm(x).mean(1))


class UnfoldEinsum(nn.Module):
    """timm VOLO / TNT patches (`F.unfold` then `F.fold` back), SAM / MViTv2 relative
    positions (`einsum` of the tokens by a parameter table) and GCViT's global query
    repeated for each window (`repeat_interleave` along the batch)."""

    def __init__(self, dim=8, size=8):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 4, 4)
        self.mix = nn.Linear(dim * 9, dim * 9)
        self.rel_h = nn.Parameter(torch.randn(size, 5, dim) * 0.2)
        self.query = nn.Linear(dim, dim)
        self.head = nn.Linear(dim + 5 + dim, 10)

    def forward(self, x):
        x = self.stem(x)  # B, C, 8, 8
        b, c, h, w = x.shape
        cols = nn.functional.unfold(x, 3, padding=1)  # B, C*9, 64
        cols = self.mix(cols.transpose(1, 2)).transpose(1, 2)
        x = nn.functional.fold(cols, (h, w), 3, padding=1) / 9.0
        tokens = x.permute(0, 2, 3, 1)  # B, H, W, C
        rel = torch.einsum("bhwc,hkc->bhwk", tokens, self.rel_h)
        windows = tokens.reshape(b * 4, (h * w) // 4, c)
        query = self.query(tokens.mean((1, 2)))[:, None, :].repeat_interleave(4, dim=0)
        mixed = (windows * query).reshape(b, h * w, c)
        pooled = torch.cat((tokens.mean((1, 2)), rel.mean((1, 2)), mixed.mean(1)), dim=1)
        return self.head(pooled)


class FilledTable(nn.Module):
    """timm ConViT GPSA: a relative-position table the forward builds by filling zeros
    through views (`rel[:, :, :, 2] = d`), scaled in place through a slice and read through
    an earlier view after the writes; per-head position attention from it, written over
    the whole map (`attn[:, :, 0:, 0:] = …`, MViTv2), normalised in place
    (`attn /= attn.sum(-1, keepdim=True)`) and mixed with the tokens."""

    def __init__(self, dim=8, side=4, heads=2):
        super().__init__()
        self.side = side
        self.stem = nn.Conv2d(3, dim, 8, 8)
        self.pos = nn.Linear(3, heads)
        self.value = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 10)

    def table(self):
        side, n = self.side, self.side * self.side
        rel = torch.zeros(1, n, n, 3)
        first_rows = rel[:, :2]
        ind = torch.arange(side).view(1, -1) - torch.arange(side).view(-1, 1)
        indx = ind.repeat(side, side)
        indy = ind.repeat_interleave(side, dim=0).repeat_interleave(side, dim=1)
        rel[:, :, :, 2] = (indx ** 2 + indy ** 2).unsqueeze(0)
        rel[:, :, :, 1] = indy.unsqueeze(0)
        rel[:, :, :, 0] = indx.unsqueeze(0)
        rel[:, :, :, 2].mul_(0.5)
        return rel, first_rows

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)  # B, N, C
        b = x.shape[0]
        rel, first_rows = self.table()
        positional = self.pos(rel.expand(b, -1, -1, -1)).permute(0, 3, 1, 2)  # B, H, N, N
        attn = (positional + 0.1 * (x @ x.transpose(1, 2)).unsqueeze(1)).sigmoid()
        # MViTv2's decomposed relative positions, written over the whole map.
        # (Positive terms only: a row sum near zero would make float32 itself inexact.)
        attn[:, :, 0:, 0:] = attn + 0.5 * positional.tanh().abs()
        attn /= attn.sum(-1, keepdim=True)
        v = self.value(x).reshape(b, -1, attn.shape[1], x.shape[2] // attn.shape[1])
        mixed = (attn @ v.transpose(1, 2)).transpose(1, 2).reshape(b, -1, x.shape[2])
        return self.head(mixed.mean(1) + first_rows.mean())


class AutocastOffAttention(nn.Module):
    """timm EfficientViT (MIT) LiteMLA: ReLU linear attention computed in a region with
    autocast disabled (`with torch.autocast(device_type, enabled=False)`), which
    torch.export keeps as one `wrap_with_autocast` node holding the region's body."""

    def __init__(self, dim=8):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 4, 4)
        self.qkv = nn.Conv2d(dim, 3 * dim, 1)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = self.stem(x)
        b, c, h, w = x.shape
        q, k, v = self.qkv(x).reshape(b, 3, c, h * w).unbind(1)
        q, k = q.relu(), k.relu()
        v = nn.functional.pad(v, (0, 0, 0, 1), mode="constant", value=1.0)
        with torch.autocast(device_type="cpu", enabled=False):
            kv = v.float() @ k.float().transpose(-1, -2)
            out = kv @ q.float()
            out = out[:, :-1] / (out[:, -1:] + 1e-5)
        return self.head(out.mean(-1))


class DynamicSequence(nn.Module):
    """A BERT-style encoder exported with a dynamic sequence length besides the batch:
    position embeddings read from a buffer sliced to the length (`position_ids[:, :S]`),
    token types from a zero buffer, a boolean all-true attention mask sized by batch and
    length, heads split and merged by views that name both sizes."""

    def __init__(self, dim=16, heads=2, max_len=32):
        super().__init__()
        self.heads = heads
        self.words = nn.Embedding(VOCAB, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.types = nn.Embedding(2, dim)
        self.register_buffer("position_ids", torch.arange(max_len).expand(1, -1), persistent=False)
        self.register_buffer("type_ids", torch.zeros(1, max_len, dtype=torch.long), persistent=False)
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, ids):
        b, s = ids.shape
        x = self.words(ids) + self.positions(self.position_ids[:, :s])
        x = self.norm(x + self.types(self.type_ids[:, :s].expand(b, s)))
        mask = torch.ones(b, 1, s, s, dtype=torch.bool)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(b, s, -1)) + x


class OneHotPositions(nn.Module):
    """timm Gemma 4 ViT's patch positions: a 2-D position table read by
    `one_hot(pos, C).permute(...).float() @ table` (a one-hot far larger than the result),
    rotary angles computed under `torch.no_grad()` (a `wrap_with_set_grad_enabled` region:
    a matmul of two tables expanded over the batch), and clamps by scalar buffers."""

    def __init__(self, dim=8, classes=4096):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 8, 8)
        self.table = nn.Parameter(torch.randn(2, classes, dim) * 0.1)
        self.register_buffer("inv_freq", torch.rand(dim // 4))
        self.register_buffer("low", torch.tensor(-0.5))
        self.register_buffer("high", torch.tensor(0.75))
        self.head = nn.Linear(dim, 10)
        self.classes = classes

    def forward(self, x):
        x = self.stem(x)
        b, c, h, w = x.shape
        ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        pos = torch.stack([ys.flatten(), xs.flatten()], -1).unsqueeze(0).expand(b, -1, -1)
        hot = nn.functional.one_hot(pos.clamp(min=0), self.classes).permute(0, 2, 1, 3).float()
        tokens = x.flatten(2).transpose(1, 2) + (hot @ self.table).sum(1)
        with torch.no_grad():
            freq = self.inv_freq[None, :, None].float().expand(b, -1, 1)
            angles = (freq @ pos[:, None, :, 0].float()).transpose(1, 2)
        rotary = torch.cat([angles.cos(), angles.sin()], -1).repeat(1, 1, 2)
        tokens = torch.clamp(tokens * rotary, self.low, self.high)
        return self.head(tokens.mean(1))


def randomise_bn(model, seed):
    """Non-trivial BatchNorm statistics, so folding BN into the conv before it is tested."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
    return model


def _builder(cls):
    def build(seed=0):
        torch.manual_seed(seed)
        return randomise_bn(cls(), seed).eval()
    return build


IMAGE = (Input("input", (3, 32, 32)),)
PATTERNS = {
    "crnn_bilstm": (_builder(Crnn), (Input("input", (1, 16, 40)),)),
    "gru_tagger": (_builder(GruTagger), (Input("input", (12,), high=VOCAB),)),
    "yolov5_head": (_builder(YoloHead), (Input("input", (3, 64, 64)),)),
    "selections": (_builder(Selections), (Input("input", (3, 8, 8)),)),
    "embedding_bag": (_builder(EmbeddingBagOfWords), (Input("input", (9,), high=VOCAB),)),
    "convnext_block": (_builder(ConvNextBlock), IMAGE),
    "squeeze_excite_block": (_builder(SqueezeExcite), IMAGE),
    "vit_block": (_builder(VitBlock), IMAGE),
    "star_block": (_builder(StarBlock), IMAGE),
    "dla_tree": (_builder(DlaTree), IMAGE),
    "shifted_windows": (_builder(ShiftedWindows), IMAGE),
    "fourier_positions": (_builder(FourierPositions), IMAGE),
    "unfold_einsum": (_builder(UnfoldEinsum), IMAGE),
    "filled_table": (_builder(FilledTable), IMAGE),
    "autocast_off_attention": (_builder(AutocastOffAttention), IMAGE),
    "one_hot_positions": (_builder(OneHotPositions), IMAGE),
    "dynamic_sequence": (_builder(DynamicSequence),
                         (Input("input", (12,), high=VOCAB, axes=(Axis(1, "seq", alt=20, max=32),)),)),
}
