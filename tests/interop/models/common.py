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


def export_pt2(model, chw, dynamic, path, example_batch=2):
    """`torch.export.export` of `model` (eval mode) on a batch of `example_batch`, with the
    batch declared dynamic (`Dim("batch")`) or traced in, saved to `path`."""
    example = (torch.randn(example_batch, *chw, generator=torch.Generator().manual_seed(0)),)
    shapes = {"x": {0: torch.export.Dim("batch")}} if dynamic else None
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
