"""ckpt's aten schema table against torch's own schemas.

Every argument name the importers and the lowering read comes from one table
(`src/aten/schema.rs`); `docs/onnx-ops.md` prints every row of it that the export reaches
(generated from the table, and checked current by `cargo test`). Each printed signature must
be exactly torch 2.13's: the same positional names in the same order and the same
keyword-only names, so a TorchScript call's positional arguments and a `.pt2` node's named
ones are read as torch means them, and the same defaults (`name=value`, as Python writes the
value), so an argument a `.pt2` node leaves out is read as torch's default.
"""
import ast
import re

import pytest
import torch

from _util import ROOT

DOC = ROOT / "docs" / "onnx-ops.md"
ROW = re.compile(r"^\| `(?P<target>[A-Za-z_0-9]+\.[A-Za-z_0-9]+)\((?P<args>[^)]*)\)` \|")


def split_arguments(text):
    """`self, dim=[0, 1], *, dtype=None` as its arguments (commas inside a list kept)."""
    args, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            args.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        args.append(current.strip())
    return args


def documented():
    rows = []
    for line in DOC.read_text().splitlines():
        m = ROW.match(line)
        if m:
            rows.append((m["target"], split_arguments(m["args"])))
    return rows


ROWS = documented()


def test_the_document_lists_the_table():
    # Lowered and evaluated-only overloads; far fewer would mean the parse above is broken.
    assert len(ROWS) >= 200, f"only {len(ROWS)} schema rows read from {DOC}"


def torch_signature(target):
    """torch's arguments of `target`: (name, default) pairs (`NO_DEFAULT` for a required
    one), with `("*", NO_DEFAULT)` before the keyword-only ones."""
    if target.startswith("_operator."):
        # Python's operator.mul on symbolic sizes; torch.export names its operands a, b.
        return [("a", NO_DEFAULT), ("b", NO_DEFAULT)]
    name, overload = target.rsplit(".", 1)
    schema = getattr(getattr(torch.ops.aten, name), overload)._schema

    def arg(a):
        return (a.name, a.default_value if a.has_default_value() else NO_DEFAULT)

    positional = [arg(a) for a in schema.arguments if not a.kwarg_only]
    keyword = [arg(a) for a in schema.arguments if a.kwarg_only]
    return positional + ([("*", NO_DEFAULT)] + keyword if keyword else [])


NO_DEFAULT = object()


def read(argument):
    """A documented argument as (name, default): `dim=[1]` is ("dim", [1])."""
    name, eq, value = argument.partition("=")
    return name, ast.literal_eval(value) if eq else NO_DEFAULT


@pytest.mark.parametrize("target,args", ROWS, ids=[t for t, _ in ROWS])
def test_schema_row_is_torchs(target, args):
    theirs = torch_signature(target)
    ours = [read(a) for a in args]
    assert [n for n, _ in ours] == [n for n, _ in theirs]
    for (name, mine), (_, default) in zip(ours, theirs):
        if mine is NO_DEFAULT or default is NO_DEFAULT:
            assert mine is default, f"{name}: {mine!r} against torch's {default!r}"
        elif isinstance(mine, list) and isinstance(default, list) and len(mine) == 1:
            # torch's `int[2] dilation=1`: one value, repeated to the list's size.
            assert mine * len(default) == default, f"{name}: {mine} against torch's {default}"
        else:
            assert mine == default and type(mine) is type(default), (
                f"{name}: {mine!r} against torch's {default!r}")


def test_refusal_classes_are_torchs():
    # src/aten/refused.rs holds the classes scripts/aten-refusals derives from torch's tags
    # and namespaces; a torch with other tags must regenerate them.
    from importlib.machinery import SourceFileLoader
    script = SourceFileLoader("aten_refusals", str(ROOT / "scripts" / "aten-refusals")).load_module()
    source = (ROOT / "src" / "aten" / "refused.rs").read_text()
    rows = re.findall(r'\(\s*"([A-Za-z_0-9]+)",\s*Class::(\w+),?\s*\)', source)
    assert len(rows) >= 100, f"only {len(rows)} rows read from refused.rs"
    assert rows == script.classes()


# The TorchScript import picks an overload by where tensors fall: no row of torch's schemas
# types these arguments as a tensor (`torch.min(a, b)` of two tensors is `min.other`, not
# `min.dim`); `NEVER_TENSOR` in src/torch/script/ops.rs.
NEVER_TENSOR = re.search(r"pub const NEVER_TENSOR: &\[&str\] = &\[([^\]]*)\]",
                         (ROOT / "src" / "torch" / "script" / "ops.rs").read_text())[1]
NEVER_TENSOR = [n.strip().strip('"') for n in NEVER_TENSOR.split(",") if n.strip()]


def test_arguments_the_import_reads_as_never_tensors_are_not_tensors_in_torch():
    assert NEVER_TENSOR, "NEVER_TENSOR not read from ops.rs"
    seen = 0
    for target, _ in ROWS:
        if target.startswith("_operator."):
            continue
        name, overload = target.rsplit(".", 1)
        for arg in getattr(getattr(torch.ops.aten, name), overload)._schema.arguments:
            if arg.name in NEVER_TENSOR:
                seen += 1
                assert "Tensor" not in str(arg.type), f"{target}: `{arg.name}` is {arg.type}"
    assert seen >= 20, f"only {seen} rows have an argument in {NEVER_TENSOR}"


def test_self_is_a_tensor_but_in_the_rows_the_import_lists():
    # The TorchScript import makes a number given as `self` a 0-d tensor unless the row
    # is one of `SCALAR_SELF` in src/torch/script/ops.rs.
    listed = re.search(r"pub const SCALAR_SELF: &\[&str\] = &\[([^\]]*)\]",
                       (ROOT / "src" / "torch" / "script" / "ops.rs").read_text())[1]
    listed = {n.strip().strip('"') for n in listed.split(",") if n.strip()}
    scalar_self = set()
    for target in re.findall(r'"([A-Za-z_0-9]+\.[A-Za-z_0-9]+)"',
                             (ROOT / "src" / "aten" / "schema.rs").read_text()):
        if target.startswith("_operator."):
            continue
        name, overload = target.rsplit(".", 1)
        packet = getattr(torch.ops.aten, name, None)
        if packet is None or overload not in packet.overloads():
            continue
        for a in getattr(packet, overload)._schema.arguments:
            if a.name == "self" and "Tensor" not in str(a.type):
                scalar_self.add(target)
    assert scalar_self == listed
