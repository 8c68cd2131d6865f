//! Where a checkpoint keeps its AMP loss-scaler state, and in which shape.

use ckpt_pickle::{Graph, NodeId, Value};

/// Top-level keys training code commonly stores a scaler under, in the order we look.
pub const AMP_KEYS: [&str; 6] = [
    "amp",
    "scaler",
    "grad_scaler",
    "amp_scaler",
    "native_amp_scaling_state",
    "amp_scaling_state",
];

/// The keys of `torch.amp.GradScaler.state_dict()` when enabled.
pub const NATIVE_KEYS: [&str; 5] = [
    "scale",
    "growth_factor",
    "backoff_factor",
    "growth_interval",
    "_growth_tracker",
];

/// The shape of a loss-scaler state.
#[derive(Clone, Debug, PartialEq)]
pub enum AmpState {
    /// `torch.amp.GradScaler` / `torch.cuda.amp.GradScaler`.
    Native(NativeScaler),
    /// torch_npu's GradScaler: the native fields plus `dynamic`.
    Npu {
        /// The native fields.
        scaler: NativeScaler,
        /// Whether the scale is dynamic.
        dynamic: bool,
    },
    /// apex `amp.state_dict()`: one `loss_scalerN` entry per loss.
    Apex(Vec<ApexScaler>),
    /// A disabled GradScaler saves `{}`.
    Disabled,
}

impl AmpState {
    /// `native`, `npu`, `apex` or `disabled`, as reports print it.
    pub fn kind(&self) -> &'static str {
        match self {
            AmpState::Native(_) => "native",
            AmpState::Npu { .. } => "npu",
            AmpState::Apex(_) => "apex",
            AmpState::Disabled => "disabled",
        }
    }
}

/// torch's `GradScaler.state_dict()`, by its keys.
#[derive(Clone, Debug, PartialEq)]
pub struct NativeScaler {
    /// `scale`.
    pub scale: f64,
    /// `growth_factor`.
    pub growth_factor: f64,
    /// `backoff_factor`.
    pub backoff_factor: f64,
    /// `growth_interval`.
    pub growth_interval: i64,
    /// `_growth_tracker`.
    pub growth_tracker: i64,
}

/// One apex loss scaler (`loss_scalerN`).
#[derive(Clone, Debug, PartialEq)]
pub struct ApexScaler {
    /// `loss_scaler0` → 0.
    pub index: u32,
    /// `loss_scale`.
    pub loss_scale: f64,
    /// `unskipped`.
    pub unskipped: i64,
}

/// An AMP state and where it is: the path of keys from the top-level object.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundAmp {
    /// The keys from the top-level object to the state.
    pub path: Vec<String>,
    /// The state's node in the graph.
    pub node: NodeId,
    /// The state read.
    pub state: AmpState,
}

/// Finds the AMP state: first under the well-known top-level keys (where `{}` means a disabled
/// scaler), then any mapping of a recognised shape one or two levels down.
pub fn find(graph: &Graph, root: NodeId) -> Option<FoundAmp> {
    for key in AMP_KEYS {
        if let Some(node) = graph.lookup(root, key) {
            let state = match graph.mapping(node) {
                Some([]) => Some(AmpState::Disabled),
                _ => parse(graph, node),
            };
            if let Some(state) = state {
                return Some(FoundAmp {
                    path: vec![key.to_owned()],
                    node,
                    state,
                });
            }
        }
    }
    search(graph, root, &mut Vec::new(), 2)
}

fn search(graph: &Graph, node: NodeId, path: &mut Vec<String>, depth: usize) -> Option<FoundAmp> {
    if !path.is_empty() {
        if let Some(state) = parse(graph, node) {
            return Some(FoundAmp {
                path: path.clone(),
                node,
                state,
            });
        }
    }
    if depth == 0 {
        return None;
    }
    for &(key, value) in graph.mapping(node)? {
        let Some(key) = graph.str(key) else { continue };
        path.push(key.to_owned());
        let found = search(graph, value, path, depth - 1);
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The AMP state a mapping holds, if it has one of the three shapes.
pub fn parse(graph: &Graph, node: NodeId) -> Option<AmpState> {
    let pairs = graph.mapping(node)?;
    if pairs.is_empty() {
        return None;
    }
    let number = |key: &str| graph.lookup(node, key).and_then(|v| as_f64(graph, v));
    let integer = |key: &str| graph.lookup(node, key).and_then(|v| graph.int(v));
    if NATIVE_KEYS.iter().all(|k| graph.lookup(node, k).is_some()) {
        let scaler = NativeScaler {
            scale: number("scale")?,
            growth_factor: number("growth_factor")?,
            backoff_factor: number("backoff_factor")?,
            growth_interval: integer("growth_interval")?,
            growth_tracker: integer("_growth_tracker")?,
        };
        return Some(match graph.lookup(node, "dynamic").map(|v| graph.get(v)) {
            Some(Value::Bool(dynamic)) => AmpState::Npu {
                scaler,
                dynamic: *dynamic,
            },
            _ => AmpState::Native(scaler),
        });
    }
    let mut scalers = Vec::new();
    for &(key, value) in pairs {
        let index = graph
            .str(key)?
            .strip_prefix("loss_scaler")?
            .parse::<u32>()
            .ok()?;
        scalers.push(ApexScaler {
            index,
            loss_scale: graph
                .lookup(value, "loss_scale")
                .and_then(|v| as_f64(graph, v))?,
            unskipped: graph
                .lookup(value, "unskipped")
                .and_then(|v| graph.int(v))?,
        });
    }
    Some(AmpState::Apex(scalers))
}

fn as_f64(graph: &Graph, node: NodeId) -> Option<f64> {
    match graph.get(node) {
        Value::Float(f) => Some(*f),
        Value::Int(i) => Some(*i as f64),
        _ => None,
    }
}
