//! A checkpoint being rewritten step by step: the graph transforms of `ckpt convert` and
//! `ckpt batch`, applied in whatever order the caller chooses, then written out.
//!
//! Invariant: [`Rewrite::graph`] references only storages of the checkpoint it was made from,
//! and its storage types differ from the source's only where [`Rewrite::plan`] casts them
//! (the one step that changes bytes, [`Rewrite::cast`], may run once).

use std::path::Path;

use ckpt_formats::torch::save::StoragePlan;
use ckpt_formats::torch::state_dict::find_state_dicts;
use ckpt_formats::torch::{self, Checkpoint, DType, LocationMap, OutputFormat, TorchError};
use ckpt_formats::transform::{
    cast_floating, convert_amp, make_plain, remap, select, strip_state_dict, AmpConverted, AmpKind,
    CastScope, Plain, PrefixRule, Remapped, TransformError,
};
use ckpt_pickle::{Graph, NodeId};

/// The rewritten structure of one checkpoint and the byte-level plan for writing it: the
/// steps of `ckpt strip-module`, `remap`, `amp --to` and `convert`, in the order called, then
/// one [`Rewrite::save`].
///
/// ```
/// use ckpt::{Location, LocationMap, OutputFormat, PrefixRule, Rewrite};
///
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
/// let mut opened = ckpt::open(&fixtures.join("zip_dataparallel_sd.pth"))?;
/// let mut rewrite = Rewrite::new(&opened.checkpoint);
/// let stripped = rewrite.strip_module(&PrefixRule::Auto)?;
/// assert_eq!(stripped.removed, ["module."]);
/// rewrite.relocate(&LocationMap::All("cpu".parse::<Location>()?))?;
/// let out = std::env::temp_dir().join("ckpt-doctest-stripped.pth");
/// rewrite.save(&mut opened.checkpoint, OutputFormat::Zip, &out)?;
/// assert!(ckpt::inspect(&out)?.prefixes.is_empty());
/// # std::fs::remove_file(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Rewrite {
    /// The rewritten object graph.
    pub graph: Graph,
    /// The object the checkpoint is (after [`Rewrite::extract`], the extracted mapping).
    pub root: NodeId,
    /// How each storage's bytes are written: copied, or cast by [`Rewrite::cast`].
    pub plan: StoragePlan,
}

/// What stripping wrapper prefixes did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stripped {
    /// The prefixes removed, one entry per state dict that had any.
    pub removed: Vec<String>,
    /// State dicts found.
    pub state_dicts: usize,
}

impl Rewrite {
    /// An unchanged copy of `ckpt`'s structure.
    pub fn new(ckpt: &Checkpoint) -> Rewrite {
        Rewrite {
            graph: ckpt.graph.clone(),
            root: ckpt.root,
            plan: StoragePlan::copy_all(),
        }
    }

    /// Makes the mapping under top-level `key` the whole checkpoint.
    pub fn extract(&mut self, key: &str) -> Result<(), TransformError> {
        self.root = select::extract(&self.graph, self.root, key)?;
        Ok(())
    }

    /// Keeps only the named top-level keys.
    pub fn keep(&mut self, keys: &[String]) -> Result<(), TransformError> {
        select::keep(&mut self.graph, self.root, keys)
    }

    /// Removes optimizer, scheduler and AMP state; returns the keys dropped.
    pub fn drop_optimizer(&mut self) -> Result<Vec<String>, TransformError> {
        select::drop_training_state(&mut self.graph, self.root)
    }

    /// Strips wrapper prefixes from every state dict.
    pub fn strip_module(&mut self, rule: &PrefixRule) -> Result<Stripped, TransformError> {
        self.strip_module_under(self.root, rule)
    }

    /// Strips wrapper prefixes from every state dict under the top-level key `key` only.
    pub fn strip_module_in(
        &mut self,
        key: &str,
        rule: &PrefixRule,
    ) -> Result<Stripped, TransformError> {
        let start = self
            .graph
            .lookup(self.root, key)
            .ok_or_else(|| TransformError::Request(format!("there is no top-level key `{key}`")))?;
        self.strip_module_under(start, rule)
    }

    fn strip_module_under(
        &mut self,
        start: NodeId,
        rule: &PrefixRule,
    ) -> Result<Stripped, TransformError> {
        let state_dicts = find_state_dicts(&self.graph, start)?;
        let mut removed = Vec::new();
        for sd in &state_dicts {
            let prefixes = strip_state_dict(&mut self.graph, *sd, rule)?;
            if !prefixes.is_empty() {
                removed.push(prefixes.concat());
            }
        }
        Ok(Stripped {
            removed,
            state_dicts: state_dicts.len(),
        })
    }

    /// Rewrites storage locations (and torch_npu rebuilds) as `map` says.
    pub fn relocate(&mut self, map: &LocationMap) -> Result<Remapped, TransformError> {
        remap(&mut self.graph, self.root, map)
    }

    /// Converts the AMP loss-scaler state to `kind`.
    pub fn amp(
        &mut self,
        kind: AmpKind,
        scaler: Option<u32>,
    ) -> Result<AmpConverted, TransformError> {
        convert_amp(&mut self.graph, self.root, kind, scaler)
    }

    /// Casts floating-point tensors to `dtype`; returns the number of tensors cast. Refused
    /// when a cast is already planned (a second cast would need the bytes of the first), and
    /// after [`Rewrite::plain`] made new storages (cast first).
    pub fn cast(&mut self, dtype: DType, scope: CastScope) -> Result<usize, TransformError> {
        if self.plan.new_storages() > 0 {
            return Err(TransformError::Request(
                "a dtype cast after the plain rewrite; cast first".into(),
            ));
        }
        if !self.plan.is_empty() {
            return Err(TransformError::Request(
                "a dtype cast is already planned; cast once".into(),
            ));
        }
        let done = cast_floating(&mut self.graph, self.root, dtype, scope)?;
        self.plan = done.plan;
        Ok(done.tensors)
    }

    /// Rewrites every object torch's `weights_only=True` loader refuses into plain values
    /// (see [`make_plain`]), so a default `torch.load` reads the output; numpy arrays become
    /// tensors over new storages the save writes (moved into [`Rewrite::plan`]: the returned
    /// [`Plain::storages`] is empty). On error nothing is changed.
    pub fn plain(&mut self) -> Result<Plain, TransformError> {
        let mut done = make_plain(&mut self.graph, self.root)?;
        for (key, bytes) in std::mem::take(&mut done.storages) {
            self.plan.add_new(&key, bytes);
        }
        Ok(done)
    }

    /// Writes the rewritten checkpoint to `out` (atomically), its storages taken from
    /// `source`, the checkpoint this rewrite was made from.
    pub fn save(
        &self,
        source: &mut Checkpoint,
        format: OutputFormat,
        out: &Path,
    ) -> Result<(), TorchError> {
        torch::save(
            source,
            self.graph.clone(),
            self.root,
            format,
            out,
            &self.plan,
        )
    }

    /// Runs `f` on `source` seen through this rewrite: its graph, root and scan replaced by
    /// the rewritten ones for the duration (and restored after), so readers of tensor bytes
    /// (ONNX export, safetensors) see the rewritten structure. Refused while a cast is
    /// planned, since the bytes would not match the types; write the checkpoint and reopen
    /// it first. Likewise while the plain rewrite's new storages wait to be written.
    pub fn view<T>(
        &mut self,
        source: &mut Checkpoint,
        f: impl FnOnce(&mut Checkpoint) -> T,
    ) -> Result<T, TorchError> {
        if !self.plan.is_empty() {
            return Err(TorchError::Unsupported {
                what: "reading tensors through a planned dtype cast or plain rewrite".into(),
            });
        }
        let scan = torch::scan(&self.graph, self.root)?;
        std::mem::swap(&mut source.graph, &mut self.graph);
        std::mem::swap(&mut source.root, &mut self.root);
        let original_scan = std::mem::replace(&mut source.scan, scan);
        let result = f(source);
        std::mem::swap(&mut source.graph, &mut self.graph);
        std::mem::swap(&mut source.root, &mut self.root);
        source.scan = original_scan;
        Ok(result)
    }
}

/// The output container for `format` (`zip`, `legacy`), or the input's when `None`.
pub fn output_format(
    format: Option<&str>,
    input: torch::Format,
) -> Result<OutputFormat, TorchError> {
    match format {
        Some("legacy") => Ok(OutputFormat::Legacy),
        Some("zip") => Ok(OutputFormat::Zip),
        Some(other) => Err(TorchError::Unsupported {
            what: format!("the output format `{other}` (use zip or legacy)"),
        }),
        None => OutputFormat::same_as(input),
    }
}
