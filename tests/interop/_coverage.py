"""One model through one ONNX converter, judged the way the coverage sweep judges it.

Shared by scripts/sweep-onnx (the real-architecture corpus) and test_coverage_fast.py (its
CI subset), so both apply exactly the same checks. Three converters (`ROUTES`):

- `pt2`: `torch.export.export` with a dynamic batch `Dim` (plus any declared extra dynamic
  axes), `torch.export.save`, then `ckpt to-onnx`;
- `trace`: `torch.jit.trace` under no_grad, `torch.jit.save`, then `ckpt to-onnx`;
- `torch`: torch's own exporter, `torch.onnx.export(..., opset_version=11, dynamo=False,
  dynamic_axes=...)`, the baseline.

A conversion's `Verdict` is one of `CATEGORIES`:

- `ok`: `onnx.checker.check_model(full_check=True)` passes, one opset import at 11, every
  input's batch (and declared dynamic axes) a named `dim_param`, onnxruntime matches torch
  eager at batch 1 and 3 (max |diff| <= 1e-4 * max(1, max |ref|) for every output, compared
  in order; an output beyond that is still right when it is no farther from the model's
  float64 result than torch's own float32 result is, `beyond_torch_error`, which
  `Verdict.refereed` records), and ATC-clean: no `BANNED_OPS`, every op in CANN's opset-11 parser table
  (`atc_opset11_ops.txt`), and the device reading (`ckpt atc-check --device-reading`: the
  file with each node replaced by what ATC's parser turns it into, docs/atc.md) matches
  torch in onnxruntime too (`device_parity`; not run when no node reads differently,
  which `Verdict.device` says);
- `not-atc-clean`: all of that but the ATC rule (or the device reading's parity);
- `wrong`: a valid file whose values differ from torch, or that onnxruntime cannot run at
  some batch (a batch baked in);
- `failed`: the conversion raised, timed out, or wrote an invalid file; `detail` holds the
  first error line, shortened.
"""
import json
import os
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ATC_OPS_FILE = HERE / "atc_opset11_ops.txt"
OPSET = 11
BATCH_NAME = "batch"
EXAMPLE_BATCH = 2
CHECK_BATCHES = (1, 3)
# Ops ATC cannot compile into static dynamic-batch profiles, allowed plugin or not.
BANNED_OPS = ("Identity", "Shape", "ConstantOfShape", "Expand", "NonZero", "Loop", "If")
ROUTES = ("pt2", "trace", "torch")
ROUTE_TITLES = {"pt2": "ckpt .pt2", "trace": "ckpt trace", "torch": "torch.onnx (opset 11)"}
CATEGORIES = ("ok", "not-atc-clean", "wrong", "failed")
CATEGORY_TITLES = {"ok": "ok", "not-atc-clean": "valid, not ATC-clean",
                   "wrong": "wrong values", "failed": "failed"}
DETAIL_CHARS = 300


def atc_ops():
    """The op types of `atc_opset11_ops.txt` (comments and blank lines skipped)."""
    lines = ATC_OPS_FILE.read_text().splitlines()
    return frozenset(s for s in (line.strip() for line in lines) if s and not s.startswith("#"))


@dataclass(frozen=True)
class Axis:
    """A dynamic axis besides the batch: `axis` of the full tensor, exported as `Dim(name,
    max=max)`, checked at size `alt` (the example uses the input's own size)."""
    axis: int
    name: str
    alt: int
    max: int


@dataclass(frozen=True)
class Input:
    """One model input: its per-sample `shape`; float `randn` values, or int64 ids in
    [0, `high`) when `high` > 0; the batch is always dynamic, `axes` adds more."""
    name: str
    shape: tuple
    high: int = 0
    axes: tuple = ()

    def sample(self, batch, gen, alt=False):
        shape = [batch, *self.shape]
        if alt:
            for a in self.axes:
                shape[a.axis] = a.alt
        if self.high:
            return torch.randint(0, self.high, shape, generator=gen)
        return torch.randn(*shape, generator=gen)


@dataclass
class Verdict:
    category: str
    detail: str = ""
    ops: dict = field(default_factory=dict)
    vacuous: bool = False
    seconds: float = 0.0
    device: str = ""
    refereed: list = field(default_factory=list)

    def to_json(self):
        return {"category": self.category, "detail": self.detail, "ops": self.ops,
                "vacuous": self.vacuous, "seconds": round(self.seconds, 1),
                "device": self.device, "refereed": self.refereed}


def shorten(text, limit=DETAIL_CHARS):
    """The first non-empty line of `text`, without temporary paths, cut to `limit`."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0] if lines else "(no message)"
    line = re.sub(r"/tmp/\S*?/", "", line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def last_error_line(stderr):
    """A Python traceback's last line (the exception), or the first line of any other text."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    tb = [line for line in lines if re.match(r"^[\w.]+(Error|Exception|Failure)\b", line)]
    return tb[-1] if tb else (lines[0] if lines else "(no message)")


def flat_outputs(result):
    """A model's result as a list of tensors (dict values in order, nested tuples flattened)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, dict):
        result = list(result.values())
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in flat_outputs(item)]
    raise TypeError(f"unsupported model output {type(result).__name__}")


def examples(inputs, batch, seed, alt=False):
    gen = torch.Generator().manual_seed(seed)
    return tuple(i.sample(batch, gen, alt) for i in inputs)


# ------------------------------------------------------------------ converters
def export_pt2(model, inputs, path):
    """`torch.export` with the batch (and each `Axis`) dynamic, saved to `path`."""
    # A model may declare the largest batch its code supports (`export_batch_max`), as
    # torch.export's own suggested fix bounds the Dim when the code branches on the batch.
    dims = {BATCH_NAME: torch.export.Dim(BATCH_NAME, max=getattr(model, "export_batch_max",
                                                                 None))}
    for i in inputs:
        for a in i.axes:
            dims.setdefault(a.name, torch.export.Dim(a.name, min=2, max=a.max))
    shapes = tuple({0: dims[BATCH_NAME], **{a.axis: dims[a.name] for a in i.axes}}
                   for i in inputs)
    program = torch.export.export(model, examples(inputs, EXAMPLE_BATCH, 0),
                                  dynamic_shapes=shapes)
    torch.export.save(program, str(path))


def trace(model, inputs, path):
    """`torch.jit.trace` (strict=False, no trace check) under no_grad, saved to `path`."""
    with torch.no_grad():
        traced = torch.jit.trace(model, examples(inputs, EXAMPLE_BATCH, 0), strict=False,
                                 check_trace=False)
    torch.jit.save(traced, str(path))


def torch_onnx(model, inputs, path):
    """torch's legacy exporter at opset 11 with the batch (and each `Axis`) dynamic."""
    import warnings

    example = examples(inputs, EXAMPLE_BATCH, 0)
    with torch.no_grad():
        outputs = len(flat_outputs(model(*example)))
    output_names = [f"output_{k}" for k in range(outputs)]
    axes = {i.name: {0: BATCH_NAME, **{a.axis: a.name for a in i.axes}} for i in inputs}
    axes.update({name: {0: BATCH_NAME} for name in output_names})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, str(path), opset_version=OPSET, dynamo=False,
                          input_names=[i.name for i in inputs], output_names=output_names,
                          dynamic_axes=axes)


def ckpt_to_onnx(ckpt, source, out, timeout, shapes=()):
    """`ckpt to-onnx SOURCE -o OUT` (with an `--input-shape` per entry of `shapes`); raises
    `ConversionError` with ckpt's first error line. The file written must pass `ckpt
    atc-check` (`assert_atc_check`)."""
    given = [arg for shape in shapes for arg in ("--input-shape", shape)]
    proc = subprocess.run([str(ckpt), "to-onnx", str(source), "-o", str(out), *given],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        message = proc.stderr.strip() or f"exit {proc.returncode}"
        # ckpt's errors name the input file first: drop it, the model is named already.
        raise ConversionError(message.replace(f"{source}: ", "", 1))
    assert_atc_check(ckpt, out)


def assert_atc_check(ckpt, onnx_path):
    """`ckpt atc-check ONNX` exits 0: no node ATC's parser refuses or turns into something
    that computes other values (the model of CANN's parser, docs/atc.md)."""
    proc = subprocess.run([str(ckpt), "atc-check", str(onnx_path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, (
        f"ckpt atc-check {onnx_path.name if hasattr(onnx_path, 'name') else onnx_path} "
        f"exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")


class ConversionError(Exception):
    """A converter's own refusal (as opposed to a crash of the harness)."""


def source_path(route, workdir, stem):
    """Where `convert` saves the `.pt2` or TorchScript file that ckpt reads."""
    return Path(workdir) / f"{stem}.{'pt2' if route == 'pt2' else 'pt'}"


def convert(route, model, inputs, workdir, stem, ckpt=None, timeout=600, exported=False):
    """Runs converter `route` on `model`; returns the ONNX path, or raises. The `.pt2` and
    trace steps that belong to torch are labelled so a torch-side failure is not blamed on
    ckpt. `exported`: the source file is at `source_path` already."""
    out = Path(workdir) / f"{stem}.{route}.onnx"
    if route == "torch":
        torch_onnx(model, inputs, out)
        return out
    source = source_path(route, workdir, stem)
    try:
        if not exported:
            (export_pt2 if route == "pt2" else trace)(model, inputs, source)
    except Exception as e:  # noqa: BLE001 - any torch failure is a verdict, not a crash
        step = "torch.export" if route == "pt2" else "torch.jit.trace"
        raise ConversionError(f"{step} failed: {type(e).__name__}: {shorten(e)}") from e
    ckpt_to_onnx(ckpt, source, out, timeout,
                 trace_shapes(inputs) if route == "trace" else ())
    return out


def trace_shapes(inputs):
    """`--input-shape` for a trace whose inputs have dynamic axes besides the batch: each
    input's per-sample sizes, a dynamic axis as `NAME<=MAX` (none when no axis is). A lone
    input goes unnamed (its forward's parameter may be named otherwise); several are named
    after their parameters."""
    if not any(i.axes for i in inputs):
        return ()
    shapes = []
    for i in inputs:
        sizes = [str(n) for n in i.shape]
        for a in i.axes:
            sizes[a.axis - 1] = f"{a.name}<={a.max}"
        sizes = ",".join(sizes)
        shapes.append(sizes if len(inputs) == 1 else f"{i.name}:{sizes}")
    return shapes


# ------------------------------------------------------------------ checks
def dim_names(value_info):
    return [d.dim_param for d in value_info.type.tensor_type.shape.dim]


def judge(onnx_path, model, inputs, allowed=None, ckpt=None):
    """The `Verdict` on `onnx_path` as an export of `model` (see the module doc)."""
    import onnx

    proto = onnx.load(str(onnx_path))
    ops = Counter(n.op_type for n in proto.graph.node)
    verdict = Verdict("failed", ops=dict(sorted(ops.items())))
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as e:  # noqa: BLE001 - the checker's many exception types
        verdict.detail = f"onnx.checker: {shorten(e)}"
        return verdict
    opsets = [(o.domain, o.version) for o in proto.opset_import]
    if opsets != [("", OPSET)]:
        verdict.detail = f"opset imports {opsets}, want [('', {OPSET})]"
        return verdict
    graph_inputs = [i for i in proto.graph.input
                    if i.name not in {t.name for t in proto.graph.initializer}]
    if len(graph_inputs) != len(inputs):
        verdict.detail = f"{len(graph_inputs)} graph inputs, the model takes {len(inputs)}"
        return verdict
    for gi, spec in zip(graph_inputs, inputs):
        names = dim_names(gi)
        for axis, name in [(0, BATCH_NAME), *((a.axis, a.name) for a in spec.axes)]:
            if len(names) <= axis or not names[axis]:
                verdict.detail = f"input `{gi.name}` axis {axis} ({name}) has no dim_param"
                return verdict
    values = compare_values(onnx_path, model, inputs)
    verdict.vacuous, verdict.refereed = values.vacuous, values.refereed
    if values.problem:
        verdict.category, verdict.detail = "wrong", values.problem
        return verdict
    banned = [op for op in BANNED_OPS if op in ops]
    unknown = sorted(set(ops) - (allowed if allowed is not None else atc_ops()) - set(banned))
    if banned or unknown:
        parts = [f"emits {', '.join(f'{op}×{ops[op]}' for op in banned)}"] if banned else []
        if unknown:
            parts.append(f"not in CANN's opset-11 table: {', '.join(unknown)}")
        verdict.category, verdict.detail = "not-atc-clean", "; ".join(parts)
        return verdict
    problem, verdict.device = device_parity(onnx_path, model, inputs, ckpt)
    if problem:
        verdict.category, verdict.detail = "not-atc-clean", problem
        return verdict
    verdict.category = "ok"
    return verdict


def default_ckpt():
    """`CKPT_BIN`, or the release build of this checkout."""
    return os.environ.get("CKPT_BIN") or str(HERE.parents[1] / "target" / "release" / "ckpt")


def device_parity(onnx_path, model, inputs, ckpt=None):
    """The device reading of `onnx_path` (`ckpt atc-check --device-reading`, on the file with
    onnx's inferred shapes) against torch in onnxruntime: `(problem, note)`. When no node
    reads differently the file is its own reading and no session is built (the note says so).
    """
    import onnx

    path = Path(onnx_path)
    shaped = path.with_name(path.stem + ".shapes.onnx")
    reading = path.with_name(path.stem + ".device.onnx")
    try:
        onnx.shape_inference.infer_shapes_path(str(path), str(shaped))
        proc = subprocess.run([str(ckpt or default_ckpt()), "atc-check", str(shaped),
                               "--device-reading", str(reading), "--json"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode not in (0, 2):
            return f"device reading: {shorten(proc.stderr.replace(str(shaped) + ': ', ''))}", ""
        changed = json.loads(proc.stdout)["device_reading"]["changed"]
        if not changed:
            return "", "device reading: no node reads differently (not run)"
        ops = sorted({c["op"] for c in changed})
        values = compare_values(reading, model, inputs, dtypes=True)
        if values.problem:
            first = changed[0]
            return (f"on the device ({len(changed)} nodes read as ATC does, e.g. {first['node']} "
                    f"({first['op']}): {first['reading']}): {values.problem}"), ""
        return "", f"device reading: {len(changed)} nodes ({', '.join(ops)}) match torch"
    finally:
        for p in (shaped, reading):
            p.unlink(missing_ok=True)


@dataclass
class Values:
    problem: str = ""
    vacuous: bool = False
    # Outputs that differ from torch's float32 result by more than the tolerance but are no
    # farther from the float64 result than torch's own float32 result is (`beyond_torch_error`).
    refereed: list = field(default_factory=list)


def float64_reference(model, xs):
    """The model's outputs computed in float64 (a copy of it, its floating inputs widened),
    or `[]` when the model cannot run in float64 (code that makes float32 tensors itself)."""
    import copy

    xs64 = tuple(x.double() if x.is_floating_point() else x for x in xs)
    try:
        # A model holding what cannot be copied (an onnxruntime session) has no referee.
        wide = copy.deepcopy(model).double()
        with torch.no_grad():
            return [o.detach().numpy().astype(np.float64) for o in flat_outputs(wide(*xs64))]
    except Exception:  # noqa: BLE001 - any failure means no float64 referee
        return []


def beyond_torch_error(got, ref32, ref64, tol):
    """Why `got` (an export's output) is wrong although it differs from torch's float32 result
    `ref32` by more than `tol`, or "" when it is not: the float64 result `ref64` referees, and
    the export is right when it is no farther from `ref64` than torch's own float32 result is
    (plus `tol`). Without a float64 result (or with one of another shape) the difference
    from torch stands."""
    diff = float(np.abs(got - ref32).max(initial=0))
    if ref64 is None or ref64.shape != ref32.shape:
        return f"max |diff| {diff:.2e} > {tol:.2e}"
    ours = float(np.abs(got - ref64).max(initial=0))
    torch_own = float(np.abs(ref32 - ref64).max(initial=0))
    if ours <= torch_own + tol:
        return ""
    return (f"max |diff| {diff:.2e} > {tol:.2e}; from the float64 result {ours:.2e}, "
            f"torch float32's own {torch_own:.2e}")


def compare_values(onnx_path, model, inputs, batches=CHECK_BATCHES, dtypes=False):
    """onnxruntime (graph optimizations off, so the file is run as written) against torch
    eager at each batch; the largest batch also uses each `Axis`'s alternative size.
    `vacuous` is set when an output hardly varies across samples (under 10 tolerances).
    `dtypes`: each output's element type must be torch's too."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(str(onnx_path), options,
                                       providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        return Values(f"onnxruntime cannot load it: {shorten(e)}")
    feeds_names = [i.name for i in session.get_inputs()]
    result = Values()
    for b in batches:
        xs = examples(inputs, b, 100 + b, alt=(b == max(batches)))
        with torch.no_grad():
            refs = [r.detach().numpy() for r in flat_outputs(model(*xs))]
        try:
            got = session.run(None, dict(zip(feeds_names, (x.numpy() for x in xs))))
        except Exception as e:  # noqa: BLE001
            return Values(f"batch {b}: onnxruntime: {shorten(e)}")
        if len(got) != len(refs):
            return Values(f"{len(got)} outputs, torch returns {len(refs)}")
        exact = None
        for k, (g, r) in enumerate(zip(got, refs)):
            if g.shape != r.shape:
                return Values(f"batch {b} output {k}: shape {g.shape}, torch {r.shape}")
            if dtypes and g.dtype != r.dtype:
                return Values(f"output {k}: {g.dtype}, torch {r.dtype}")
            r64, g64 = r.astype(np.float64), g.astype(np.float64)
            tol = 1e-4 * max(1.0, float(np.abs(r64).max(initial=0)))
            diff = float(np.abs(g64 - r64).max(initial=0))
            if not diff <= tol:
                if exact is None:
                    exact = float64_reference(model, xs)
                problem = beyond_torch_error(g64, r64, exact[k] if k < len(exact) else None, tol)
                if problem:
                    return Values(f"batch {b} output {k}: {problem}")
                result.refereed.append(f"batch {b} output {k}")
            if b == max(batches) and b > 1:
                spread = float(np.abs(r64 - r64.mean(axis=0)).max(initial=0))
                result.vacuous |= spread < 10 * tol
    return result


def run_route(route, model, inputs, workdir, stem, ckpt=None, timeout=600, exported=False):
    """`convert` then `judge`, as a `Verdict` (a conversion error becomes `failed`)."""
    start = time.monotonic()
    try:
        path = convert(route, model, inputs, workdir, stem, ckpt, timeout, exported)
        verdict = judge(path, model, inputs, ckpt=ckpt)
    except ConversionError as e:
        verdict = Verdict("failed", shorten(e))
    except subprocess.TimeoutExpired:
        verdict = Verdict("failed", "timeout (ckpt)")
    except Exception as e:  # noqa: BLE001 - torch.onnx.export and friends raise anything
        verdict = Verdict("failed", f"{type(e).__name__}: {shorten(e)}")
    verdict.seconds = time.monotonic() - start
    return verdict
