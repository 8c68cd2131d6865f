//! Converting the AMP loss-scaler state between apex, `torch.amp.GradScaler` and torch_npu.
//!
//! The three shapes (see [`crate::torch::amp`]):
//! - apex `amp.state_dict()`: `OrderedDict([('loss_scaler0', {'loss_scale': float,
//!   'unskipped': int}), …])`, with a fixed dynamic policy (×2 growth, ×0.5 backoff, 2000 steps);
//! - native `GradScaler.state_dict()`: the plain dict `{'scale', 'growth_factor',
//!   'backoff_factor', 'growth_interval', '_growth_tracker'}`, in that order;
//! - torch_npu: native plus `'dynamic': True` (its `load_state_dict` requires the key).
//!
//! `loss_scale` ↔ `scale` and `unskipped` ↔ `_growth_tracker`. The conversion replaces the
//! value of the AMP node with newly built nodes and touches nothing else. A disabled
//! GradScaler (`{}`) has no scale, and one is never invented.

use std::fmt;
use std::str::FromStr;

use crate::torch::amp::{self, AmpState, ApexScaler, NativeScaler};
use ckpt_pickle::{Constructor, Global, Graph, NodeId, Object, Value};

use super::TransformError;

/// apex's dynamic loss-scaling policy, which its state does not record.
pub const APEX_GROWTH_FACTOR: f64 = 2.0;
pub const APEX_BACKOFF_FACTOR: f64 = 0.5;
pub const APEX_GROWTH_INTERVAL: i64 = 2000;

/// The shape to convert to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmpKind {
    /// `torch.cuda.amp.GradScaler` / `torch.amp.GradScaler` state.
    Native,
    /// NVIDIA apex `amp.state_dict()`.
    Apex,
    /// Ascend `torch_npu` loss-scaler state.
    Npu,
}

impl AmpKind {
    /// The name the CLI and reports use: `native`, `apex` or `npu`.
    pub fn name(self) -> &'static str {
        match self {
            AmpKind::Native => "native",
            AmpKind::Apex => "apex",
            AmpKind::Npu => "npu",
        }
    }
}

impl fmt::Display for AmpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AmpKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "native" => Ok(AmpKind::Native),
            "apex" => Ok(AmpKind::Apex),
            "npu" => Ok(AmpKind::Npu),
            other => Err(format!(
                "unknown AMP kind `{other}` (use native, apex or npu)"
            )),
        }
    }
}

/// What a conversion did.
#[derive(Clone, Debug, PartialEq)]
pub struct AmpConverted {
    /// Key path of the AMP state from the top-level object.
    pub path: Vec<String>,
    /// The kind it had (`native`, `apex`, `npu`).
    pub from: &'static str,
    /// The kind it has now.
    pub to: AmpKind,
    /// `(loss scale, growth tracker)` carried over; `None` when the state already had the
    /// requested kind, and the graph is unchanged.
    pub carried: Option<(f64, i64)>,
    /// What the target shape cannot represent, and the conversion therefore dropped.
    pub warnings: Vec<String>,
}

/// The kind-independent content of a dynamic loss scaler.
struct Scaler {
    scale: f64,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: i64,
    growth_tracker: i64,
    dynamic: bool,
}

/// Converts the AMP state found by `amp::find` to `to`. `scaler` picks one of several apex
/// loss scalers (`loss_scalerN`); without it, several are an error listing them. A state that
/// already has kind `to` is left as it is.
///
/// Errors, with the graph untouched: no AMP state, a disabled scaler, a missing
/// `loss_scalerN`, several apex scalers and no `scaler`, `scaler` given for a non-apex state.
pub fn convert_amp(
    graph: &mut Graph,
    root: NodeId,
    to: AmpKind,
    scaler: Option<u32>,
) -> Result<AmpConverted, TransformError> {
    let found = amp::find(graph, root).ok_or_else(|| {
        TransformError::Request(format!(
            "no AMP loss-scaler state found (looked under {} and for any mapping of a GradScaler or apex shape)",
            amp::AMP_KEYS.map(|k| format!("`{k}`")).join(", ")
        ))
    })?;
    let at = found.path.join("/");
    let from = found.state.kind();
    if scaler.is_some() && !matches!(found.state, AmpState::Apex(_)) {
        return Err(TransformError::Request(format!(
            "--scaler picks one of several apex loss scalers, but the AMP state at `{at}` is {from}"
        )));
    }
    let source = match &found.state {
        AmpState::Disabled => {
            return Err(TransformError::Request(format!(
                "the AMP state at `{at}` is a disabled GradScaler (`{{}}`): it holds no loss scale to convert"
            )))
        }
        AmpState::Native(s) => from_native(s, true),
        AmpState::Npu { scaler, dynamic } => from_native(scaler, *dynamic),
        AmpState::Apex(scalers) => from_apex(pick(scalers, scaler, &at)?),
    };
    let mut converted = AmpConverted {
        path: found.path.clone(),
        from,
        to,
        carried: None,
        warnings: Vec::new(),
    };
    if from == to.name() {
        return Ok(converted);
    }
    converted.carried = Some((source.scale, source.growth_tracker));
    if to == AmpKind::Apex && !has_apex_policy(&source) {
        converted.warnings.push(format!(
            "apex always grows x{APEX_GROWTH_FACTOR} after {APEX_GROWTH_INTERVAL} good steps and backs off x{APEX_BACKOFF_FACTOR}; \
             the source's growth_factor {}, backoff_factor {} and growth_interval {} are not kept",
            source.growth_factor, source.backoff_factor, source.growth_interval
        ));
    }
    if !source.dynamic {
        converted.warnings.push(format!(
            "the torch_npu scaler was static (`dynamic: False`); a {to} scaler is always dynamic"
        ));
    }
    let value = match to {
        AmpKind::Apex => apex_value(graph, &source),
        AmpKind::Native => native_value(graph, &source, false),
        AmpKind::Npu => native_value(graph, &source, true),
    };
    graph.set(found.node, value);
    Ok(converted)
}

fn from_native(s: &NativeScaler, dynamic: bool) -> Scaler {
    Scaler {
        scale: s.scale,
        growth_factor: s.growth_factor,
        backoff_factor: s.backoff_factor,
        growth_interval: s.growth_interval,
        growth_tracker: s.growth_tracker,
        dynamic,
    }
}

/// One apex loss scaler under apex's fixed dynamic policy.
fn from_apex(s: &ApexScaler) -> Scaler {
    Scaler {
        scale: s.loss_scale,
        growth_factor: APEX_GROWTH_FACTOR,
        backoff_factor: APEX_BACKOFF_FACTOR,
        growth_interval: APEX_GROWTH_INTERVAL,
        growth_tracker: s.unskipped,
        dynamic: true,
    }
}

/// The apex loss scaler `wanted`, or the only one.
fn pick<'a>(
    scalers: &'a [ApexScaler],
    wanted: Option<u32>,
    at: &str,
) -> Result<&'a ApexScaler, TransformError> {
    let names = || {
        scalers
            .iter()
            .map(|s| {
                format!(
                    "loss_scaler{} (loss_scale {:?}, unskipped {})",
                    s.index, s.loss_scale, s.unskipped
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (wanted, scalers) {
        (Some(n), _) => scalers.iter().find(|s| s.index == n).ok_or_else(|| {
            TransformError::Request(format!(
                "the apex state at `{at}` has no loss_scaler{n}; it has {}",
                names()
            ))
        }),
        (None, [only]) => Ok(only),
        (None, _) => Err(TransformError::Request(format!(
            "the apex state at `{at}` has {} loss scalers: {}; choose one with --scaler N",
            scalers.len(),
            names()
        ))),
    }
}

fn has_apex_policy(s: &Scaler) -> bool {
    s.growth_factor == APEX_GROWTH_FACTOR
        && s.backoff_factor == APEX_BACKOFF_FACTOR
        && s.growth_interval == APEX_GROWTH_INTERVAL
}

fn str_key(graph: &mut Graph, key: &str, value: Value) -> (NodeId, NodeId) {
    (graph.add(Value::Str(key.to_owned())), graph.add(value))
}

/// `GradScaler.state_dict()`: a plain dict in torch's key order, floats as floats and ints as
/// ints; torch_npu's adds `'dynamic': True` last.
fn native_value(graph: &mut Graph, s: &Scaler, npu: bool) -> Value {
    let mut pairs = vec![
        str_key(graph, "scale", Value::Float(s.scale)),
        str_key(graph, "growth_factor", Value::Float(s.growth_factor)),
        str_key(graph, "backoff_factor", Value::Float(s.backoff_factor)),
        str_key(graph, "growth_interval", Value::Int(s.growth_interval)),
        str_key(graph, "_growth_tracker", Value::Int(s.growth_tracker)),
    ];
    if npu {
        pairs.push(str_key(graph, "dynamic", Value::Bool(true)));
    }
    Value::Dict(pairs)
}

/// apex `amp.state_dict()` for one loss: `OrderedDict([('loss_scaler0', {'loss_scale': float,
/// 'unskipped': int})])`, pickled as `OrderedDict()` plus `SETITEMS`, as Python does.
fn apex_value(graph: &mut Graph, s: &Scaler) -> Value {
    let inner = vec![
        str_key(graph, "loss_scale", Value::Float(s.scale)),
        str_key(graph, "unskipped", Value::Int(s.growth_tracker)),
    ];
    let entry = str_key(graph, "loss_scaler0", Value::Dict(inner));
    let callable = graph.add(Value::Global(Global::new("collections", "OrderedDict")));
    let args = graph.add(Value::Tuple(Vec::new()));
    let mut object = Object::new(Constructor::Reduce { callable, args });
    object.dict_items.push(entry);
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(graph: &mut Graph, items: Vec<(&str, Value)>) -> NodeId {
        let pairs = items
            .into_iter()
            .map(|(k, v)| str_key(graph, k, v))
            .collect();
        graph.add(Value::Dict(pairs))
    }

    /// `{'epoch': 3, key: state}`.
    fn checkpoint(graph: &mut Graph, key: &str, state: NodeId) -> NodeId {
        let epoch = str_key(graph, "epoch", Value::Int(3));
        let k = graph.add(Value::Str(key.into()));
        graph.add(Value::Dict(vec![epoch, (k, state)]))
    }

    fn native(graph: &mut Graph, interval: i64) -> NodeId {
        dict(
            graph,
            vec![
                ("scale", Value::Float(1024.0)),
                ("growth_factor", Value::Float(2.0)),
                ("backoff_factor", Value::Float(0.5)),
                ("growth_interval", Value::Int(interval)),
                ("_growth_tracker", Value::Int(2)),
            ],
        )
    }

    fn apex(graph: &mut Graph, scalers: &[(f64, i64)]) -> NodeId {
        let mut object = Object::new(Constructor::Reduce {
            callable: graph.add(Value::Global(Global::new("collections", "OrderedDict"))),
            args: graph.add(Value::Tuple(Vec::new())),
        });
        for (i, &(scale, unskipped)) in scalers.iter().enumerate() {
            let inner = dict(
                graph,
                vec![
                    ("loss_scale", Value::Float(scale)),
                    ("unskipped", Value::Int(unskipped)),
                ],
            );
            let key = graph.add(Value::Str(format!("loss_scaler{i}")));
            object.dict_items.push((key, inner));
        }
        graph.add(Value::Object(object))
    }

    fn keys_and_values(graph: &Graph, node: NodeId) -> Vec<(String, Value)> {
        graph
            .mapping(node)
            .unwrap_or(&[])
            .iter()
            .map(|&(k, v)| (graph.str(k).unwrap_or("?").to_owned(), graph.get(v).clone()))
            .collect()
    }

    #[test]
    fn apex_to_native_carries_scale_and_unskipped_with_apex_policy() {
        let mut g = Graph::new();
        let state = apex(&mut g, &[(32768.0, 417)]);
        let root = checkpoint(&mut g, "amp", state);
        let done = convert_amp(&mut g, root, AmpKind::Native, None).expect("convert");
        assert_eq!(done.carried, Some((32768.0, 417)));
        assert!(done.warnings.is_empty());
        let node = g.lookup(root, "amp").expect("amp");
        assert!(
            matches!(g.get(node), Value::Dict(_)),
            "a plain dict, as GradScaler saves"
        );
        assert_eq!(
            keys_and_values(&g, node),
            vec![
                ("scale".into(), Value::Float(32768.0)),
                ("growth_factor".into(), Value::Float(2.0)),
                ("backoff_factor".into(), Value::Float(0.5)),
                ("growth_interval".into(), Value::Int(2000)),
                ("_growth_tracker".into(), Value::Int(417)),
            ]
        );
        assert_eq!(g.int(g.lookup(root, "epoch").expect("epoch")), Some(3));
    }

    #[test]
    fn native_to_apex_builds_an_ordered_dict_with_float_scale() {
        let mut g = Graph::new();
        let state = native(&mut g, 2000);
        let root = checkpoint(&mut g, "scaler", state);
        convert_amp(&mut g, root, AmpKind::Apex, None).expect("convert");
        let node = g.lookup(root, "scaler").expect("scaler");
        assert_eq!(
            amp::parse(&g, node),
            Some(AmpState::Apex(vec![ApexScaler {
                index: 0,
                loss_scale: 1024.0,
                unskipped: 2
            }]))
        );
        let (global, _) = g.reduce_of_global(node).expect("OrderedDict()");
        assert!(global.is("collections", "OrderedDict"));
        let inner = g.lookup(node, "loss_scaler0").expect("loss_scaler0");
        assert_eq!(
            keys_and_values(&g, inner),
            vec![
                ("loss_scale".into(), Value::Float(1024.0)),
                ("unskipped".into(), Value::Int(2))
            ]
        );
    }

    #[test]
    fn native_to_apex_warns_about_a_policy_apex_cannot_hold() {
        let mut g = Graph::new();
        let state = native(&mut g, 100);
        let root = checkpoint(&mut g, "scaler", state);
        let done = convert_amp(&mut g, root, AmpKind::Apex, None).expect("convert");
        assert_eq!(done.warnings.len(), 1);
        assert!(
            done.warnings[0].contains("growth_interval 100"),
            "{:?}",
            done.warnings
        );
    }

    #[test]
    fn npu_adds_dynamic_and_native_drops_it() {
        let mut g = Graph::new();
        let state = native(&mut g, 2000);
        let root = checkpoint(&mut g, "amp_scaler", state);
        convert_amp(&mut g, root, AmpKind::Npu, None).expect("to npu");
        let node = g.lookup(root, "amp_scaler").expect("node");
        let fields = keys_and_values(&g, node);
        assert_eq!(fields.last(), Some(&("dynamic".into(), Value::Bool(true))));
        assert_eq!(fields.len(), 6);
        convert_amp(&mut g, root, AmpKind::Native, None).expect("back to native");
        assert!(matches!(amp::parse(&g, node), Some(AmpState::Native(_))));
        assert_eq!(keys_and_values(&g, node).len(), 5);
    }

    #[test]
    fn apex_native_apex_round_trip_is_identity() {
        let mut g = Graph::new();
        let state = apex(&mut g, &[(65536.0, 3)]);
        let root = checkpoint(&mut g, "amp", state);
        let before = amp::parse(&g, state);
        convert_amp(&mut g, root, AmpKind::Native, None).expect("to native");
        convert_amp(&mut g, root, AmpKind::Apex, None).expect("to apex");
        assert_eq!(amp::parse(&g, g.lookup(root, "amp").expect("amp")), before);
    }

    #[test]
    fn several_apex_scalers_need_a_choice() {
        let mut g = Graph::new();
        let state = apex(&mut g, &[(8.0, 1), (16.0, 2)]);
        let root = checkpoint(&mut g, "amp", state);
        let err = convert_amp(&mut g, root, AmpKind::Native, None).expect_err("ambiguous");
        let message = err.to_string();
        assert!(
            message.contains("loss_scaler0") && message.contains("loss_scaler1"),
            "{message}"
        );
        assert!(convert_amp(&mut g, root, AmpKind::Native, Some(7)).is_err());
        let done = convert_amp(&mut g, root, AmpKind::Native, Some(1)).expect("pick 1");
        assert_eq!(done.carried, Some((16.0, 2)));
    }

    #[test]
    fn disabled_scaler_is_an_error_and_untouched() {
        let mut g = Graph::new();
        let state = g.add(Value::Dict(Vec::new()));
        let root = checkpoint(&mut g, "scaler", state);
        let err = convert_amp(&mut g, root, AmpKind::Apex, None).expect_err("disabled");
        assert!(err.to_string().contains("disabled"), "{err}");
        assert_eq!(g.get(state), &Value::Dict(Vec::new()));
    }

    #[test]
    fn same_kind_is_a_no_op_and_scaler_needs_apex() {
        let mut g = Graph::new();
        let state = native(&mut g, 2000);
        let root = checkpoint(&mut g, "scaler", state);
        let before = g.get(state).clone();
        let done = convert_amp(&mut g, root, AmpKind::Native, None).expect("no-op");
        assert_eq!(done.carried, None);
        assert_eq!(g.get(state), &before);
        assert!(convert_amp(&mut g, root, AmpKind::Apex, Some(0)).is_err());
    }

    #[test]
    fn missing_state_is_an_error() {
        let mut g = Graph::new();
        let state = g.add(Value::Int(1));
        let root = checkpoint(&mut g, "model", state);
        assert!(convert_amp(&mut g, root, AmpKind::Native, None).is_err());
    }
}
