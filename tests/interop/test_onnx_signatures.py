"""ckpt's table of ONNX operator signatures against onnx's own operator schemas.

Every graph the export writes is checked before it is written against `SIGNATURES` in
`crates/onnx/src/typing.rs`: each input's element type must be one its operator allows at the
graph's opset, and inputs sharing a type variable must agree (ONNX's Min and Max take
integers only from opset 12, Where's condition is bool, Reshape's shape int64). The table is
printed by scripts/onnx-signatures from the installed onnx; it must be exactly that.
"""
import re
from importlib.machinery import SourceFileLoader

from _util import ROOT


def test_signature_table_is_onnxs():
    script = SourceFileLoader("onnx_signatures",
                              str(ROOT / "scripts" / "onnx-signatures")).load_module()
    source = (ROOT / "crates" / "onnx" / "src" / "typing.rs").read_text()
    block = re.search(r"pub const SIGNATURES: \[Signature; (\d+)\] = \[\n(.*?)\];\n", source,
                      re.S)
    assert block, "SIGNATURES not found in typing.rs"
    want = script.table()
    assert want.count("sig(") >= 150, "too few operator versions printed"
    assert int(block[1]) == want.count("sig(")
    assert block[2] == want, "regenerate with scripts/onnx-signatures"
