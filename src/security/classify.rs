//! Classifying one pickle global as safe, unknown or dangerous.
//!
//! A global is compared by its full dotted path, `module.name` after Python 2 spellings are
//! mapped ([`Global::canonical`]: `__builtin__` → `builtins`, `copy_reg` → `copyreg`). A
//! dotted `name` (protocol 4 resolves `STACK_GLOBAL('torch', 'hub.load')` attribute by
//! attribute) therefore lands on the same path as the plain spelling.

use crate::pickle::Global;
use crate::torch::allowlist;

/// How a global is judged. Ordered: `Safe < Unknown < Dangerous`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// On torch's weights_only allow-list, a known torch_npu name, or a TorchScript
    /// archive-internal name inside a TorchScript archive.
    Safe,
    /// Neither safe nor known to be dangerous: loading it needs `weights_only=False`, which
    /// imports it and may call it.
    Unknown,
    /// In [`DANGEROUS`]: importing or calling it can run commands, code, or touch files,
    /// processes or the network.
    Dangerous,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Safe => "safe",
            Class::Unknown => "unknown",
            Class::Dangerous => "dangerous",
        }
    }
}

/// Where a pickle sits, which changes what is safe in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// A `torch.save` file, a legacy stream, a tar checkpoint, a plain pickle.
    Checkpoint,
    /// A pickle inside a TorchScript archive (one that has `constants.pkl`): `torch.jit.load`
    /// resolves `__torch__.*` classes against the archive's own code and `torch.jit._pickle.*`
    /// helpers natively, without importing Python modules.
    TorchScript,
}

/// One row of [`DANGEROUS`]: a dotted path that matches itself and everything below it.
#[derive(Clone, Copy, Debug)]
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
];

/// torch_npu names that checkpoints saved on Ascend carry (`remap` replaces them).
const TORCH_NPU_SAFE: [&str; 2] = [
    "torch_npu.utils.storage._rebuild_npu_tensor",
    "torch_npu.npu._format.Format",
];

/// The verdict on one global, with the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub class: Class,
    pub why: &'static str,
}

/// The full dotted path of a global, Python 2 module names mapped.
pub fn dotted(global: &Global) -> String {
    global.canonical().to_string()
}

/// The [`DANGEROUS`] rule that covers `path`, if any.
pub fn dangerous_rule(path: &str) -> Option<&'static Rule> {
    DANGEROUS.iter().find(|r| {
        path.strip_prefix(r.path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    })
}

/// Classifies `global` found in a pickle in `context`. Dangerous wins over every safe rule.
pub fn classify(global: &Global, context: Context) -> Verdict {
    let path = dotted(global);
    if let Some(rule) = dangerous_rule(&path) {
        return Verdict {
            class: Class::Dangerous,
            why: rule.why,
        };
    }
    let safe = |why| Verdict {
        class: Class::Safe,
        why,
    };
    if allowlist::is_allowed(global) {
        return safe("on torch's weights_only allow-list");
    }
    if TORCH_NPU_SAFE.contains(&path.as_str()) {
        return safe("torch_npu tensor rebuild (a known Ascend name)");
    }
    let module = global.canonical().module;
    let archive_internal =
        module == "__torch__" || module.starts_with("__torch__.") || module == "torch.jit._pickle";
    if context == Context::TorchScript && archive_internal {
        return safe("TorchScript archive-internal name");
    }
    Verdict {
        class: Class::Unknown,
        why: "not on torch's weights_only allow-list",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(module: &str, name: &str) -> Class {
        classify(&Global::new(module, name), Context::Checkpoint).class
    }

    #[test]
    fn classic_payloads_are_dangerous() {
        for (m, n) in [
            ("os", "system"),
            ("posix", "system"),
            ("nt", "system"),
            ("subprocess", "Popen"),
            ("__builtin__", "eval"),
            ("builtins", "exec"),
            ("builtins", "getattr"),
            ("runpy", "_run_code"),
            ("torch", "load"),
            ("torch.hub", "load"),
            ("torch", "hub.load"),
            ("torch.jit", "load"),
            ("torch._C", "_load_for_lite_interpreter"),
            ("os.path", "join"),
            ("commands", "getoutput"),
            ("webbrowser", "open"),
            ("_io", "FileIO"),
            ("torch.fx.graph_module", "reduce_graph_module"),
        ] {
            assert_eq!(class(m, n), Class::Dangerous, "{m}.{n}");
        }
    }

    #[test]
    fn prefixes_match_whole_components_only() {
        assert_eq!(class("sysconfig", "get_paths"), Class::Unknown);
        assert_eq!(class("osx", "thing"), Class::Unknown);
        assert_eq!(class("torch.loader", "x"), Class::Unknown);
    }

    #[test]
    fn allow_list_and_npu_are_safe_and_modules_unknown() {
        assert_eq!(class("torch._utils", "_rebuild_tensor_v2"), Class::Safe);
        assert_eq!(class("__builtin__", "set"), Class::Safe);
        assert_eq!(
            class("torch_npu.utils.storage", "_rebuild_npu_tensor"),
            Class::Safe
        );
        assert_eq!(class("argparse", "Namespace"), Class::Unknown);
        assert_eq!(class("torch.nn.modules.conv", "Conv2d"), Class::Unknown);
        assert_eq!(class("collections", "OrderedDict.fromkeys"), Class::Unknown);
        assert_eq!(class("copy_reg", "_reconstructor"), Class::Unknown);
        assert_eq!(class("pathlib", "PosixPath"), Class::Unknown);
    }

    #[test]
    fn torchscript_names_are_safe_only_in_torchscript() {
        let g = Global::new("__torch__.torch.nn.modules.conv", "Conv2d");
        assert_eq!(classify(&g, Context::Checkpoint).class, Class::Unknown);
        assert_eq!(classify(&g, Context::TorchScript).class, Class::Safe);
        let tag = Global::new("torch.jit._pickle", "restore_type_tag");
        assert_eq!(classify(&tag, Context::TorchScript).class, Class::Safe);
        let evil = Global::new("os", "system");
        assert_eq!(
            classify(&evil, Context::TorchScript).class,
            Class::Dangerous
        );
    }
}
