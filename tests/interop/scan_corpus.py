"""A scanner-evaluation corpus, generated: malicious files crafted byte by byte (nothing here
unpickles what it writes) and benign controls written by real torch.

Run standalone: python tests/interop/scan_corpus.py OUTDIR   (prints one line per file)

Malicious families (each names the advisory or scanner test suite it comes from):
  * classic payloads: os/posix/nt.system, subprocess, eval/exec, runpy, webbrowser, socket,
    nested pickles, torch loaders (picklescan's and modelscan's unsafe-globals tables);
  * gadgets outside the classic tables, from picklescan's 2025 advisories (GHSA reports on
    idlelib, lib2to3.pgen2, doctest.debug_script, torch.utils.bottleneck, torch._dynamo
    guards, torch.fx symbolic_shapes, torch.utils.data datapipes, _osx_support, _aix_support,
    imaplib.IMAP4_stream, distutils.file_util.write_file, _xxsubinterpreters.run_string,
    mailcap.findmatch, numpy.lib._npyio_impl.load, _operator.methodcaller);
  * dotted re-exports and attribute walks (pathlib.os.system, torch.os.system,
    builtins.print.__self__.exec): STACK_GLOBAL resolves names attribute by attribute;
  * hiding places: a torch zip's data.pkl, an archive folder other than `archive/`
    (unsafe_zip_pytorch/), a `.debug_pkl` record, a legacy stream's first pickle, its
    sys_info pickle, a magic number computed by a global, a pre-2017 tar's `pickle` member,
    that member with its size only in a PAX header (ustar size 0), the tar's sys_info.
Every malicious file carries exactly one payload global, whose resolved dotted path is
recorded so a test can check the scanner named it.
"""
import argparse
import collections
import io
import struct
import sys
import tarfile
import zipfile
from pathlib import Path

# (module, name, the dotted path ckpt reports it as): single components use GLOBAL, dotted
# names STACK_GLOBAL.
GADGETS = [
    ("os", "system", "os.system"),
    ("posix", "system", "posix.system"),
    ("nt", "system", "nt.system"),
    ("subprocess", "Popen", "subprocess.Popen"),
    ("subprocess", "check_output", "subprocess.check_output"),
    ("builtins", "eval", "builtins.eval"),
    ("builtins", "exec", "builtins.exec"),
    ("__builtin__", "eval", "builtins.eval"),
    ("builtins", "getattr", "builtins.getattr"),
    ("builtins", "__import__", "builtins.__import__"),
    ("runpy", "_run_code", "runpy._run_code"),
    ("webbrowser", "open", "webbrowser.open"),
    ("socket", "create_connection", "socket.create_connection"),
    ("pickle", "loads", "pickle.loads"),
    ("_pickle", "loads", "_pickle.loads"),
    ("torch", "load", "torch.load"),
    ("torch.hub", "load", "torch.hub.load"),
    ("torch.serialization", "load", "torch.serialization.load"),
    ("numpy", "load", "numpy.load"),
    ("cProfile", "run", "cProfile.run"),
    ("pdb", "run", "pdb.run"),
    ("timeit", "timeit", "timeit.timeit"),
    ("pydoc", "pipepager", "pydoc.pipepager"),
    ("shutil", "rmtree", "shutil.rmtree"),
    ("ctypes", "CDLL", "ctypes.CDLL"),
    ("functools", "partial", "functools.partial"),
    ("operator", "attrgetter", "operator.attrgetter"),
    ("code", "InteractiveInterpreter.runcode", "code.InteractiveInterpreter.runcode"),
    # picklescan advisories (2025): gadgets outside the classic tables.
    ("idlelib.pyshell", "ModifiedInterpreter.runcode",
     "idlelib.pyshell.ModifiedInterpreter.runcode"),
    ("idlelib.run", "Executive.runcode", "idlelib.run.Executive.runcode"),
    ("idlelib.calltip", "Calltip.fetch_tip", "idlelib.calltip.Calltip.fetch_tip"),
    ("idlelib.autocomplete", "AutoComplete.get_entity",
     "idlelib.autocomplete.AutoComplete.get_entity"),
    ("lib2to3.pgen2.pgen", "ParserGenerator.make_label",
     "lib2to3.pgen2.pgen.ParserGenerator.make_label"),
    ("lib2to3.pgen2.grammar", "Grammar.loads", "lib2to3.pgen2.grammar.Grammar.loads"),
    ("doctest", "debug_script", "doctest.debug_script"),
    ("torch.utils.bottleneck.__main__", "run_cprofile",
     "torch.utils.bottleneck.__main__.run_cprofile"),
    ("torch._dynamo.guards", "GuardBuilder.get", "torch._dynamo.guards.GuardBuilder.get"),
    ("torch.fx.experimental.symbolic_shapes", "ShapeEnv.evaluate_guards_expression",
     "torch.fx.experimental.symbolic_shapes.ShapeEnv.evaluate_guards_expression"),
    ("torch.utils.data.datapipes.utils.decoder", "basichandlers",
     "torch.utils.data.datapipes.utils.decoder.basichandlers"),
    ("_osx_support", "_read_output", "_osx_support._read_output"),
    ("_aix_support", "_aix_bos_rte", "_aix_support._aix_bos_rte"),
    ("imaplib", "IMAP4_stream", "imaplib.IMAP4_stream"),
    ("distutils.file_util", "write_file", "distutils.file_util.write_file"),
    ("_xxsubinterpreters", "run_string", "_xxsubinterpreters.run_string"),
    ("mailcap", "findmatch", "mailcap.findmatch"),
    ("numpy.lib._npyio_impl", "load", "numpy.lib._npyio_impl.load"),
    ("_operator", "methodcaller", "_operator.methodcaller"),
    ("torch.utils.collect_env", "run", "torch.utils.collect_env.run"),
    ("torch.jit.unsupported_tensor_ops", "execWrapper",
     "torch.jit.unsupported_tensor_ops.execWrapper"),
    # Re-exports and attribute walks.
    ("pathlib", "os.system", "pathlib.os.system"),
    ("torch", "os.system", "torch.os.system"),
    ("builtins", "print.__self__.exec", "builtins.print.__self__.exec"),
]


# ---------------------------------------------------------------- pickle opcodes
def proto(n=2):
    return b"\x80" + bytes([n])


def uni(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def short(s):
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


def call(module, name, arg="echo pwned"):
    """module.name(arg) as a complete pickle: GLOBAL for plain names, STACK_GLOBAL (proto 4)
    for dotted ones."""
    if "." in name:
        return proto(4) + short(module) + short(name) + b"\x93(" + uni(arg) + b"tR."
    return proto(2) + b"c" + f"{module}\n{name}\n".encode() + b"(" + uni(arg) + b"tR."


OS_SYSTEM = call("os", "system")


# ---------------------------------------------------------------- containers
def torch_zip(records, prefix="archive"):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in records:
            z.writestr(zipfile.ZipInfo(f"{prefix}/{name}"), data)
    return buf.getvalue()


BENIGN_PICKLE = proto() + b"}."
LEGACY_MAGIC = bytes.fromhex("80028a0a6cfc9c46f9206aa85019") + b"."
LEGACY_PROTO = proto() + b"M\xe9\x03."
EMPTY_KEYS = proto() + b"]."


def legacy(first=LEGACY_MAGIC, sysinfo=BENIGN_PICKLE, obj=BENIGN_PICKLE):
    return first + LEGACY_PROTO + sysinfo + obj + EMPTY_KEYS


def computed_magic():
    """builtins.int('1950a86a20f9469cfc6c', 16): the magic number, computed."""
    return (proto() + b"cbuiltins\nint\n(" + uni("1950a86a20f9469cfc6c") + b"J\x10\x00\x00\x00tR.")


def tar(pickle, sys_info=BENIGN_PICKLE, pax_size_only=False):
    """A pre-2017 tar checkpoint with no tensors; pax_size_only: the `pickle` member's size
    only in a PAX record, its ustar size field 0 (checksum recomputed)."""
    buf = io.BytesIO()
    fmt = tarfile.PAX_FORMAT if pax_size_only else tarfile.USTAR_FORMAT
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, data in [("sys_info", sys_info), ("pickle", pickle),
                           ("storages", proto() + b"K\x00." + proto() + b"]."),
                           ("tensors", proto() + b"K\x00.")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            if pax_size_only and name == "pickle":
                info.pax_headers = {"size": str(len(data))}
            t.addfile(info, io.BytesIO(data))
    out = bytearray(buf.getvalue())
    if pax_size_only:
        pos = 0
        while pos + 512 <= len(out) and any(out[pos:pos + 512]):
            size = int(out[pos + 124:pos + 136].rstrip(b"\0 ") or b"0", 8)
            if out[pos:pos + 100].rstrip(b"\0") == b"pickle" and out[pos + 156:pos + 157] == b"0":
                out[pos + 124:pos + 136] = b"0" * 11 + b"\0"
                out[pos + 148:pos + 156] = b" " * 8
                out[pos + 148:pos + 156] = b"%06o\0 " % sum(out[pos:pos + 512])
            pos += 512 + (size + 511) // 512 * 512
    return bytes(out)


def hiding_places(payload):
    """name suffix -> file bytes, for one payload pickle."""
    return {
        "plain.pkl": payload,
        "zip_data.pth": torch_zip([("data.pkl", payload), ("version", b"3\n")]),
        "zip_prefix.pth": torch_zip([("data.pkl", payload), ("version", b"3\n")],
                                    prefix="unsafe_zip_pytorch"),
        "zip_debug_pkl.pt": torch_zip([("data.pkl", BENIGN_PICKLE),
                                       ("code/__torch__.py.debug_pkl", payload),
                                       ("version", b"3\n")]),
        "legacy_first.pth": legacy(first=payload),
        "legacy_sysinfo.pth": legacy(sysinfo=payload),
        "legacy_computed_magic.pth": legacy(first=computed_magic(), obj=payload),
        "tar_pickle.tar": tar(payload),
        "tar_pax_size.tar": tar(payload, pax_size_only=True),
        "tar_sysinfo.tar": tar(BENIGN_PICKLE, sys_info=payload),
    }


def malicious(out):
    """Writes the malicious files; returns {file name: dotted payload path}."""
    made = {}
    for module, name, path in GADGETS:
        payload = call(module, name)
        tag = f"{module}.{name}".replace(".", "_")
        places = hiding_places(payload)
        # Every gadget in the two commonest places, the classic one in all of them.
        keep = places if (module, name) == ("os", "system") else {
            k: v for k, v in places.items() if k in ("plain.pkl", "zip_data.pth")}
        for suffix, data in keep.items():
            file = f"{tag}__{suffix}"
            (out / file).write_bytes(data)
            made[file] = path
    return made


def benign(out):
    """Writes benign controls with real torch; returns their file names."""
    import numpy as np
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                torch.nn.Flatten(), torch.nn.Linear(4, 2))
    sd = model.state_dict()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 3, 3, 3)).sum().backward()
    opt.step()
    made = []

    def save(name, obj, **kwargs):
        torch.save(obj, out / name, **kwargs)
        made.append(name)

    save("benign_state_dict.pth", sd)
    save("benign_state_dict_legacy.pth", sd, _use_new_zipfile_serialization=False)
    save("benign_state_dict_proto4.pth", sd, pickle_protocol=4)
    save("benign_train_ckpt.pth", {"epoch": 3, "model": sd, "optimizer": opt.state_dict(),
                                   "best": 0.5, "history": [1.0, 0.7]})
    save("benign_timm_args.pth.tar", {"state_dict": sd, "args": argparse.Namespace(lr=0.1),
                                      "arch": "tiny"})
    save("benign_numpy_array.pth", {"model": sd, "mean": np.zeros(3, dtype=np.float32)})
    save("benign_torch_version.pth", {"model": sd, "torch_version": torch.__version__})
    save("benign_dtypes.pth", collections.OrderedDict(
        (str(d), torch.zeros(2, dtype=d)) for d in
        (torch.float16, torch.bfloat16, torch.int8, torch.bool, torch.complex64)))
    scripted = torch.jit.script(model.eval())
    scripted.save(str(out / "benign_scripted.pt"))
    made.append("benign_scripted.pt")
    return made


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for file, path in malicious(args.out).items():
        print(f"malicious {file} {path}")
    for file in benign(args.out):
        print(f"benign {file}")


if __name__ == "__main__":
    sys.exit(main())
