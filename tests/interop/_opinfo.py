"""torch's own op database (`op_db`, the OpInfo suite) through `.pt2` -> `ckpt to-onnx`.

Shared by scripts/opinfo-sweep (the whole database, its table in docs/opinfo.md) and
test_opinfo.py (a fast subset in the interop tier), so both judge a sample the same way.

The populations (`POPULATIONS`): every op of `op_db` that supports float32 on the CPU, and
of its float32 samples (`op.sample_inputs("cpu", torch.float32)`, drawn after
`torch.manual_seed(0)`) those whose input is a float32 tensor, whose op is deterministic
and returns a tensor or a flat tuple or list of tensors, in two populations:

- `INPUT_ONLY`: the input is the only tensor argument (the other arguments become
  constants of the module);
- `CONSTANT_ARGUMENTS`: the op takes other tensors too, each an argument or keyword
  argument of its own or an entry of a flat list or tuple (an index tuple), and each a CPU
  tensor of float32, int64, int32 or bool (`CONSTANT_DTYPES`; a sample whose other
  tensors have another dtype or device, or sit deeper, is in neither population). Those
  tensors become buffers of the module (`register_buffer`), which torch.export records as
  constants of the program, as it records a user's weights, masks and index tables; the
  sample's input stays the one graph input `x`.

Of an op with more than `MAX_SAMPLES` samples in a population, that many evenly spaced
ones. Each sample is a module `forward(x) = op(x, *args, **kwargs)` (a named
result such as topk's returned as the plain tuple of its values, which torch.export.save
can serialize),
exported with `torch.export.export` (a dynamic `Dim("batch")` on axis 0 when the input
has rank >= 2; when torch cannot keep that axis dynamic for this op, at a fixed batch),
saved, and converted with `ckpt to-onnx`. A sample exported at a fixed batch (no dynamic
dimension: a 0-d or 1-D input, or an op torch will not keep dynamic) is what a user with a
static program has, so it is converted with `--batch static`: every size as the program
records it, no axis the batch, every dimension of the file fixed.

A sample's `verdict` is one of `VERDICTS`:

- `ok`: the file passes `onnx.checker.check_model(full_check=True)`, imports opset 11
  only, is ATC-clean (no `BANNED_OPS`, every op in `atc_opset11_ops.txt`), and
  onnxruntime returns torch eager's outputs on the sample's input: the same number of
  outputs, each with torch's shape, dtype and values (max |diff| <= 1e-4 * max(1,
  max |ref|), NaN where torch has NaN). When the file's batch is a `dim_param` (with a
  dynamic batch), also on an input of another batch size made of the sample's rows. The
  values of the `empty` family (`empty`, `empty_like`, `new_empty`, `new_empty_strided`,
  `empty_strided`, `empty_permuted`: every op whose name holds `empty`, by
  `unspecified_values`) are whatever memory holds, so of those only the shapes and dtypes
  are compared, in the file and in the determinism and mixing checks;
- `refused`: ckpt exited 1 with one error line (`detail`: that line);
- `wrong`: anything else ckpt did: a file that differs from torch in any way above, an
  invalid or non-ATC-clean file, a crash or a timeout (`detail` says which);
- `not-exported`: torch.export itself cannot export the module (not ckpt's business).

Orthogonal to the verdict, `mixes` says whether the op mixes values along the first axis
on this sample (`None` for a 0-d or empty input, where no value can show it; a single row
is judged with a random second row after it): the input's rows are redrawn one at
a time (the buffers of a constant-argument sample stay as they are) (to random values, zeros, a value above all and one below; from the input and from zeros)
and an output element that changes for two different rows depends on both. An op
also mixes the first axis when it does not treat the rows alike, by their place: moving
each row one place on (a cyclic shift), or swapping the first two, must move the rows of
some output axis the same way (one row per input row, or a block of rows each, as a flatten makes), or leave an
output unchanged (a value the same for every sample); a diagonal across the first axis,
`tril` over it, a flip or a roll along it does neither. Such an op cannot be exported with a
dynamic batch without mixing samples, so ckpt refuses it there; these samples are counted
apart from those that keep the batch independent. In a static export no axis is the
batch, so nothing mixes samples and such ops convert.
"""
import os
import re
import subprocess
import sys
import tempfile
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from _coverage import BANNED_OPS, OPSET, atc_ops

VERDICTS = ("ok", "refused", "wrong", "not-exported")
TOLERANCE = 1e-4
# Samples per op: some ops have over a thousand (every pooling parameter combination); the
# first of every evenly spaced stretch keeps their variety at a bounded cost.
MAX_SAMPLES = 8
DETAIL_CHARS = 400
INPUT_ONLY = "input only"
CONSTANT_ARGUMENTS = "constant arguments"
POPULATIONS = (INPUT_ONLY, CONSTANT_ARGUMENTS)
# The element types a constant-argument sample's other tensors may have: those ckpt exports.
CONSTANT_DTYPES = (torch.float32, torch.int64, torch.int32, torch.bool)


@dataclass
class Result:
    """One sample's outcome."""
    op: str
    sample: int
    population: str  # one of `POPULATIONS`
    shape: list
    args: str
    dynamic: bool
    mixes: object  # True, False, or None (a 0-d or empty input, or one row the op cannot double)
    verdict: str
    detail: str = ""

    def as_dict(self):
        return asdict(self)


class Skip(Exception):
    """The sample is outside the population (`reason`)."""


def load_op_db():
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def op_key(op):
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _tensors(obj):
    leaves, _ = torch.utils._pytree.tree_flatten(obj)
    return [x for x in leaves if isinstance(x, torch.Tensor)]


def population_of(s):
    """The population (`POPULATIONS`) of sample `s` whose input is a float32 tensor, or None
    when it is in neither (other tensors nested deeper than a flat list or tuple, or of a
    dtype outside `CONSTANT_DTYPES`, or off the CPU)."""
    others = _tensors((s.args, s.kwargs))
    if not others:
        return INPUT_ONLY
    for value in [*s.args, *s.kwargs.values()]:
        if isinstance(value, (list, tuple)) and any(
                isinstance(v, (list, tuple, dict)) and _tensors(v) for v in value):
            return None
        if isinstance(value, dict) and _tensors(value):
            return None
    if all(t.device.type == "cpu" and t.dtype in CONSTANT_DTYPES for t in others):
        return CONSTANT_ARGUMENTS
    return None


def samples(op, population=INPUT_ONLY):
    """The float32 samples of `op` in `population`, as (index, sample), deterministic; the
    index is the sample's place among all of `op`'s drawn samples."""
    if not op.supports_dtype(torch.float32, "cpu"):
        return []
    torch.manual_seed(0)
    try:
        drawn = list(op.sample_inputs("cpu", torch.float32, requires_grad=False))
    except Exception:  # noqa: BLE001 - an op whose samples cannot be drawn has none
        return []
    return [(index, s) for index, s in enumerate(drawn)
            if isinstance(s.input, torch.Tensor) and s.input.dtype == torch.float32
            and population_of(s) == population]


class _Buffer:
    """Where an `OpModule` argument was a tensor: the name of the buffer that holds it."""

    def __init__(self, name):
        self.name = name


class OpModule(torch.nn.Module):
    """`forward(x) = op(x, *args, **kwargs)`: the other tensor arguments (each an argument
    of its own or an entry of a flat list or tuple) are buffers, which torch.export records
    as constants of the program; the other arguments are Python constants."""

    def __init__(self, fn, args=(), kwargs=None):
        super().__init__()
        self.fn = fn
        self.args = tuple(self._hold(a) for a in args)
        self.kwargs = {k: self._hold(v) for k, v in (kwargs or {}).items()}

    def _hold(self, value):
        if isinstance(value, torch.Tensor):
            name = f"c{len(self._buffers)}"
            self.register_buffer(name, value.detach().clone())
            return _Buffer(name)
        if isinstance(value, (list, tuple)) and _tensors(value):
            held = [self._hold(v) for v in value]
            return held if isinstance(value, list) else tuple(held)
        return value

    def _take(self, value):
        if isinstance(value, _Buffer):
            return getattr(self, value.name)
        if isinstance(value, (list, tuple)) and any(isinstance(v, _Buffer) for v in value):
            taken = [self._take(v) for v in value]
            return taken if isinstance(value, list) else tuple(taken)
        return value

    def forward(self, x):
        out = self.fn(x, *(self._take(a) for a in self.args),
                      **{k: self._take(v) for k, v in self.kwargs.items()})
        # torch.export.save has no serialization for torch.return_types (topk's, sort's,
        # max.dim's named results): a user's module returns their values as a plain tuple.
        return tuple(out) if isinstance(out, tuple) else out


def saved_program(fn, x, archive, dynamic=True):
    """`OpModule(fn)` exported by `torch.export` at input `x` (with a dynamic batch on axis
    0 when `dynamic`) and saved to `archive`; returns the module."""
    module = OpModule(fn).eval()
    shapes = {"x": {0: torch.export.Dim("batch")}} if dynamic else None
    torch.export.save(torch.export.export(module, (x,), dynamic_shapes=shapes), str(archive))
    return module


def flat_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, torch.Tensor) for o in out):
        return list(out)
    raise Skip(f"returns {type(out).__name__}, not tensors")


def _describe(value):
    """An argument as the doc shows it: a tensor by its dtype and sizes, not its values."""
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    if isinstance(value, (list, tuple)) and _tensors(value):
        inner = ", ".join(_describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def describe_args(s):
    text = ", ".join([*(_describe(a) for a in s.args),
                      *(f"{k}={_describe(v)}" for k, v in s.kwargs.items())])
    return text if len(text) <= 80 else text[:77] + "..."


def unspecified_values(key):
    """Whether the op `key` leaves its result's values unspecified (whatever memory holds):
    the `empty` family, by name; only its shapes and dtypes are compared."""
    return "empty" in key


def shapes_only(fn):
    """`fn` with every output's values made zeros: what an op of unspecified values is
    judged by (its shapes and dtypes)."""
    return lambda x: [torch.zeros_like(o) for o in flat_outputs(fn(x))]


def same(ref, got, values=True):
    """Whether onnxruntime's `got` is torch's `ref`: shape, dtype, and (when `values`)
    values, NaN as NaN."""
    ref_np = ref.detach().numpy()
    if tuple(got.shape) != tuple(ref_np.shape):
        return f"shape {tuple(got.shape)}, torch {tuple(ref_np.shape)}"
    if got.dtype != ref_np.dtype:
        return f"dtype {got.dtype}, torch {ref_np.dtype}"
    if ref_np.size == 0 or not values:
        return None
    if ref_np.dtype == np.bool_ or np.issubdtype(ref_np.dtype, np.integer):
        return None if np.array_equal(got, ref_np) else "values differ"
    ref64, got64 = ref_np.astype(np.float64), got.astype(np.float64)
    if not np.array_equal(np.isnan(ref64), np.isnan(got64)):
        return "NaN where torch has none (or the reverse)"
    finite = ~np.isnan(ref64)
    if not np.array_equal(np.isinf(ref64[finite]), np.isinf(got64[finite])) or not \
            np.array_equal(ref64[np.isinf(ref64)], got64[np.isinf(ref64)]):
        return "infinities differ"
    mask = np.isfinite(ref64)
    if not mask.any():
        return None
    diff = np.abs(ref64[mask] - got64[mask]).max()
    scale = max(1.0, float(np.abs(ref64[mask]).max()))
    return None if diff <= TOLERANCE * scale else f"max|diff| {diff:.3g} (max|ref| {scale:.3g})"


def deterministic(fn, x):
    a = flat_outputs(fn(x.clone()))
    b = flat_outputs(fn(x.clone()))
    return len(a) == len(b) and all(
        p.shape == q.shape and torch.equal(torch.nan_to_num(p), torch.nan_to_num(q))
        for p, q in zip(a, b))


def mixes_batch(fn, x):
    """Whether some output element changes when two different rows of `x` are redrawn
    (each alone); None when `x` is a scalar, holds no value or has no row. A single row
    is judged on two: the input and a random row after it, when the op takes that (a
    batch norm in training mode mixes its rows whatever their number). A saturated
    result hides one kind of redraw (`any` of a random input stays true, a whole-tensor
    median keeps its rank when a row is redrawn around it), so rows are redrawn four
    ways (random, zero, above and below every value) from the input and from all zeros."""
    if x.dim() < 1 or x.numel() == 0:
        return None
    gen = torch.Generator().manual_seed(7)
    scale = float(x.abs().max()) + 1
    if x.shape[0] == 1:
        two = torch.cat([x, torch.randn(x.shape, generator=gen) * scale])
        try:
            flat_outputs(fn(two.clone()))
        except Exception:  # noqa: BLE001 - the first axis takes one row only
            return None
        x = two
    draws = (lambda shape: torch.randn(shape, generator=gen) * scale,
             lambda shape: torch.zeros(shape),
             lambda shape: torch.full(shape, scale),
             lambda shape: torch.full(shape, -scale))
    mixes = rows_interact(fn, x, draws[0])
    if mixes is None:
        return None
    for start, draw in [*((x, d) for d in draws[1:]), *((torch.zeros_like(x), d) for d in draws)]:
        if mixes:
            return True
        try:
            mixes = bool(rows_interact(fn, start, draw))
        except Exception:  # noqa: BLE001 - outside the op's domain: nothing to conclude
            mixes = False
    if mixes:
        return True
    base = flat_outputs(fn(x.clone()))
    rows = x.shape[0]
    # A cyclic shift tells a flip or a diagonal; a swap of two rows tells a roll (which a
    # shift commutes with).
    for order in ([(i - 1) % rows for i in range(rows)], [1, 0, *range(2, rows)]):
        order = torch.tensor(order)
        moved = flat_outputs(fn(x[order].clone()))
        if not all(follows_rows(o, b, order) for o, b in zip(moved, base)):
            return True
    return False


def rows_interact(fn, x, draw):
    """Whether redrawing two different rows of `x` (each alone, to `draw(shape)`) changes
    one output element, or one row changes the output's shape; None when no redrawn
    input is in the op's domain."""
    base = flat_outputs(fn(x.clone()))
    touched = [torch.zeros(o.shape, dtype=torch.int64) for o in base]
    for row in range(x.shape[0]):
        y = x.clone()
        y[row] = draw(y[row].shape)
        try:
            outs = flat_outputs(fn(y))
        except Exception:  # noqa: BLE001 - outside the op's domain: another row instead
            y[row] = x[(row + 1) % x.shape[0]]
            try:
                outs = flat_outputs(fn(y))
            except Exception:  # noqa: BLE001
                return None
        if [o.shape for o in outs] != [o.shape for o in base]:
            return True  # the output's shape depends on one row's values
        for t, o, b in zip(touched, outs, base):
            changed = ~((o == b) | (torch.isnan(o) & torch.isnan(b))) if o.is_floating_point() \
                else o != b
            t += changed.to(torch.int64)
    return any(bool((t > 1).any()) for t in touched)


def equal_outputs(a, b):
    """Equal up to rounding: torch's vectorized kernels round a value by its place in the
    tensor (a SIMD lane or the scalar tail), so a moved row may differ in its last bits."""
    if a.shape != b.shape:
        return False
    if a.is_floating_point():
        return torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    return torch.equal(a, b)


def follows_rows(moved, base, order):
    """Whether `moved` (the output for the input's rows reordered by `order`: new row i is
    old row `order[i]`) is `base` unchanged, or `base` with the rows of one axis reordered
    the same way: one output row per input row, or a block of rows each (batch-major, or
    batch-minor)."""
    if equal_outputs(moved, base):
        return True
    rows = len(order)
    for axis, size in enumerate(base.shape):
        if size % rows:
            continue
        block = size // rows
        for split in ((rows, block), (block, rows)):
            along = 0 if split[0] == rows else 1
            view = base.unflatten(axis, split)
            if equal_outputs(moved, view.index_select(axis + along, order).flatten(axis, axis + 1)):
                return True
    return False


def export(module, x, path):
    """Saves `module` at `x` with a dynamic batch when rank >= 2; returns whether the batch
    is dynamic. Falls back to a fixed batch when torch cannot keep axis 0 dynamic."""
    from torch.export import Dim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if x.dim() >= 2:
            try:
                program = torch.export.export(module, (x,),
                                              dynamic_shapes={"x": {0: Dim("batch")}})
                torch.export.save(program, str(path))
                return True
            except Exception:  # noqa: BLE001 - retried at a fixed batch below
                pass
        program = torch.export.export(module, (x,))
        torch.export.save(program, str(path))
        return False


def last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    return line if len(line) <= DETAIL_CHARS else line[:DETAIL_CHARS - 3] + "..."


def other_batch(x):
    """An input of another batch size made of `x`'s rows (so each row stays in the
    sample's domain)."""
    rows = x.shape[0]
    index = torch.tensor([(3 * i + 1) % rows for i in range(rows + 2)])
    return x[index].contiguous()


def check_file(path, fn, inputs, values=True):
    """Why the ONNX file at `path` is not torch's `fn` on `inputs` (its values compared
    when `values`), or None."""
    import onnx
    import onnxruntime as ort
    model = onnx.load(str(path))
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # noqa: BLE001
        return f"invalid file: {last_line(str(e))}"
    if [(o.domain, o.version) for o in model.opset_import] != [("", OPSET)]:
        return f"opset imports {[(o.domain, o.version) for o in model.opset_import]}"
    ops = {n.op_type for n in model.graph.node}
    unclean = sorted(ops & set(BANNED_OPS) | (ops - atc_ops()))
    if unclean:
        return f"not ATC-clean: {', '.join(unclean)}"
    batch_dim = model.graph.input[0].type.tensor_type.shape.dim
    if batch_dim and batch_dim[0].dim_param and len(inputs) == 1:
        # A dynamic batch: the file must hold at other batch sizes too.
        inputs = [*inputs, other_batch(inputs[0])]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - a file onnxruntime cannot load is wrong
        return f"onnxruntime cannot load the file: {last_line(str(e))}"
    name = session.get_inputs()[0].name
    for x in inputs:
        try:
            ref = flat_outputs(fn(x.clone()))
        except Exception:  # noqa: BLE001 - torch refuses this size: nothing to compare
            continue
        try:
            got = session.run(None, {name: x.numpy()})
        except Exception as e:  # noqa: BLE001
            return f"onnxruntime fails at input {tuple(x.shape)}: {last_line(str(e))}"
        if len(got) != len(ref):
            return f"{len(got)} outputs, torch {len(ref)}"
        for k, (r, g) in enumerate(zip(ref, got)):
            why = same(r, g, values)
            if why:
                return f"output {k} at input {tuple(x.shape)}: {why}"
    return None


def run_sample(ckpt, key, fn, index, s, workdir, timeout=120, population=INPUT_ONLY):
    """The `Result` of one sample of `population`; raises `Skip` for samples outside it."""
    x = s.input.detach().clone()
    module = OpModule(fn, s.args, s.kwargs).eval()
    values = not unspecified_values(key)
    fn = module.forward if values else shapes_only(module.forward)
    try:
        flat_outputs(fn(x.clone()))
        if not deterministic(fn, x):
            raise Skip("not deterministic")
    except Skip:
        raise
    except Exception as e:  # noqa: BLE001
        raise Skip(f"eager fails: {e}") from e
    try:
        mixes = mixes_batch(fn, x)
    except Skip:
        raise
    except Exception:  # noqa: BLE001 - nothing to conclude
        mixes = None
    result = Result(op=key, sample=index, population=population, shape=list(x.shape),
                    args=describe_args(s), dynamic=False, mixes=mixes, verdict="")
    archive = Path(workdir) / f"s{index}.pt2"
    out = Path(workdir) / f"s{index}.onnx"
    try:
        result.dynamic = export(module, x, archive)
    except Exception as e:  # noqa: BLE001
        result.verdict, result.detail = "not-exported", last_line(f"{type(e).__name__}: {e}")
        return result
    command = [str(ckpt), "to-onnx", str(archive), "-o", str(out)]
    if not result.dynamic:
        command += ["--batch", "static"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        result.verdict, result.detail = "wrong", f"ckpt timed out after {timeout} s"
        return result
    if proc.returncode != 0:
        lines = proc.stderr.splitlines()
        first = lines[0] if lines else ""
        if proc.returncode == 1 and first.startswith("ckpt: error: "):
            if first.endswith(":"):
                # A list of reasons follows (the ATC rules a graph breaks): the first.
                first = f"{first} {lines[1].strip()}" if len(lines) > 1 else first
            result.verdict = "refused"
            result.detail = last_line(first.replace(f"ckpt: error: {archive}: ", "", 1))
        else:
            result.verdict = "wrong"
            result.detail = f"ckpt exit {proc.returncode}: {last_line(proc.stderr)}"
        return result
    why = check_file(out, module.forward, [x], values)
    result.verdict, result.detail = ("wrong", why) if why else ("ok", "")
    return result


def spread(items, most):
    """At most `most` of `items`, evenly spaced from the first (all when there are few)."""
    if len(items) <= most:
        return items
    return [items[k * len(items) // most] for k in range(most)]


def run_op(ckpt, op, only=None, timeout=120, most=MAX_SAMPLES, population=INPUT_ONLY):
    """The samples of `op` in `population` (at most `most`, evenly spaced; or those whose
    index is in `only`): the `Result`s, and how many drawn samples were outside the
    population."""
    key = op_key(op)
    results, skipped = [], 0
    drawn = samples(op, population)
    if only is None:
        drawn = spread(drawn, most)
    with tempfile.TemporaryDirectory(prefix="ckpt-opinfo-") as workdir:
        for index, s in drawn:
            if only is not None and index not in only:
                continue
            try:
                results.append(run_sample(ckpt, key, op.op, index, s, workdir, timeout,
                                          population))
            except Skip:
                skipped += 1
            except Exception as e:  # noqa: BLE001 - the harness itself: say so, go on
                print(f"opinfo: {key} #{index} ({population}): harness error {type(e).__name__}: {e}",
                      file=sys.stderr)
                skipped += 1
            for f in Path(workdir).iterdir():
                f.unlink()
    return results, skipped


# ---------------------------------------------------------------- reasons, for the table
_NUMBERS = re.compile(r"\b\d+\b")
_QUOTED = re.compile(r"`[^`]*`")
_BRACKETS = re.compile(r"\[[^\]]*\]")


def reason_group(detail):
    """A refusal's reason with the node and the sizes left out, so that samples refused for
    the same reason group together: `aten.foo.default: this op is not supported ...`."""
    text = detail
    # ckpt locates errors as "node `name` (#N, torch.ops.aten.op.overload[, module]): reason".
    m = re.match(r"node `[^`]*` \(#\d+, (?:torch\.ops\.)?([\w.]+)[^)]*\): (.*)$", text)
    if m:
        text = f"{m.group(1)}: {m.group(2)}"
    text = _QUOTED.sub("`…`", text)
    text = _BRACKETS.sub("[…]", text)
    text = _NUMBERS.sub("N", text)
    return text if len(text) <= 200 else text[:197] + "..."


def ckpt_binary(root):
    p = Path(os.environ.get("CKPT_BIN", root / "target/release/ckpt"))
    return p if p.is_absolute() else root / p
