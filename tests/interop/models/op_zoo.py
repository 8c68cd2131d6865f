#!/usr/bin/env python3
"""Op zoo models for the `.pt2` and TorchScript interop tests: small CNNs that each run
many of the element-wise, activation, reduction, padding, normalisation and constant ops
the exporter lowers, so that every one is checked against torch eager.

`Elementwise`: exp, log, sqrt, rsqrt, pow by a scalar, neg, abs, reciprocal, clamp
(both bounds, min only, max only), maximum/minimum, rsub, scalar add/sub/mul/div, elu,
leaky_relu, tanh-approximated gelu, softplus, relu6, prelu, mish, log_softmax, and
constants built by `torch.arange` / `torch.full` folded into initializers.

`Reductions`: constant, reflection and replication padding, group_norm, instance_norm,
sum, amax, amin, var and std, mean.

`Indexing`: strided slices, narrow, index_select by a folded `arange` index, and
`zeros`/`ones` constants.

`Overloads` (`.pt2` only: the tracer cannot store its tensor literal): the aten overloads
torch.export writes only for explicit calls (`add.Scalar`, `rsub.Tensor`,
`scalar_tensor`, `var.correction`, `_softmax`, in-place `elu_`…), and a `torch.tensor`
literal (`lift_fresh_copy`, `detach_`, then a `view` of the constant), and indexing by
list literals (`x[:, [3, 0, 1, 1]]`: `index.Tensor` with a constant index), all folded or
lowered.
"""
import torch
import torch.nn.functional as F
from torch import nn

from common import randomise_bn

CHW = (3, 16, 16)


class Elementwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.prelu = nn.PReLU(8)
        self.conv2 = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = self.bn(self.conv(x))
        a = torch.exp(torch.clamp(y, -4.0, 4.0)) * 0.1
        b = torch.log(y.abs() + 1.0) + torch.sqrt(y * y + 1.0) - torch.rsqrt(y.pow(2) + 2.0)
        c = torch.reciprocal(torch.clamp_min(y, 0.5)) - (-y)
        d = torch.maximum(F.elu(y), F.leaky_relu(y, 0.1)) + torch.minimum(y, torch.clamp_max(y, 0.3))
        e = F.gelu(y, approximate="tanh") + F.softplus(y) + F.relu6(y * 3.0) + F.mish(y)
        f = self.prelu(y) / 2.0 + (1.0 - y)
        z = self.conv2(a + b + c + d + e + f)
        # Constants folded: a per-column ramp and a filled tensor.
        ramp = torch.arange(16, dtype=torch.float32) / 16.0
        z = z * ramp + torch.full((1, 16), 0.25)
        return F.log_softmax(z.flatten(2), dim=2).view(-1, 8, 16, 16)


class Reductions(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.conv2 = nn.Conv2d(8, 8, 3)

    def forward(self, x):
        y = self.gn(self.conv(F.pad(x, (1, 1, 1, 1), value=0.5)))
        y = self.inorm(self.conv2(F.pad(y, (2, 0, 1, 1), mode="reflect")))
        y = F.pad(y, (1, 1, 1, 1), mode="replicate")
        s = y.sum(dim=(2, 3))
        hi = y.amax(dim=(2, 3))
        lo = y.amin(dim=3).mean(dim=2)
        top = y.amax(dim=1).mean(dim=(1, 2)).view(-1, 1)
        v = y.var(dim=(2, 3))
        sd = y.std(dim=1).mean(dim=(1, 2), keepdim=True).view(-1, 1)
        return torch.cat((s * 0.01, hi, lo, top, v, sd), dim=1)


class Indexing(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        a = y[:, :, ::2, 1::3]
        b = y.narrow(2, 4, 8)[:, 1:, :, ::2]
        c = torch.index_select(y, 1, torch.arange(7, -1, -2))
        c = torch.index_select(c, 3, torch.arange(2, 14, 3))
        bias = torch.zeros(4, 1) + torch.ones(4) * 0.5
        return torch.cat((a.flatten(1), b.flatten(1), (c[:, :, 3:7] + bias).flatten(1)), 1)


class Overloads(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        aten = torch.ops.aten
        y = self.conv(x)
        a = aten.add.Scalar(y, 1.5) + aten.mul.Scalar(y, 0.5) - aten.sub.Scalar(y, 2)
        a = a + aten.div.Scalar(y, 4.0)
        b = aten.rsub.Tensor(y, aten.scalar_tensor(3.0))
        b = b + torch.tensor([1.0, 2.0, 3.0, 4.0]).view(4, 1, 1)
        v = aten.var.correction(y, [2, 3], correction=0, keepdim=True)
        v = v + aten.std.correction(y, [1], keepdim=True)
        c = aten._softmax(y, 1, False) + aten._log_softmax(y, 3, False)
        d = F.softplus(y, beta=2.0) + aten.elu_(y.clone()) + aten.leaky_relu_(y.clone(), 0.2)
        # Indexing by list literals (`index.Tensor` with one constant index, on C and on H).
        e = y[:, [3, 0, 1, 1]] + y[:, :, [15, 14, *range(14)]]
        return a + b + v + c + d + e


def build(name, seed=0):
    torch.manual_seed(seed)
    models = {"elementwise": Elementwise, "reductions": Reductions, "indexing": Indexing,
              "overloads": Overloads}
    model = models[name]()
    randomise_bn(model, seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.GroupNorm, nn.InstanceNorm2d)):
                m.weight.copy_(torch.rand(m.weight.shape) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape) * 0.1)
            if isinstance(m, nn.PReLU):
                m.weight.copy_(torch.rand(m.weight.shape) * 0.5)
    return model.eval()
