//! What Ascend's ATC needs from an ONNX file, checked on every export, and the `atc`
//! command line that compiles the result with a dynamic batch.
//!
//! The rules come from ATC's ONNX parser: one default-domain `opset_import` (more is error
//! E16005), a parser registered for `ai.onnx::<opset>::<op>` (else E16002), shapes that are
//! static apart from the batch, and no shape arithmetic on the batch.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use super::graph::Model;
use super::proto::{tensor_shape_proto::dimension::Value as Dim, type_proto, ValueInfoProto};
use super::write::header;
use super::{Batch, Extent, OnnxError};

/// Operators this exporter may emit, each registered by ATC's ONNX parser for every
/// default-domain opset from 9 to 13 (`Resize` and `Mod` from 10, `CumSum` from 11, where
/// ONNX defines them and the lowering refuses them below; checked against the parser's
/// table, [`super::cann::REGISTERED`]).
pub const ALLOWED_OPS: [&str; 68] = [
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "AveragePool",
    "BatchNormalization",
    "Ceil",
    "Clip",
    "Concat",
    "Conv",
    "ConvTranspose",
    "Cos",
    "Cosh",
    "CumSum",
    "Div",
    "Elu",
    "Erf",
    "Exp",
    "Flatten",
    "Floor",
    "Gemm",
    "GlobalAveragePool",
    "GRU",
    "HardSigmoid",
    "InstanceNormalization",
    "LRN",
    "LSTM",
    "LeakyRelu",
    "Log",
    "LogSoftmax",
    "MatMul",
    "Max",
    "MaxPool",
    "Min",
    "Mod",
    "Mul",
    "Neg",
    "PRelu",
    "Pad",
    "Pow",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceSum",
    "Relu",
    "Reshape",
    "Resize",
    "Round",
    "Sigmoid",
    "Sin",
    "Sinh",
    "Slice",
    "Softmax",
    "Softplus",
    "Split",
    "Sqrt",
    "Sub",
    "Tan",
    "Tanh",
    "Tile",
    "Transpose",
];

/// Operators on integer and bool tensors (token ids, masks, comparisons, indices), also
/// registered by ATC's ONNX parser for opsets 9–13 (`GatherElements` from 11, where ONNX
/// defines it and the lowering refuses it below). `Gather` only as a table lookup: its
/// data must be an initializer (an embedding), never a computed shape.
pub const TYPED_OPS: [&str; 15] = [
    "And",
    "ArgMax",
    "ArgMin",
    "Cast",
    "Equal",
    "Gather",
    "GatherElements",
    "Greater",
    "IsNaN",
    "Less",
    "Not",
    "Or",
    "TopK",
    "Where",
    "Xor",
];

/// Ops that compute shapes at run time; with a dynamic batch ATC cannot fold them.
const SHAPE_OPS: [&str; 5] = ["Shape", "Unsqueeze", "Squeeze", "ConstantOfShape", "Expand"];

/// The IR version each opset needs (`onnx.helper.find_min_ir_version_for`; what torch writes).
const IR_FOR_OPSET: [(i64, i64); 5] = [(9, 4), (10, 5), (11, 6), (12, 7), (13, 7)];

/// Checks `model` against ATC's rules; every violation found is reported at once.
pub fn validate(model: &Model, batch: &Batch) -> Result<(), OnnxError> {
    let mut bad = Vec::new();
    let head = header(model.opset);
    match head.opset_import.as_slice() {
        [only] if only.domain.as_deref().unwrap_or("").is_empty() => {
            let version = only.version.unwrap_or(0);
            match IR_FOR_OPSET.iter().find(|(o, _)| *o == version) {
                Some((_, ir)) if head.ir_version == Some(*ir) => {}
                Some((_, ir)) => bad.push(format!(
                    "opset {version} needs IR version {ir}, not {:?}",
                    head.ir_version
                )),
                None => bad.push(format!("opset {version} is outside ATC's 9–13")),
            }
        }
        imports => bad.push(format!(
            "exactly one opset_import in the default domain is allowed (ATC E16005), found {}",
            imports.len()
        )),
    }
    let graph = &model.graph;
    if graph.input.is_empty() || graph.output.is_empty() {
        bad.push("the graph needs an input and an output (ATC E16001)".into());
    }
    for info in &graph.input {
        check_io(info, batch, true, &mut bad);
    }
    for info in &graph.output {
        check_io(info, batch, false, &mut bad);
    }
    let mut defined: HashSet<&str> = graph
        .input
        .iter()
        .filter_map(|i| i.name.as_deref())
        .collect();
    defined.extend(model.initializers.iter().map(|i| i.name.as_str()));
    let initializers: HashSet<&str> = model.initializers.iter().map(|i| i.name.as_str()).collect();
    for node in &graph.node {
        let op = node.op_type.as_deref().unwrap_or("");
        let name = node.name.as_deref().unwrap_or("");
        if !node.domain.as_deref().unwrap_or("").is_empty() {
            bad.push(format!(
                "{name}: domain `{:?}` is not the default",
                node.domain
            ));
        }
        if op == "Identity" {
            bad.push(format!("{name}: Identity nodes are not allowed"));
        } else if SHAPE_OPS.contains(&op) {
            bad.push(format!("{name}: {op} computes shapes at run time, which ATC cannot do with a dynamic batch"));
        } else if op == "Gather"
            && !node
                .input
                .first()
                .is_some_and(|data| initializers.contains(data.as_str()))
        {
            bad.push(format!(
                "{name}: Gather reads a computed tensor; only a lookup in a constant table (an embedding) is allowed"
            ));
        } else if !ALLOWED_OPS.contains(&op) && !TYPED_OPS.contains(&op) {
            bad.push(format!(
                "{name}: {op} is not on ATC's operator list for opsets 9–13"
            ));
        }
        for input in node.input.iter().filter(|i| !i.is_empty()) {
            if !defined.contains(input.as_str()) {
                bad.push(format!(
                    "{name}: input `{input}` is not defined before it (graph not sorted)"
                ));
            }
        }
        for output in &node.output {
            if !defined.insert(output) {
                bad.push(format!("{name}: output `{output}` is assigned twice"));
            }
        }
    }
    for output in &graph.output {
        if !output.name.as_deref().is_some_and(|n| defined.contains(n)) {
            bad.push(format!("graph output {:?} is never computed", output.name));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(OnnxError::Atc { violations: bad })
    }
}

/// An input must be a tensor `[batch, fixed…]` (`--input_shape` gives ATC the batch as its
/// first size); an output carries the batch on one dimension, wherever the model puts it
/// (ATC infers the outputs' shapes per batch profile), every other dimension fixed or named.
fn check_io(info: &ValueInfoProto, batch: &Batch, input: bool, bad: &mut Vec<String>) {
    let name = info.name.as_deref().unwrap_or("");
    let Some(type_proto::Value::TensorType(tensor)) =
        info.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        bad.push(format!("`{name}` has no tensor type"));
        return;
    };
    let dims: Vec<Option<&Dim>> = tensor
        .shape
        .as_ref()
        .map(|s| s.dim.iter().map(|d| d.value.as_ref()).collect())
        .unwrap_or_default();
    if *batch == Batch::Static {
        if dims.iter().any(|d| matches!(d, Some(Dim::DimValue(0)))) {
            bad.push(format!(
                "`{name}`: it has a dimension of size 0 (an empty tensor), which ATC does not compile"
            ));
        } else if !dims
            .iter()
            .all(|d| matches!(d, Some(Dim::DimValue(n)) if *n > 0))
        {
            bad.push(format!(
                "`{name}`: a static export fixes every dimension, but {dims:?} are not all sizes"
            ));
        }
        return;
    }
    let is_batch = |d: &Option<&Dim>| match (d, batch) {
        (Some(Dim::DimParam(p)), Batch::Dynamic(want)) => p == want && !p.is_empty(),
        (Some(Dim::DimValue(n)), Batch::Fixed(want)) => *n > 0 && *n as u64 == *want,
        _ => false,
    };
    let at = if input {
        dims.first().filter(|d| is_batch(d)).map(|_| 0)
    } else {
        dims.iter().position(is_batch)
    };
    let Some(at) = at else {
        let what = if input {
            "first dimension"
        } else {
            "dimensions"
        };
        bad.push(format!(
            "`{name}`: the batch {batch:?} is not among its {what} ({:?})",
            if input {
                &dims[..dims.len().min(1)]
            } else {
                &dims[..]
            }
        ));
        return;
    };
    // Dynamic dimensions other than the batch are named (`dim_param`), compiled with
    // `--dynamic_dims` profiles.
    let others_ok = dims.iter().enumerate().all(|(i, d)| {
        i == at
            || match d {
                Some(Dim::DimValue(n)) => *n > 0,
                Some(Dim::DimParam(p)) => !p.is_empty(),
                None => false,
            }
    });
    let empty = dims.iter().any(|d| matches!(d, Some(Dim::DimValue(0))));
    if empty {
        bad.push(format!(
            "`{name}`: it has a dimension of size 0 (an empty tensor), which ATC does not compile: every dimension but the batch must be fixed at 1 or more, or a named dynamic dimension"
        ));
    } else if !others_ok {
        bad.push(format!(
            "`{name}`: every dimension but the batch must be fixed or a named dynamic dimension"
        ));
    }
}

/// The `atc` invocation that compiles an exported model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AtcCommand {
    /// The ONNX file (`--model`).
    pub model: PathBuf,
    /// Each graph input's name and per-sample sizes (without the batch; every size with
    /// [`Batch::Static`]), in order.
    pub inputs: Vec<(String, Vec<Extent>)>,
    /// How the batch dimension was exported.
    pub batch: Batch,
    /// Batch sizes for `--dynamic_batch_size` (dynamic batch only), or the batch's sizes in
    /// the `--dynamic_dims` profiles when other dimensions are dynamic too.
    pub profiles: Vec<u64>,
    /// The `--soc_version` to compile for.
    pub soc: String,
}

impl AtcCommand {
    /// For one image input of per-sample shape (C, H, W); the default profiles 1, 2, 4, 8.
    pub fn new(model: &Path, input_name: &str, input: [u64; 3], batch: Batch, soc: &str) -> Self {
        AtcCommand::for_inputs(
            model,
            vec![(input_name.to_owned(), Extent::all_fixed(&input))],
            batch,
            soc,
        )
    }

    /// For any inputs (token ids, masks, several tensors); the default profiles 1, 2, 4, 8.
    pub fn for_inputs(
        model: &Path,
        inputs: Vec<(String, Vec<Extent>)>,
        batch: Batch,
        soc: &str,
    ) -> Self {
        AtcCommand {
            model: model.to_owned(),
            inputs,
            batch,
            profiles: vec![1, 2, 4, 8],
            soc: soc.to_owned(),
        }
    }

    /// `NCHW` when every input is an image (C, H, W per sample), else `ND` (ATC wants one
    /// format for all inputs).
    fn format(&self) -> &'static str {
        // An image is C, H, W after the batch; a static input's shape has no batch.
        let image = match self.batch {
            Batch::Static => 4,
            Batch::Dynamic(_) | Batch::Fixed(_) => 3,
        };
        if self.inputs.iter().all(|(_, shape)| shape.len() == image) && self.dynamic().is_empty() {
            "NCHW"
        } else {
            "ND"
        }
    }

    /// The dynamic dimensions other than the batch, each once, in order of appearance.
    fn dynamic(&self) -> Vec<&Extent> {
        let mut found: Vec<&Extent> = Vec::new();
        for extent in self.inputs.iter().flat_map(|(_, shape)| shape) {
            if matches!(extent, Extent::Dynamic { .. }) && !found.contains(&extent) {
                found.push(extent);
            }
        }
        found
    }

    /// The axes the `--dynamic_dims` profiles vary (the batch first when dynamic, then each
    /// dynamic dimension) with their sizes ([`profile_sizes`]), thinned until their
    /// combinations number at most [`MAX_PROFILES`]: the axis with the most sizes loses its
    /// second smallest (its smallest and largest stay).
    fn profile_axes(&self) -> Vec<(Option<&Extent>, Vec<u64>)> {
        let batch: Vec<u64> = match self.batch {
            Batch::Dynamic(_) => self.profiles.clone(),
            Batch::Fixed(_) | Batch::Static => Vec::new(),
        };
        let mut axes: Vec<(Option<&Extent>, Vec<u64>)> = std::iter::once((None, batch))
            .filter(|(_, sizes)| !sizes.is_empty())
            .chain(
                self.dynamic()
                    .into_iter()
                    .map(|e| (Some(e), profile_sizes(e))),
            )
            .collect();
        while axes.iter().map(|(_, s)| s.len()).product::<usize>() > MAX_PROFILES {
            let Some((_, sizes)) = axes
                .iter_mut()
                .filter(|(_, s)| s.len() > 2)
                .max_by_key(|(_, s)| s.len())
            else {
                break;
            };
            sizes.remove(1);
        }
        axes
    }

    /// `--dynamic_dims` profiles: every combination of the [`AtcCommand::profile_axes`]
    /// sizes, each listing the size of every `-1` of `--input_shape` in order.
    fn gears(&self) -> Vec<String> {
        let mut gears: Vec<Vec<(Option<&Extent>, u64)>> = vec![Vec::new()];
        for (extent, sizes) in self.profile_axes() {
            gears = gears
                .iter()
                .flat_map(|gear| {
                    sizes.iter().map(move |&n| {
                        let mut next = gear.clone();
                        next.push((extent, n));
                        next
                    })
                })
                .collect();
        }
        let size_of = |gear: &[(Option<&Extent>, u64)], extent: Option<&Extent>| {
            gear.iter()
                .find(|(e, _)| *e == extent)
                .map_or(0, |(_, n)| *n)
        };
        gears
            .iter()
            .map(|gear| {
                let mut values = Vec::new();
                for (_, shape) in &self.inputs {
                    if matches!(self.batch, Batch::Dynamic(_)) {
                        values.push(size_of(gear, None).to_string());
                    }
                    for extent in shape.iter().filter(|e| matches!(e, Extent::Dynamic { .. })) {
                        values.push(size_of(gear, Some(extent)).to_string());
                    }
                }
                values.join(",")
            })
            .collect()
    }
}

/// ATC takes 2 to 100 `--dynamic_dims` profiles (and `--dynamic_batch_size` sizes).
const MAX_PROFILES: usize = 100;

/// The sizes of a dynamic dimension compiled as ATC profiles: its maximum and the halves
/// below it down to an eighth (not below its minimum), or without a maximum 16 (or its
/// minimum) and three doublings.
fn profile_sizes(extent: &Extent) -> Vec<u64> {
    let Extent::Dynamic { min, max, .. } = extent else {
        return Vec::new();
    };
    let mut sizes: Vec<u64> = match max {
        Some(max) => [8, 4, 2, 1].iter().map(|d| (max / d).max(*min)).collect(),
        None => {
            let start = (*min).max(16);
            (0..4).map(|k| start << k).collect()
        }
    };
    sizes.dedup();
    sizes
}

impl fmt::Display for AtcCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let model = self.model.to_string_lossy();
        let output = model.strip_suffix(".onnx").unwrap_or(&model);
        let n = match &self.batch {
            Batch::Dynamic(_) => "-1".to_owned(),
            Batch::Fixed(n) => n.to_string(),
            Batch::Static => String::new(),
        };
        // One profile is no dynamic shape to ATC (it takes 2 to 100): its sizes are written
        // into `--input_shape` instead of `-1`s.
        let gears = if self.dynamic().is_empty() {
            Vec::new()
        } else {
            self.gears()
        };
        let mut single = match gears.as_slice() {
            [only] => only.split(',').map(str::to_owned).collect(),
            _ => Vec::new(),
        }
        .into_iter();
        let mut dim = |fixed: Option<String>| {
            fixed
                .or_else(|| single.next())
                .unwrap_or_else(|| "-1".to_owned())
        };
        let shapes: Vec<String> = self
            .inputs
            .iter()
            .map(|(name, shape)| {
                let batch = match self.batch {
                    Batch::Fixed(_) => Some(Some(n.clone())),
                    Batch::Dynamic(_) if gears.len() == 1 => Some(None),
                    Batch::Dynamic(_) => Some(Some(n.clone())),
                    Batch::Static => None,
                };
                let dims: Vec<String> = batch
                    .map(&mut dim)
                    .into_iter()
                    .chain(shape.iter().map(|e| match e {
                        Extent::Fixed(d) => dim(Some(d.to_string())),
                        Extent::Dynamic { .. } => dim(None),
                    }))
                    .collect();
                format!("{name}:{}", dims.join(","))
            })
            .collect();
        write!(
            f,
            "atc {} --framework=5 {} --input_format={} {}",
            shell_word(&format!("--model={model}")),
            shell_word(&format!("--output={output}")),
            self.format(),
            quoted("--input_shape", &shapes.join(";")),
        )?;
        if gears.len() > 1 {
            write!(f, " --dynamic_dims=\"{}\"", gears.join(";"))?;
        } else if gears.is_empty() && matches!(self.batch, Batch::Dynamic(_)) {
            let sizes: Vec<String> = self.profiles.iter().map(u64::to_string).collect();
            write!(f, " --dynamic_batch_size=\"{}\"", sizes.join(","))?;
        }
        write!(f, " {}", shell_word(&format!("--soc_version={}", self.soc)))
    }
}

fn is_plain(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c))
}

/// `text` as one POSIX shell word.
fn shell_word(text: &str) -> String {
    if is_plain(text) && !text.is_empty() {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// `--flag="value"` as ATC's documentation writes it (`;` separates inputs and is safe
/// inside double quotes), or single-quoted if `value` needs it.
fn quoted(flag: &str, value: &str) -> String {
    if value.split(';').all(is_plain) {
        format!("{flag}=\"{value}\"")
    } else {
        shell_word(&format!("{flag}={value}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_for_dynamic_and_fixed_batch() {
        let cmd = AtcCommand::new(
            Path::new("out/r50.onnx"),
            "input",
            [3, 224, 224],
            Batch::Dynamic("batch".into()),
            "Ascend310P3",
        );
        assert_eq!(
            cmd.to_string(),
            "atc --model=out/r50.onnx --framework=5 --output=out/r50 --input_format=NCHW \
             --input_shape=\"input:-1,3,224,224\" --dynamic_batch_size=\"1,2,4,8\" --soc_version=Ascend310P3"
        );
        let cmd = AtcCommand::new(
            Path::new("my model.onnx"),
            "in",
            [1, 28, 28],
            Batch::Fixed(4),
            "Ascend910B3",
        );
        assert_eq!(
            cmd.to_string(),
            "atc '--model=my model.onnx' --framework=5 '--output=my model' --input_format=NCHW \
             --input_shape=\"in:4,1,28,28\" --soc_version=Ascend910B3"
        );
    }

    #[test]
    fn an_output_may_carry_the_batch_on_any_dimension_an_input_only_first() {
        use crate::graph::GraphBuilder;
        use crate::Opset;
        let batch = Batch::Dynamic("batch".into());
        let mut g = GraphBuilder::new(Opset::default(), batch.clone());
        let x = g.input("x", vec![4, 5]).unwrap();
        let y = g
            .node(
                "Relu",
                "",
                vec![x.name().to_owned()],
                vec![],
                vec![vec![4, 5]],
            )
            .remove(0);
        let mut model = g.finish_placed(&[(y, "y".into(), 2)]).unwrap();
        assert!(validate(&model, &batch).is_ok());
        // The same declaration on the input is refused: ATC reads the batch from the
        // first size of `--input_shape`.
        model.graph.input[0] = model.graph.output[0].clone();
        model.graph.input[0].name = Some("x".into());
        let err = validate(&model, &batch).unwrap_err().to_string();
        assert!(err.contains("`x`: the batch"), "{err}");
        assert!(validate(&model, &Batch::Fixed(3)).is_err());
    }

    #[test]
    fn gather_is_allowed_only_as_a_table_lookup() {
        use crate::elem::ElemType;
        use crate::graph::{Attr, GraphBuilder};
        use crate::Opset;
        let batch = Batch::Dynamic("batch".into());
        // Gather from `table` (an initializer) or from the input `x`.
        for (data, allowed) in [("table", true), ("x", false)] {
            let mut g = GraphBuilder::new(Opset::default(), batch.clone());
            g.input("x", vec![10, 3]).unwrap();
            let ids = g.typed_input("ids", vec![4], ElemType::Int64).unwrap();
            g.weight("table", vec![10, 3], &[0.0; 30]).unwrap();
            let rows = g
                .node(
                    "Gather",
                    "",
                    vec![data.to_owned(), ids.name().to_owned()],
                    vec![("axis", Attr::Int(0))],
                    vec![vec![4, 3]],
                )
                .remove(0);
            let model = g.finish(&rows, "rows").unwrap();
            match validate(&model, &batch) {
                Ok(()) => assert!(allowed),
                Err(e) => {
                    assert!(!allowed);
                    assert!(
                        e.to_string().contains("Gather reads a computed tensor"),
                        "{e}"
                    );
                }
            }
        }
    }

    #[test]
    fn token_inputs_compile_in_nd_format_with_every_input_listed() {
        let cmd = AtcCommand::for_inputs(
            Path::new("bert.onnx"),
            vec![
                ("ids".into(), Extent::all_fixed(&[128])),
                ("mask".into(), Extent::all_fixed(&[128])),
            ],
            Batch::Dynamic("batch".into()),
            "Ascend310P3",
        );
        assert_eq!(
            cmd.to_string(),
            "atc --model=bert.onnx --framework=5 --output=bert --input_format=ND \
             --input_shape=\"ids:-1,128;mask:-1,128\" --dynamic_batch_size=\"1,2,4,8\" --soc_version=Ascend310P3"
        );
    }

    #[test]
    fn a_dynamic_sequence_compiles_with_dynamic_dims_profiles() {
        let seq = Extent::Dynamic {
            name: "s27".into(),
            min: 2,
            max: Some(64),
        };
        let cmd = AtcCommand::for_inputs(
            Path::new("bert.onnx"),
            vec![
                ("ids".into(), vec![seq.clone()]),
                ("mask".into(), vec![seq]),
            ],
            Batch::Dynamic("batch".into()),
            "Ascend310P3",
        );
        let text = cmd.to_string();
        assert!(
            text.contains("--input_format=ND --input_shape=\"ids:-1,-1;mask:-1,-1\""),
            "{text}"
        );
        assert!(!text.contains("--dynamic_batch_size"), "{text}");
        let dims = text
            .split("--dynamic_dims=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        let gears: Vec<&str> = dims.split(';').collect();
        assert_eq!(gears.len(), 16, "4 batch sizes times 4 lengths: {dims}");
        assert_eq!(gears[0], "1,8,1,8");
        assert_eq!(gears[15], "8,64,8,64");
    }

    fn dims_of(text: &str) -> Option<Vec<String>> {
        let dims = text.split("--dynamic_dims=\"").nth(1)?.split('"').next()?;
        Some(dims.split(';').map(str::to_owned).collect())
    }

    #[test]
    fn dynamic_dims_take_2_to_100_profiles_and_never_a_dynamic_batch_size() {
        let dynamic = |name: &str, max| Extent::Dynamic {
            name: name.into(),
            min: 1,
            max: Some(max),
        };
        // Batch × three dynamic axes: 4⁴ = 256 combinations, thinned to at most 100.
        let cmd = AtcCommand::for_inputs(
            Path::new("m.onnx"),
            vec![(
                "x".into(),
                vec![dynamic("c", 64), dynamic("h", 64), dynamic("w", 64)],
            )],
            Batch::Dynamic("batch".into()),
            "Ascend310P3",
        );
        let text = cmd.to_string();
        let gears = dims_of(&text).unwrap();
        assert!((2..=MAX_PROFILES).contains(&gears.len()), "{}", gears.len());
        assert!(gears.contains(&"8,64,64,64".to_owned()) && gears.contains(&"1,8,8,8".to_owned()));
        assert!(!text.contains("--dynamic_batch_size"), "{text}");
        // A fixed batch and one axis whose only size is 16: one profile, which ATC does
        // not take: the size goes into the shape and no dynamic flag is written.
        let cmd = AtcCommand::for_inputs(
            Path::new("m.onnx"),
            vec![(
                "x".into(),
                vec![
                    Extent::Fixed(3),
                    Extent::Dynamic {
                        name: "h".into(),
                        min: 16,
                        max: Some(16),
                    },
                ],
            )],
            Batch::Fixed(2),
            "Ascend310P3",
        );
        let text = cmd.to_string();
        assert!(text.contains("--input_shape=\"x:2,3,16\""), "{text}");
        assert!(!text.contains("--dynamic"), "{text}");
    }
}
