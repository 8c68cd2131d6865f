"""Shared by the `.pt2` model scripts: non-trivial BatchNorm statistics and the export
itself (real `torch.export.export` + `torch.export.save`, no decompositions run)."""
import torch


def randomise_bn(model, seed):
    """Random running statistics and affine parameters for every BatchNorm2d, so that
    folding BN into the Conv before it is really tested (as test_onnx.py's build())."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=gen) * 0.05)


def calibrate(model, chw, seed, images=8, scale_head=True):
    """BatchNorm statistics measured on random images (one train-mode pass), then (with
    `scale_head`) the last Linear/Conv2d scaled so the outputs have unit spread. Random-init
    torchvision models otherwise drift to outputs that barely depend on the input, which
    would make parity vacuous. The layer scaled is the last one applied in every torchvision
    classifier (only ReLU, pooling or flattening follow it, which commute with a positive
    scale); models with several heads keep theirs. Returns the model in eval mode."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.reset_running_stats()
                m.momentum = None
        model.train()(torch.randn(images, *chw, generator=gen))
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                # A channel that barely varies (a dead ReLU upstream) would be scaled by
                # ~1/sqrt(eps): floor the variances so rounding is not amplified 300 times.
                m.running_var.clamp_(min=0.05 * float(m.running_var.mean()))
        model.eval()
        if not scale_head:
            return model
        out = model(torch.randn(4, *chw, generator=gen))
        spread = torch.stack([o.std() for o in flat(out)]).mean()
        last = [m for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]
        last[-1].weight.div_(spread)
        if last[-1].bias is not None:
            last[-1].bias.div_(spread)
    return model.eval()


def flat(out):
    """A model's result as a list of tensors (a dict's values in order, a tuple's items)."""
    if isinstance(out, dict):
        return list(out.values())
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def export_pt2(model, chw, dynamic, path, example_batch=2):
    """`torch.export.export` of `model` (eval mode) on a batch of `example_batch`, with the
    batch declared dynamic (`Dim("batch")`) or traced in, saved to `path`."""
    example = (torch.randn(example_batch, *chw, generator=torch.Generator().manual_seed(0)),)
    # By position: torchvision names the input `x`, LR-ASPP `input`.
    shapes = ({0: torch.export.Dim("batch")},) if dynamic else None
    program = torch.export.export(model.eval(), example, dynamic_shapes=shapes)
    torch.export.save(program, str(path))
    return program


def cli(build, chw):
    """`python SCRIPT.py OUT.pt2 [--static] [--seed N]`: build, export, save."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--static", action="store_true", help="no dynamic batch declared")
    parser.add_argument("--seed", type=int, default=0)
    args, rest = parser.parse_known_args()
    model = build(*rest, seed=args.seed) if rest else build(seed=args.seed)
    export_pt2(model, chw, not args.static, args.out)
