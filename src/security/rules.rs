//! The tables verdicts are made from: [`DANGEROUS`] (named with a reason) and [`BENIGN`]
//! (classes real checkpoints carry that torch's allow-list lacks, each with why constructing
//! it cannot run code). torch's own allow-list is [`ckpt_formats::torch::allowlist`].

/// One row of a table: a dotted path and the reason for its verdict. In [`DANGEROUS`] a path
/// matches itself and everything below it; in [`BENIGN`] it matches itself only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub path: &'static str,
    pub why: &'static str,
}

const fn rule(path: &'static str, why: &'static str) -> Rule {
    Rule { path, why }
}

const SHELL: &str = "runs commands or spawns processes";
const CODE: &str = "executes or compiles Python code";
const IMPORT: &str = "imports or resolves arbitrary names (reaches any other global)";
const FILES: &str = "opens, writes or deletes files";
const NET: &str = "opens network connections";
const UNPICKLE: &str = "loads another pickle or serialized code (a nested payload)";
const LOADER: &str = "loads a model file, which unpickles or runs code";
const INTERP: &str = "changes or exposes the interpreter (modules, debugger, native calls)";

/// Globals whose import or call is dangerous, as dotted paths. A path covers itself and every
/// name under it (`os` covers `os.system` and `os.path.join`; `sys` does not cover `sysconfig`).
/// Python 2 module names are listed too, since Python 3's unpickler maps them (`commands` →
/// `subprocess`, `cPickle` → `pickle`, `urllib2` → `urllib.request`).
pub const DANGEROUS: &[Rule] = &[
    // Processes and the shell.
    rule("os", SHELL),
    rule("posix", SHELL),
    rule("nt", SHELL),
    rule("subprocess", SHELL),
    rule("commands", SHELL),
    rule("popen2", SHELL),
    rule("pty", SHELL),
    rule("multiprocessing", SHELL),
    rule("_posixsubprocess", SHELL),
    rule("asyncio", SHELL),
    rule("signal", SHELL),
    rule("platform.popen", SHELL),
    rule("uuid._get_command_stdout", SHELL),
    rule("torch.utils.collect_env.run", SHELL),
    rule("numpy.distutils", SHELL),
    rule("numpy.f2py", SHELL),
    // Code execution.
    rule("builtins.eval", CODE),
    rule("builtins.exec", CODE),
    rule("builtins.execfile", CODE),
    rule("builtins.compile", CODE),
    rule("builtins.breakpoint", CODE),
    rule("builtins.input", CODE),
    rule("builtins.__build_class__", CODE),
    rule("runpy", CODE),
    rule("code", CODE),
    rule("codeop", CODE),
    rule("timeit", CODE),
    rule("cProfile", CODE),
    rule("profile", CODE),
    rule("trace", CODE),
    rule("pdb", CODE),
    rule("bdb", CODE),
    rule("types.CodeType", CODE),
    rule("types.FunctionType", CODE),
    rule("types.LambdaType", CODE),
    rule("logging.config", CODE),
    rule("numpy.testing._private.utils.runstring", CODE),
    rule("torch.fx.graph_module._exec_with_source", CODE),
    rule("torch.fx.graph_module._forward_from_src", CODE),
    rule("torch.fx.graph_module.reduce_graph_module", CODE),
    rule("torch.fx.graph_module.reduce_package_graph_module", CODE),
    rule("torch.fx.graph_module.reduce_deploy_graph_module", CODE),
    rule("torch.jit.unsupported_tensor_ops.execWrapper", CODE),
    rule("torch._inductor.codecache", CODE),
    rule("torch.utils.cpp_extension", CODE),
    // Name resolution: a route to every other global.
    rule("builtins.getattr", IMPORT),
    rule("builtins.setattr", IMPORT),
    rule("builtins.delattr", IMPORT),
    rule("builtins.__import__", IMPORT),
    rule("builtins.globals", IMPORT),
    rule("builtins.locals", IMPORT),
    rule("builtins.vars", IMPORT),
    rule("builtins.reload", IMPORT),
    rule("builtins.apply", IMPORT),
    rule("importlib", IMPORT),
    rule("imp", IMPORT),
    rule("zipimport", IMPORT),
    rule("pkgutil", IMPORT),
    rule("pydoc", IMPORT),
    rule("site", IMPORT),
    rule("operator.attrgetter", IMPORT),
    rule("operator.methodcaller", IMPORT),
    rule("operator.itemgetter", IMPORT),
    rule("functools.partial", IMPORT),
    rule("sys", INTERP),
    rule("ctypes", INTERP),
    rule("_ctypes", INTERP),
    rule("gc", INTERP),
    // Files.
    rule("builtins.open", FILES),
    rule("builtins.file", FILES),
    rule("io.open", FILES),
    rule("io.open_code", FILES),
    rule("io.FileIO", FILES),
    rule("_io.open", FILES),
    rule("_io.open_code", FILES),
    rule("_io.FileIO", FILES),
    rule("codecs.open", FILES),
    rule("shutil", FILES),
    rule("tempfile", FILES),
    rule("fileinput", FILES),
    rule("logging.FileHandler", FILES),
    rule("logging.handlers", FILES),
    rule("zipfile", FILES),
    rule("tarfile", FILES),
    // Network.
    rule("socket", NET),
    rule("_socket", NET),
    rule("ssl", NET),
    rule("webbrowser", NET),
    rule("urllib", NET),
    rule("urllib2", NET),
    rule("http", NET),
    rule("httplib", NET),
    rule("ftplib", NET),
    rule("smtplib", NET),
    rule("telnetlib", NET),
    rule("xmlrpc", NET),
    rule("requests", NET),
    rule("aiohttp", NET),
    rule("pip", NET),
    rule("venv", NET),
    rule("ensurepip", NET),
    // Nested payloads.
    rule("pickle", UNPICKLE),
    rule("_pickle", UNPICKLE),
    rule("cPickle", UNPICKLE),
    rule("pickletools", UNPICKLE),
    rule("marshal", UNPICKLE),
    rule("shelve", UNPICKLE),
    rule("dill", UNPICKLE),
    rule("cloudpickle", UNPICKLE),
    rule("joblib", UNPICKLE),
    rule("numpy.load", UNPICKLE),
    rule("numpy.lib.npyio", UNPICKLE),
    rule("yaml.load", UNPICKLE),
    rule("yaml.unsafe_load", UNPICKLE),
    // torch loaders.
    rule("torch.load", LOADER),
    rule("torch.serialization.load", LOADER),
    rule("torch.serialization._load", LOADER),
    rule("torch.serialization._legacy_load", LOADER),
    rule("torch.hub", LOADER),
    rule("torch.jit.load", LOADER),
    rule("torch.jit._serialization", LOADER),
    rule("torch.jit.mobile", LOADER),
    rule("torch.package", LOADER),
    rule("torch._C.import_ir_module", LOADER),
    rule("torch._C.import_ir_module_from_buffer", LOADER),
    rule("torch._C._import_ir_module_from_package", LOADER),
    rule("torch._C._load_for_lite_interpreter", LOADER),
    rule("torch._C._load_for_lite_interpreter_from_buffer", LOADER),
    rule("torch._C._load_jit_module_from_bytes", LOADER),
    rule("torch._C._load_jit_module_from_file", LOADER),
    rule("torch._C._load_mobile_module_from_bytes", LOADER),
    rule("torch._C._load_mobile_module_from_file", LOADER),
    rule(
        "torch.utils._config_module.ConfigModule.load_config",
        LOADER,
    ),
    rule("torch.export.load", LOADER),
    rule("torch.export.pt2_archive", LOADER),
    rule("torch._export.serde", LOADER),
    // Gadgets in the standard library and torch that reach the rows above through a method
    // (picklescan / modelscan advisories; each calls eval/exec, a shell or a pickle loader).
    rule("idlelib", CODE),
    rule("lib2to3.pgen2", CODE),
    rule("doctest.debug_script", CODE),
    rule("doctest.debug_src", CODE),
    rule("doctest.script_from_examples", CODE),
    rule("torch.utils.bottleneck", CODE),
    rule("torch._dynamo.guards.GuardBuilder", CODE),
    rule("torch.fx.experimental.symbolic_shapes", CODE),
    rule("torch.utils.data.datapipes", UNPICKLE),
    rule("_osx_support", SHELL),
    rule("_aix_support", SHELL),
    rule("_pyrepl", SHELL),
    rule("imaplib.IMAP4_stream", SHELL),
    rule("mailcap", SHELL),
    rule("distutils", FILES),
    rule("setuptools", FILES),
    rule("_xxsubinterpreters", CODE),
    rule("_interpreters", CODE),
    rule("concurrent.interpreters", CODE),
    rule("_operator.attrgetter", IMPORT),
    rule("_operator.methodcaller", IMPORT),
    rule("_operator.itemgetter", IMPORT),
    rule("_functools", IMPORT),
    rule("numpy.lib._npyio_impl", UNPICKLE),
    rule("numpy._core.records.fromfile", FILES),
    rule("numpy.core.records.fromfile", FILES),
    rule("numpy.fromfile", FILES),
    rule("numpy.memmap", FILES),
    rule("_sitebuiltins", INTERP),
    rule("linecache", FILES),
    rule("keras", LOADER),
    rule("tensorflow", LOADER),
];

/// torch_npu names that checkpoints saved on Ascend carry (`remap` replaces them).
pub const TORCH_NPU: [&str; 2] = [
    "torch_npu.utils.storage._rebuild_npu_tensor",
    "torch_npu.npu._format.Format",
];

/// Why the `torch.distributed.checkpoint` metadata classes are benign.
const DCP_DATACLASS: &str = "a torch.distributed.checkpoint dataclass (DCP `.metadata`): construction only stores its fields";

/// Classes outside torch's allow-list that real checkpoints carry, matched exactly, each with
/// the reason building it from a pickle cannot run code. Whatever they are built from (their
/// arguments and state) is judged separately: it is part of the same pickle.
pub const BENIGN: &[Rule] = &[
    rule(
        "argparse.Namespace",
        "a plain attribute bag: construction only stores the keyword arguments it is given",
    ),
    rule(
        "numpy.core.multiarray._reconstruct",
        "numpy array reconstruction: allocates an empty array of a dtype; the bytes come from its state",
    ),
    rule(
        "numpy._core.multiarray._reconstruct",
        "numpy array reconstruction: allocates an empty array of a dtype; the bytes come from its state",
    ),
    rule(
        "numpy.ndarray",
        "the numpy array class, passed to its reconstruction function",
    ),
    rule(
        "numpy.dtype",
        "a numpy dtype, built from a type code string such as 'f4'",
    ),
    rule(
        "numpy.core.multiarray.scalar",
        "a numpy scalar, built from a dtype and its raw bytes",
    ),
    rule(
        "numpy._core.multiarray.scalar",
        "a numpy scalar, built from a dtype and its raw bytes",
    ),
    rule(
        "torch.distributed.checkpoint.metadata.Metadata",
        DCP_DATACLASS,
    ),
    rule(
        "torch.distributed.checkpoint.metadata.TensorStorageMetadata",
        DCP_DATACLASS,
    ),
    rule(
        "torch.distributed.checkpoint.metadata.BytesStorageMetadata",
        DCP_DATACLASS,
    ),
    rule(
        "torch.distributed.checkpoint.metadata.ChunkStorageMetadata",
        DCP_DATACLASS,
    ),
    rule(
        "torch.distributed.checkpoint.metadata.TensorProperties",
        DCP_DATACLASS,
    ),
    rule(
        "torch.distributed.checkpoint.metadata.MetadataIndex",
        DCP_DATACLASS,
    ),
    rule(
        "torch.distributed.checkpoint.metadata.StorageMeta",
        DCP_DATACLASS,
    ),
    rule(
        "torch.distributed.checkpoint.filesystem._StorageInfo",
        DCP_DATACLASS,
    ),
    rule(
        "torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING",
        "an Enum of three integers (DCP `.metadata`): calling it looks a member up by value",
    ),
    rule(
        "pathlib.PosixPath",
        "a path value (DCP `.metadata` records the checkpoint folder as one): construction parses the string and touches no file",
    ),
    rule(
        "pathlib.WindowsPath",
        "a path value (DCP `.metadata` records the checkpoint folder as one): construction parses the string and touches no file",
    ),
    rule(
        "torch.torch_version.TorchVersion",
        "a str subclass holding a version string (Lightning checkpoints)",
    ),
    rule(
        "deepspeed.runtime.fp16.loss_scaler.LossScaler",
        DEEPSPEED_OBJECT,
    ),
    rule(
        "deepspeed.runtime.fp16.loss_scaler.DynamicLossScaler",
        DEEPSPEED_OBJECT,
    ),
    rule(
        "deepspeed.utils.tensor_fragment.fragment_address",
        "a DeepSpeed dataclass of two integers (ZeRO optimizer states): construction only stores its fields",
    ),
    rule(
        "deepspeed.runtime.zero.config.ZeroStageEnum",
        "an Enum of the ZeRO stages (ZeRO optimizer states): calling it looks a member up by value",
    ),
];

/// Why DeepSpeed's loss scaler classes are benign.
const DEEPSPEED_OBJECT: &str = "a DeepSpeed loss scaler (ZeRO optimizer states): pickled as `__new__` plus its attribute dict, neither of which runs its code";

/// numpy ≥ 1.25 pickles a dtype through its class, `numpy.dtypes.<Kind>DType`: classes that
/// take no arguments, benign for the same reason as `numpy.dtype`.
pub const NUMPY_DTYPE_CLASSES: &str = "numpy.dtypes.";
