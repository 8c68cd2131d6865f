"""ckpt's aten schema table against torch's own schemas.

Every argument name and type the importers and the lowering read comes from one table
(`crates/aten/src/schema.rs`). Every row of it must be exactly torch 2.13's: the same positional
names in the same order and the same keyword-only names, so a TorchScript call's positional
arguments and a `.pt2` node's named ones are read as torch means them; the same types as
torch spells them, so a TorchScript call picks the overload TorchScript compiled it to; and
the same defaults, so an argument a `.pt2` node leaves out is read as torch's default. The
whole table is compared with what `scripts/aten-schema` prints from torch, and
`docs/onnx-ops.md`, which prints every row the export reaches (generated from the table,
checked current by `cargo test`), is read back and compared with torch's defaults as Python
values.
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
    """A documented argument as (name, default): `int[1] dim=[1]` is ("dim", [1])."""
    declared, eq, value = argument.partition("=")
    name = declared.rpartition(" ")[2]
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
    # crates/aten/src/refused.rs holds the classes scripts/aten-refusals derives from torch's tags
    # and namespaces; a torch with other tags must regenerate them.
    from importlib.machinery import SourceFileLoader
    script = SourceFileLoader("aten_refusals", str(ROOT / "scripts" / "aten-refusals")).load_module()
    source = (ROOT / "crates" / "aten" / "src" / "refused.rs").read_text()
    rows = re.findall(r'\(\s*"([A-Za-z_0-9]+)",\s*Class::(\w+),?\s*\)', source)
    assert len(rows) >= 100, f"only {len(rows)} rows read from refused.rs"
    assert rows == script.classes()


def test_every_row_of_the_table_is_what_torch_declares():
    # Every row, documented or not (the TorchScript import reads each one to pick a call's
    # overload by its types), is what scripts/aten-schema prints from torch's own schema:
    # the same names in the same order, types as torch spells them, and defaults.
    from importlib.machinery import SourceFileLoader
    script = SourceFileLoader("aten_schema", str(ROOT / "scripts" / "aten-schema")).load_module()
    source = (ROOT / "crates" / "aten" / "src" / "schema.rs").read_text()
    table = source[source.index("pub const SCHEMAS"):]
    rows = re.findall(r'schema\(\s*"[^"]+",\s*&\[(?:[^\[\]]|\[[^\]]*\])*\],\s*'
                      r'&\[(?:[^\[\]]|\[[^\]]*\])*\],?\s*\)', table)
    assert len(rows) >= 200, f"only {len(rows)} rows read from schema.rs"
    squeeze = lambda text: re.sub(r"\s+|,(?=\s*[\])])", "", text)
    for row in rows:
        target = re.match(r'schema\(\s*"([^"]+)"', row)[1]
        assert squeeze(row) == squeeze(script.call(target)), target
