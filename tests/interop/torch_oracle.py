"""torch itself as the oracle of what `torch.load` reaches, with nothing executed.

`torch.load(path, weights_only=False, pickle_module=RECORDER)` runs torch's real loader (its
zip reader, miniz; its legacy `tarfile` path; its legacy stream path; its TorchScript
dispatch) with a recording pickle module: `RECORDER.Unpickler` subclasses CPython's C
`pickle.Unpickler` and its `find_class` records every (module, name) asked for. CPython's C
unpickler calls `find_class` for GLOBAL, STACK_GLOBAL, INST and the EXT1/2/4 extension
registry (copyreg) lookups, so every way a pickle names a callable is recorded. A name on
torch's weights_only allow-list (as ckpt copies it, crates/formats/src/torch/allowlist.rs) or among ckpt's
documented benign classes resolves to the real object, so torch's persistent_load and tensor rebuilds keep working; every other name
resolves to an inert stub (a class whose instances take any call, attribute, `__setstate__`,
item or append and do nothing). `RECORDER.load` goes through the same Unpickler, so the
legacy format's magic-number, sys_info and side-table pickles are recorded too. torch's
dispatch of a TorchScript zip to `torch.jit.load` is recorded as `jit` (TorchScript archives
are unpickled by torch's C++ unpickler, which resolves no Python globals).

Each load runs in a child forked from one worker process that imported torch once, in a
fresh temporary cwd (the legacy tar path extracts there), under a timeout. A name is
recorded as soon as it is asked for, so a load that crashes or times out keeps its names.

    with Oracle() as oracle:
        result = oracle.load("file.pth")   # Result(names, completed, error, jit)
        result.reached                       # names off ckpt's safe list

Standalone: python tests/interop/torch_oracle.py FILE...   (one JSON line per file)
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_PY = Path.home() / ".cache/ckpt/venv/bin/python"

PY2 = {"__builtin__": "builtins", "copy_reg": "copyreg"}


def _rust_strings(path, const):
    """The string literals of one `const` table in a ckpt source file."""
    text = (ROOT / path).read_text()
    body = text.split(f"pub const {const}", 1)[1].split("];", 1)[0]
    return set(re.findall(r'"([a-zA-Z_][\w.]*)"', body))


# ckpt's safe lists (checkpoint context): torch's weights_only allow-list as ckpt copies it,
# its documented benign classes and its known torch_npu names; numpy.dtypes.<X>DType classes.
WEIGHTS_ONLY = _rust_strings("crates/formats/src/torch/allowlist.rs", "WEIGHTS_ONLY_GLOBALS")
BENIGN = {s for s in _rust_strings("src/security/rules.rs", "BENIGN: &[Rule]")
          if "." in s and " " not in s}
TORCH_NPU = _rust_strings("src/security/rules.rs", "TORCH_NPU")
SAFE = WEIGHTS_ONLY | BENIGN | TORCH_NPU
NUMPY_DTYPES = ("numpy.dtypes.",)
# The names the recording unpickler resolves to the real object (so tensors rebuild):
# torch's allow-list, plus torch_npu's names when the fake torch_npu is installed.
REAL = WEIGHTS_ONLY | {"torch.torch_version.TorchVersion", "argparse.Namespace"}


def dotted(module, name):
    return f"{PY2.get(module, module)}.{name}"


def is_safe(module, name):
    """Whether ckpt's checkpoint-context safe list names this global (the TorchScript-only
    names, `__torch__.*` and `torch.jit._pickle.*`, are not safe here: outside a real
    TorchScript archive torch unpickles them with Python's pickle)."""
    path = dotted(module, name)
    if PY2.get(module, module) in ("os", "posix", "nt", "sys"):
        return False
    if path in SAFE:
        return True
    return any(path.startswith(p) and path[len(p):].endswith("DType")
               and "." not in path[len(p):] for p in NUMPY_DTYPES)


@dataclass
class Result:
    names: list = field(default_factory=list)  # dotted names, in the order asked for
    completed: bool = False                    # torch.load returned
    error: str | None = None                   # why it did not
    jit: bool = False                          # torch.load dispatched to torch.jit.load
    reached: list = field(default_factory=list)  # the names off ckpt's safe lists

    def to_json(self):
        return {"names": self.names, "completed": self.completed, "error": self.error,
                "jit": self.jit, "reached": self.reached}


# ------------------------------------------------------------------ the worker side
def _recorder(log, real=REAL):
    """A pickle module whose Unpickler records names to `log` (a line-buffered file) and
    resolves the names in `real` to the real objects, every other name to an inert stub."""
    import pickle
    import types

    class AnySetstate:
        """`__setstate__` on the stub class and on its instances alike (BUILD may target
        either): takes the state, does nothing."""

        def __get__(self, obj, cls=None):
            return lambda *state: None

    class Inert:
        """Stands for any global off the safe list: takes everything, does nothing."""

        __setstate__ = AnySetstate()

        def __init__(self, *args, **kwargs):
            pass

        def __call__(self, *args, **kwargs):
            return Inert()

        def __getattr__(self, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return Inert()

        def __setitem__(self, key, value):
            pass

        def __reduce__(self):
            return (Inert, ())

        def append(self, item):
            pass

        def extend(self, items):
            pass

    def stub(module, name):
        return type(f"Inert[{module}.{name}]", (Inert,), {})

    class Unpickler(pickle.Unpickler):
        def find_class(self, module, name):
            log.write("N\t" + json.dumps([module, name]) + "\n")
            log.flush()
            if dotted(module, name) in real:
                return super().find_class(module, name)
            return stub(module, name)

    def load(file, **kwargs):
        return Unpickler(file, **kwargs).load()

    def loads(data, **kwargs):
        import io
        return Unpickler(io.BytesIO(data), **kwargs).load()

    mod = types.ModuleType("pickle")
    mod.Unpickler = Unpickler
    mod.Pickler = pickle.Pickler
    mod.load = load
    mod.loads = loads
    mod.__version__ = "oracle"
    return mod


def _child(path, out, timeout, encoding, fake_npu):
    """In the forked child: load `path`, writing records to `out`; never returns."""
    code = 0
    try:
        import warnings
        warnings.simplefilter("ignore")
        import torch
        log = open(out, "a", buffering=1)
        real_jit_load = torch.jit.load

        def jit_load(*args, **kwargs):
            log.write("J\n")
            log.flush()
            return real_jit_load(*args, **kwargs)

        torch.jit.load = jit_load
        real = REAL
        if fake_npu:
            sys.path.insert(0, str(ROOT / "fixtures"))
            import _devices
            _devices.install_fake_torch_npu()
            real = REAL | TORCH_NPU
        signal.alarm(max(1, int(timeout)))
        try:
            torch.load(path, weights_only=False, pickle_module=_recorder(log, real),
                       map_location="cpu", encoding=encoding)
            signal.alarm(0)
            log.write("D\n")
        except BaseException as e:  # noqa: BLE001 - any failure is a result
            signal.alarm(0)
            msg = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
            log.write(f"E\t{msg}\n")
        log.flush()
    except BaseException:  # noqa: BLE001
        code = 1
    os._exit(code)


def _alarm(signum, frame):
    raise TimeoutError("torch.load timed out")


def worker():
    """Reads one JSON request a line on stdin ({path, timeout, encoding}); answers one JSON
    line per request on stdout."""
    import warnings
    warnings.simplefilter("ignore")
    import torch  # noqa: F401  (imported once, before the forks)
    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, _alarm)
    for line in sys.stdin:
        req = json.loads(line)
        path, timeout = req["path"], float(req["timeout"])
        with tempfile.TemporaryDirectory(prefix="oracle-") as tmp:
            out = os.path.join(tmp, ".record")
            cwd = os.path.join(tmp, "cwd")
            os.mkdir(cwd)
            pid = os.fork()
            if pid == 0:
                os.chdir(cwd)
                os.environ["TMPDIR"] = cwd
                tempfile.tempdir = cwd
                _child(os.path.abspath(path), out, timeout, req.get("encoding") or "utf-8",
                       req.get("fake_npu", False))
            deadline = time.monotonic() + timeout + 5
            status = None
            while time.monotonic() < deadline:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                time.sleep(0.002)
            else:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = None
            result = Result()
            lines = open(out).read().splitlines() if os.path.exists(out) else []
            for rec in lines:
                kind, _, rest = rec.partition("\t")
                rest = [rest]
                if kind == "N":
                    try:
                        module, name = json.loads(rest[0])
                    except ValueError:   # a record the child did not finish writing
                        continue
                    result.names.append(dotted(module, name))
                    if not (isinstance(module, str) and isinstance(name, str)
                            and is_safe(module, name)):
                        result.reached.append(dotted(module, name))
                elif kind == "J":
                    result.jit = True
                elif kind == "D":
                    result.completed = True
                elif kind == "E":
                    result.error = rest[0]
            if not result.completed and result.error is None:
                result.error = ("killed after timeout" if status is None
                                else f"child died (status {status})")
            print(json.dumps(result.to_json()), flush=True)


# ------------------------------------------------------------------ the caller side
class Oracle:
    """One worker process (torch imported once); `load(path)` forks a child per file."""

    def __init__(self, python=None, timeout=30):
        self.timeout = timeout
        import importlib.util
        has_torch = importlib.util.find_spec("torch") is not None
        self.python = python or os.environ.get("ORACLE_PYTHON") or (
            sys.executable if has_torch or not VENV_PY.exists() else str(VENV_PY))
        self.start()

    def start(self):
        """(Re)starts the worker (after it died, say)."""
        self.proc = subprocess.Popen(
            [self.python, "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                       "import torch_oracle; torch_oracle.worker()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def load(self, path, timeout=None, encoding=None, fake_npu=False):
        """torch.load(path) recorded; `encoding` as torch.load's (latin1 for Python 2 files);
        `fake_npu` installs the fixtures' stub torch_npu (fixtures/_devices.py) first."""
        timeout = timeout or self.timeout
        req = {"path": os.path.abspath(path), "timeout": timeout, "encoding": encoding,
               "fake_npu": fake_npu}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout + 120)
        if not ready:
            raise RuntimeError(f"oracle worker did not answer for {path}")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"oracle worker died on {path}")
        j = json.loads(line)
        return Result(j["names"], j["completed"], j["error"], j["jit"], j["reached"])

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main():
    with Oracle() as oracle:
        for path in sys.argv[1:]:
            print(json.dumps({"file": path, **oracle.load(path).to_json()}))


if __name__ == "__main__":
    main()
