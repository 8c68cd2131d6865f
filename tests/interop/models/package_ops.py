"""Small modules holding the ops of the package corpus's models (test_package_ops.py):
kornia's `atan2`, `isfinite`, `clamp_` and `lerp`, VNet's `repeat` of an activation,
DeBERTa's relative-position keys and indices tiled over the batch and gathered from the
scores, MONAI's zero-width replicate pad, UPerNet's adaptive pooling with uneven windows,
UNETR's einsum of two activations and SwinUNETR's mask table filled in place."""
import torch, torch.nn as nn, torch.nn.functional as F
D = 16
class Atan2(nn.Module):
    def forward(self, y, x): return torch.atan2(y, x)
class IsFinite(nn.Module):
    def forward(self, x): return torch.where(torch.isfinite(x), x, -1.0)
class ClampInPlace(nn.Module):  # kornia adjust_brightness
    def forward(self, x): return (x + 0.2).clamp_(0.0, 1.0)
class Lerp(nn.Module):  # kornia unsharp_mask: both branches of torch's kernel
    def __init__(self):
        super().__init__(); self.end = nn.Parameter(torch.linspace(-1, 1, D))
    def forward(self, x): return torch.lerp(x, x * 3, 2.0) + torch.lerp(x, self.end, 0.3)
class Repeat(nn.Module):  # VNet: x.repeat(1, 16, 1, 1, 1); a leading new dimension too
    def forward(self, x):
        x = x.reshape(-1, 2, 2, 4)
        return x.repeat(1, 3, 1, 2) + 1, x.repeat(1, 1, 2, 1, 1)
class TiledOverBatch(nn.Module):  # DeBERTa's disentangled attention
    def __init__(self):
        super().__init__()
        self.key = nn.Parameter(torch.randn(2, 4, 4))
        self.register_buffer("pos", torch.randint(0, 4, (1, 4, 4)))
    def forward(self, x):
        q = torch.cat([x, x * 2], 1).reshape(-1, 4, 4)  # [2·N, 4, 4]
        k = self.key.repeat(q.size(0) // 2, 1, 1)
        scores = torch.bmm(q, k.transpose(-1, -2))
        idx = self.pos.squeeze(0).expand(q.size(0), 4, 4)
        return torch.gather(scores, -1, idx).reshape(-1, 2, 4, 4)
class ZeroPad3d(nn.Module):  # MONAI BasicUNet's replicate pad to the size it has
    def forward(self, x):
        return F.pad(x.reshape(-1, 2, 2, 2, 2), [0, 0, 0, 0, 0, 0], mode="replicate") * 2
class UnevenPool(nn.Module):  # UPerNet's pyramid pooling of a small map
    def forward(self, x):
        m = x.reshape(-1, 1, 4, 4)
        return F.adaptive_avg_pool2d(m, 3).flatten(1), F.adaptive_avg_pool2d(m[:, :, :2, :3], (3, 2)).flatten(1)
class EinsumActivations(nn.Module):  # UNETR's attention
    def forward(self, x):
        q = x.reshape(-1, 2, 2, 4)
        att = torch.einsum("blxd,blyd->blxy", q, q * 2).softmax(-1)
        return torch.einsum("bhxy,bhyd->bhxd", att, q)
class FillMask(nn.Module):  # SwinUNETR's window mask: slices of a zeros table set in turn
    def forward(self, x):
        m = torch.zeros(1, D)
        for k, s in enumerate((slice(0, 5), slice(5, 9), slice(9, None))):
            m[:, s] = k
        return x + m
