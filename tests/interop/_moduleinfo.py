"""torch's own nn module database (`module_db`, the ModuleInfo suite) through `.pt2` ->
`ckpt to-onnx`: users' own models in miniature, with torch's constructor arguments.

Shared by scripts/moduleinfo-sweep (the whole database, its table in docs/modules.md) and
test_moduleinfo.py (a fast subset in the interop tier). Every module of `module_db` that
supports float32, and of its samples for evaluation
(`module_inputs_func(info, "cpu", torch.float32, requires_grad=False, training=False)`,
drawn after `torch.manual_seed(0)`) those whose first forward argument is a float32
tensor: the module is built from the sample's constructor arguments (a lazy module run
once to make its parameters), seeded by `torch.manual_seed(0)`, put in eval mode, and
called as `forward(x, *args, **kwargs)`, its other tensor arguments (a second input, a
target, a mask) held as buffers, which torch.export records as constants of the program,
as `_opinfo.CONSTANT_ARGUMENTS` holds an op's; its parameters stay parameters, so the
`.pt2` stores them as a user's trained weights. Export, conversion and the verdict are
`_opinfo.run_sample`'s, so a module is judged exactly as an op sample: `ok`, `refused`,
`wrong` (there must be none), `not-exported`, and whether it mixes the first axis.
"""
import tempfile
from pathlib import Path

import torch

import _opinfo

POPULATION = "nn modules"


def load_module_db():
    from torch.testing._internal.common_modules import module_db
    return module_db


def _flat(value):
    """Whether `value` is no tensor, a tensor of a dtype the export takes, or a flat list
    or tuple of those."""
    if isinstance(value, torch.Tensor):
        return value.device.type == "cpu" and value.dtype in _opinfo.CONSTANT_DTYPES
    if isinstance(value, (list, tuple)):
        return all(not isinstance(v, (list, tuple, dict)) and _flat(v) for v in value)
    return not isinstance(value, dict) or not _opinfo._tensors(value)


def samples(info):
    """The samples of module `info` whose first forward argument is a float32 tensor and
    whose other arguments are numbers or flat tensors `_opinfo.CONSTANT_DTYPES` takes,
    as (index, sample), deterministic."""
    if torch.float32 not in info.dtypes:
        return []
    torch.manual_seed(0)
    try:
        drawn = list(info.module_inputs_func(info, device="cpu", dtype=torch.float32,
                                             requires_grad=False, training=False))
    except Exception:  # noqa: BLE001 - a module whose samples cannot be drawn has none
        return []
    kept = []
    for index, s in enumerate(drawn):
        forward = s.forward_input
        if forward is None or not forward.args:
            continue
        x, *rest = forward.args
        if not (isinstance(x, torch.Tensor) and x.dtype == torch.float32):
            continue
        if all(_flat(v) for v in [*rest, *forward.kwargs.values()]):
            kept.append((index, s))
    return kept


class _Sample:
    """A module sample seen as an op sample (`_opinfo.run_sample`'s `input`, `args`,
    `kwargs`)."""

    def __init__(self, s):
        self.input = s.forward_input.args[0]
        self.args = tuple(s.forward_input.args[1:])
        self.kwargs = dict(s.forward_input.kwargs)


def built(info, s):
    """Sample `s`'s module: constructed from its arguments with torch's generator at seed
    0, a lazy one run once on the sample, in eval mode."""
    torch.manual_seed(0)
    ctor = s.constructor_input
    module = info.module_cls(*ctor.args, **ctor.kwargs).to(torch.float32)
    if info.is_lazy:
        with torch.no_grad():
            module(*s.forward_input.args, **s.forward_input.kwargs)
    return module.eval()


def run_module(ckpt, info, only=None, timeout=120, most=_opinfo.MAX_SAMPLES):
    """The samples of module `info` (at most `most`, evenly spaced; or those whose index
    is in `only`): the `_opinfo.Result`s, and how many drawn samples were left out."""
    results, skipped = [], 0
    drawn = samples(info)
    if only is None:
        drawn = _opinfo.spread(drawn, most)
    with tempfile.TemporaryDirectory(prefix="ckpt-moduleinfo-") as workdir:
        for index, s in drawn:
            if only is not None and index not in only:
                continue
            try:
                module = built(info, s)
                results.append(_opinfo.run_sample(ckpt, info.name, module, index, _Sample(s),
                                                  workdir, timeout, POPULATION))
            except _opinfo.Skip:
                skipped += 1
            except Exception as e:  # noqa: BLE001 - the module cannot be built: left out
                print(f"moduleinfo: {info.name} #{index}: left out: {type(e).__name__}: {e}")
                skipped += 1
            for f in Path(workdir).iterdir():
                f.unlink()
    return results, skipped
